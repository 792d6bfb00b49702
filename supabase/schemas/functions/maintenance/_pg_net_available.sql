-- Whether pg_net is there to send the keep-alive's wake requests (net.http_post): the
-- keep-alive and doctor report a missing pg_net instead of failing on it.
create or replace function switchyard._pg_net_available()
returns boolean
language sql
stable
set search_path = ''
as $$
  select exists (
    select 1 from pg_catalog.pg_proc p
      join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'net' and p.proname = 'http_post')
$$;
