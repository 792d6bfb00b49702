-- A text option of a shape that must be one of `choices` (whenUnmet, whenExhausted); absent or
-- null gives `fallback`. Refuses another value naming the choices (22023 option_choice).
create or replace function switchyard._choice_option(
  obj jsonb, key text, what text, choices text[], fallback text
)
returns text
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
  if jsonb_typeof(v) <> 'string' or not ((v #>> '{}') = any (choices)) then
    perform switchyard._refuse('22023', 'option_choice', key, v::text, format(
      '%s %s %s is invalid: use one of %s', what, key, v::text, array_to_string(choices, ', ')),
      context => jsonb_build_object('choices', to_jsonb(choices), 'context', what));
  end if;
  return v #>> '{}';
end
$$;
