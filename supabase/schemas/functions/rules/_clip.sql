-- A text value for a message: JSON-quoted; a value longer than `n` characters is cut there and
-- followed by its length, so a refusal names the value without echoing a megabyte of it.
create or replace function switchyard._clip(value text, n int default 80)
returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when value is null then 'null'
    when char_length(value) <= n then to_json(value)::text
    else to_json(left(value, n))::text || format('... (%s characters)', char_length(value))
  end
$$;
