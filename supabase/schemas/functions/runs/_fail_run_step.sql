-- Fails a step and its run without a task attempt (an unmet condition with whenUnmet
-- 'fail'); the run's queued messages are archived.
create or replace function switchyard._fail_run_step(run uuid, step text, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'failed', failed_at = switchyard.clock_now(), wait_due = null
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.runs r
     set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
   where r.run_id = run and r.status = 'started';
  perform switchyard._archive_queued(run);
end
$$;
