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
    raise exception using errcode = '22023', message = format(
      '%s %s %s is invalid: use one of %s', what, key, v::text, array_to_string(choices, ', ')),
      detail = jsonb_build_object(
        'rule', 'option_choice', 'argument', key, 'value', left(v::text, 200),
        'choices', to_jsonb(choices), 'context', what)::text;
  end if;
  return v #>> '{}';
end
$$;
