-- An integer option of a shape (maxAttempts, baseDelay, timeout, ...) within [min, max]; absent
-- or null gives `fallback`, or is refused when there is none (22023 option_missing,
-- integer_range). The value it echoes is clipped.
create or replace function switchyard._int_option(
  obj jsonb, key text, what text, min_value int, max_value int, nullable boolean
)
returns int
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    if nullable then
      return null;
    end if;
    perform switchyard._refuse('22023', 'option_missing', left(key, 200), null,
      format('%s %s is missing', left(what, 200), left(key, 80)),
      context => jsonb_build_object('context', left(what, 200)));
  end if;
  if jsonb_typeof(v) <> 'number' or (v::text)::numeric <> trunc((v::text)::numeric)
     or (v::text)::numeric < min_value or (v::text)::numeric > max_value then
    perform switchyard._refuse('22023', 'integer_range', left(key, 200), v::text, format(
      '%s %s %s is invalid: use an integer from %s to %s', left(what, 200), left(key, 80),
      left(v::text, 80), min_value, max_value),
      context => jsonb_build_object('min', min_value, 'max', max_value, 'context', left(what, 200)));
  end if;
  return (v::text)::int;
end
$$;
