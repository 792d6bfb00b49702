-- Raises the refusal of a schedule name that names no schedule (22023 schedule_unknown).
create or replace function switchyard._refuse_unknown_schedule(name text)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  perform switchyard._refuse('22023', 'schedule_unknown', 'name', name, format(
    'unknown schedule %s', coalesce(switchyard._clip(name), 'null')));
end
$$;
