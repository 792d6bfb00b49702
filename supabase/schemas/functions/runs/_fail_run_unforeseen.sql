-- Fails a started run for an error no rule of the SQL core foresaw (a bug, a value that got past
-- every check), raised while a tick or a completion worked on that run alone: the run fails
-- naming what was being done, the error and its SQLSTATE, and its queued messages are
-- archived, so the rest of the tick or the completion of a valid output goes on (docs/
-- docs/design/waits.md, "One run's bad value is that run's problem"). Step states are left as
-- they were: retry_run starts the run again where it stopped once the cause is fixed. The
-- caller's subtransaction that raised is rolled back; the run's row lock is taken again here.
-- Returns whether the run was failed (false: it is no longer started).
create or replace function switchyard._fail_run_unforeseen(
  run uuid, what text, err_state text, err_message text
)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
begin
  perform 1 from switchyard.runs r where r.run_id = run and r.status = 'started' for update;
  if not found then
    return false;
  end if;
  update switchyard.runs r
     set status = 'failed', failed_at = switchyard.clock_now(),
         error = format('%s: %s (SQLSTATE %s); only this run failed: retry it once the cause is '
                        'fixed', what, switchyard._clip(err_message, 500), err_state)
   where r.run_id = run;
  perform switchyard._archive_queued(run);
  return true;
end
$$;
