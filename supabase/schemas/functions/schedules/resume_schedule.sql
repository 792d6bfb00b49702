-- Resumes a paused schedule: ticks from now on start runs (the ticks while it was paused
-- are not run; backfill_schedule starts them on purpose). Returns the schedule.
create or replace function switchyard.resume_schedule(name text)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
begin
  return switchyard.update_schedule(resume_schedule.name, enabled => true);
end
$$;
