-- Raises a refusal of the SQL core (docs/design/errors.md, the SQL error contract): SQLSTATE
-- `code` (22023, 23505, 42501, 55000 or PT429), `message` for people (it names the value and the
-- rule), and the DETAIL callers map by: a JSON object with `rule`, `argument` and `value` (cut to
-- 200 characters, or null) and `context`'s fields besides; `hint` when given. The one place that
-- builds a refusal's detail, so every refusal carries the same fields. Never returns. Volatile, so
-- a call with constant arguments is never evaluated while a statement is planned.
create or replace function switchyard._refuse(
  code text, rule text, argument text, value text, message text,
  context jsonb default '{}', hint text default null
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  detail text := (jsonb_build_object('rule', _refuse.rule, 'argument', _refuse.argument,
                                     'value', left(_refuse.value, 200))
                  || coalesce(_refuse.context, '{}'))::text;
begin
  if _refuse.hint is null then
    raise exception using errcode = _refuse.code, message = _refuse.message, detail = detail;
  end if;
  raise exception using errcode = _refuse.code, message = _refuse.message, detail = detail,
    hint = _refuse.hint;
end
$$;
