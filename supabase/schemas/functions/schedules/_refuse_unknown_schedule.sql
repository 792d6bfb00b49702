-- Raises the refusal of a schedule name that names no schedule (22023 schedule_unknown).
create or replace function switchyard._refuse_unknown_schedule(name text)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  raise exception using errcode = '22023', message = format(
    'unknown schedule %s', coalesce(switchyard._clip(name), 'null')),
    detail = jsonb_build_object('rule', 'schedule_unknown', 'argument', 'name',
                                'value', left(name, 200))::text;
end
$$;
