-- The origin (scheme://host[:port], lower-cased) of a base URL that base_url_problem accepts.
create or replace function switchyard._url_origin(url text)
returns text
language sql
immutable
set search_path = ''
as $$
  select lower(substring(url from '^https?://[^/]+'))
$$;
