-- Saves a running task's checkpoint (ctx.checkpoint; docs/design/worker.md#worker-states-and-parts,
-- "Checkpoints"):
-- only while `attempt` holds the task (started, that attempt), else 55000 attempt_not_current
-- and nothing changes. The state is at most max_checkpoint_bytes() of JSON text (22023
-- checkpoint_too_large, naming the size and the limit). The task's message stays hidden for its
-- timeout from now, so a handler that checkpoints is not taken over while it works. Returns the
-- state's size in bytes.
create or replace function switchyard.checkpoint_task(
  run_id uuid, step_slug text, task_index int, attempt int, state jsonb
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  size int := octet_length(state::text);
begin
  if state is null then
    perform switchyard._refuse('22023', 'checkpoint_null', 'state', null,
      'checkpoint: the state is null: give a JSON value');
  end if;
  if size > switchyard.max_checkpoint_bytes() then
    perform switchyard._refuse('22023', 'checkpoint_too_large', 'state', state::text, format(
      'checkpoint of step %s is %s bytes of JSON, over the limit of %s bytes: checkpoint a '
      'position (a cursor, counters), not the data', switchyard._clip(step_slug), size,
      switchyard.max_checkpoint_bytes()),
      context => jsonb_build_object('size', size, 'limit', switchyard.max_checkpoint_bytes()));
  end if;
  select * into task from switchyard.step_tasks t
   where t.run_id = checkpoint_task.run_id and t.step_slug = checkpoint_task.step_slug
     and t.task_index = checkpoint_task.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    perform switchyard._refuse('55000', 'attempt_not_current', 'attempt', attempt::text, format(
      'checkpoint: attempt %s of step %s (task %s) of run %s does not hold the task (%s)',
      attempt, switchyard._clip(step_slug), task_index, run_id,
      case when not found then 'no such task'
           else format('%s, attempt %s', task.status, task.attempts_count) end));
  end if;
  insert into switchyard.task_checkpoints as c (run_id, step_slug, task_index, state, attempt)
  values (checkpoint_task.run_id, checkpoint_task.step_slug, checkpoint_task.task_index, state,
          attempt)
  on conflict on constraint task_checkpoints_pkey do update
    set state = excluded.state, attempt = excluded.attempt, saved_at = switchyard.clock_now();
  perform pgmq.set_vt(task.queue_name, task.message_id, task.timeout);
  return size;
end
$$;
