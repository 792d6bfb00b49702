-- Resumes a paused schedule: ticks from now on start runs (the ticks while it was paused
-- are not run; backfill_schedule starts them on purpose). Returns the schedule.
create or replace function switchyard.resume_schedule(name text)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.schedules x
     set enabled = true, updated_at = now(),
         checked_until = case when x.enabled then x.checked_until
                              else greatest(x.checked_until, now()) end
   where x.name = resume_schedule.name;
  if not found then
    raise exception using errcode = '22023', message = format(
      'unknown schedule %s', coalesce(switchyard._clip(name), 'null')),
      detail = jsonb_build_object('rule', 'schedule_unknown', 'argument', 'name',
                                  'value', left(name, 200))::text;
  end if;
  return switchyard._schedule_json(name);
end
$$;
