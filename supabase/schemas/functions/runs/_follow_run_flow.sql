-- Puts a queued task of a moved run onto its run's version (docs/design/rerun.md). A task
-- names the version that queued it; move_run moves a run's queued tasks at once and leaves a
-- running one naming the version its worker runs (drain_status counts it there until it ends).
-- When such a task is queued again — a retry (fail_task_with), a hand-back (release_tasks), a
-- stall (recover_stalled), retry_run, resume_run, or a move after one of those — it follows the run: it names
-- the run's version and, when its step has another queue there, its message is archived and sent
-- again on that queue `delay` seconds on, so only the new version's workers claim it. The caller
-- holds the task; the run is held here (for share: a move in flight is waited for, and its
-- version read once it committed; the caller's order, task then run, is complete_tasks'). Nothing happens to a task that is not queued or that names its
-- run's version already, so a caller may call it for any task it just queued.
create or replace function switchyard._follow_run_flow(
  run uuid, step text, idx int, delay int
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  task record;
  placed record;
  msg_id bigint;
begin
  select t.queue_name, t.message_id, t.flow_slug, r.flow_slug as run_flow, r.priority
    into task
    from switchyard.step_tasks t
    join switchyard.runs r on r.run_id = t.run_id
   where t.run_id = run and t.step_slug = step and t.task_index = idx and t.status = 'queued'
     for share of r;
  if not found or task.flow_slug = task.run_flow then
    return;
  end if;
  select st.queue_name, st.concurrency_limit into placed
    from switchyard.steps st where st.flow_slug = task.run_flow and st.step_slug = step;
  if placed.queue_name is distinct from task.queue_name then
    perform pgmq.archive(task.queue_name, task.message_id);
    select s into msg_id from pgmq.send(
      placed.queue_name,
      switchyard._task_message(
        run, task.run_flow, step, nullif(idx, 0), task.priority, delay,
        case when placed.concurrency_limit is not null
             then switchyard._concurrency_key(run, task.run_flow, step, idx) end),
      greatest(coalesce(delay, 0), 0)) s;
    update switchyard.step_tasks t
       set flow_slug = task.run_flow, queue_name = placed.queue_name, message_id = msg_id
     where t.run_id = run and t.step_slug = step and t.task_index = idx;
  else
    update switchyard.step_tasks t set flow_slug = task.run_flow
     where t.run_id = run and t.step_slug = step and t.task_index = idx;
  end if;
end
$$;
