-- Deletes a running task's checkpoint (ctx.clearCheckpoint;
-- docs/design/worker.md#worker-states-and-parts,
-- "Checkpoints"): only while `attempt` holds the task (started, that attempt), else 55000
-- attempt_not_current and nothing changes, as checkpoint_task. The next attempt's ctx.resume()
-- reads nothing, so a handler that finds its saved state bad can start over. Returns whether
-- there was one.
create or replace function switchyard.clear_checkpoint(
  run_id uuid, step_slug text, task_index int, attempt int
)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
begin
  select * into task from switchyard.step_tasks t
   where t.run_id = clear_checkpoint.run_id and t.step_slug = clear_checkpoint.step_slug
     and t.task_index = clear_checkpoint.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    perform switchyard._refuse('55000', 'attempt_not_current', 'attempt', attempt::text, format(
      'clear checkpoint: attempt %s of step %s (task %s) of run %s does not hold the task (%s)',
      attempt, switchyard._clip(step_slug), task_index, run_id,
      case when not found then 'no such task'
           else format('%s, attempt %s', task.status, task.attempts_count) end));
  end if;
  delete from switchyard.task_checkpoints c
   where c.run_id = clear_checkpoint.run_id and c.step_slug = clear_checkpoint.step_slug
     and c.task_index = clear_checkpoint.task_index;
  return found;
end
$$;
