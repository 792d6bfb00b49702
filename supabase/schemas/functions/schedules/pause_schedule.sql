-- Pauses a schedule: no tick starts a run until resume_schedule. Ticks while paused are
-- not run later (resuming looks at ticks from then on). Returns the schedule.
create or replace function switchyard.pause_schedule(name text)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
begin
  return switchyard.update_schedule(pause_schedule.name, enabled => false);
end
$$;
