-- Final failure: the task, its step and its run fail, and the run's queued messages are
-- archived. A step of a cancelled run stays cancelled, and the run too (only a started run
-- fails). The run is locked by its key and its status tested in code
-- (docs/design/claim.md#planner-settings).
create or replace function switchyard._fail_run(task switchyard.step_tasks, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  run_status text;
begin
  update switchyard.step_tasks t
     set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
   where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
  perform pgmq.archive(task.queue_name, task.message_id);
  update switchyard.step_states ss
     set status = 'failed', failed_at = switchyard.clock_now(), wait_due = null
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug and ss.status <> 'cancelled';
  -- The run by key (locked), then its status: a status condition in the update let a plan
  -- made with stale statistics read every started run through runs_flow_started
  -- (docs/design/claim.md#planner-settings).
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if run_status = 'started' then
    update switchyard.runs r
       set status = 'failed', failed_at = switchyard.clock_now(),
           error = format('step %s failed after %s attempt(s): %s', task.step_slug, task.attempts_count, error_text)
     where r.run_id = task.run_id;
  end if;
  -- The run's other queued messages (a map step: its other elements), by key and filtered
  -- afterwards, one archive per queue (_archive_queued).
  perform switchyard._archive_queued(task.run_id);
end
$$;
