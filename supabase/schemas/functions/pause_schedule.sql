-- Pauses a schedule: no tick starts a run until resume_schedule. Ticks while paused are
-- not run later (resuming looks at ticks from then on). Returns the schedule.
create or replace function switchyard.pause_schedule(name text)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.schedules x
     set enabled = false, updated_at = now(),
         checked_until = case when x.enabled then x.checked_until
                              else greatest(x.checked_until, now()) end
   where x.name = pause_schedule.name;
  if not found then
    raise exception using errcode = '22023', message = format(
      'unknown schedule %s', coalesce(switchyard._clip(name), 'null')),
      detail = jsonb_build_object('rule', 'schedule_unknown', 'argument', 'name',
                                  'value', left(name, 200))::text;
  end if;
  return switchyard._schedule_json(name);
end
$$;
