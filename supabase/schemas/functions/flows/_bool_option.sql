-- A boolean option of a shape (the flow's events): absent or JSON null is the default.
create or replace function switchyard._bool_option(obj jsonb, key text, what text, fallback boolean)
returns boolean
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    return fallback;
  end if;
  if jsonb_typeof(v) <> 'boolean' then
    perform switchyard._refuse('22023', 'boolean', left(key, 200), v::text, format(
      '%s %s %s is invalid: use true or false', left(what, 200), left(key, 80), left(v::text, 80)),
      context => jsonb_build_object('context', left(what, 200)));
  end if;
  return v::text::boolean;
end
$$;
