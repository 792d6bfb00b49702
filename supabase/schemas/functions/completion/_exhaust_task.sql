-- A task that used its last attempt: with the step's whenExhausted 'skip' or
-- 'skip-cascade' and the run still started, the task fails, the step is skipped (with
-- 'skip-cascade' its dependents too) and the run goes on without them ('skipped'); with
-- 'pause' and the run still started, the task fails, its step stays started and the run pauses
-- for an operator (_pause_run; resume_run queues the task again: 'paused'); else the run fails
-- ('failed').
create or replace function switchyard._exhaust_task(task switchyard.step_tasks, error_text text)
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  exhausted text;
  run_status text;
  q record;
begin
  select st.when_exhausted into exhausted from switchyard.steps st
   where st.flow_slug = task.flow_slug and st.step_slug = task.step_slug;
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if exhausted in ('skip', 'skip-cascade') and run_status = 'started' then
    update switchyard.step_tasks t
       set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    -- A map step's other elements are skipped with it: their messages are archived and a
    -- late answer from one still running is not accepted (its task is no longer started).
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from switchyard.step_tasks t
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.status in ('queued', 'started')
       group by t.queue_name order by t.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;
    update switchyard.step_tasks t
       set status = 'skipped'
     where t.run_id = task.run_id and t.step_slug = task.step_slug
       and t.status in ('queued', 'started');
    -- 'skip-cascade': every step that depends on it, transitively, is skipped too.
    perform switchyard._skip_step(task.run_id, task.flow_slug, task.step_slug, format(
      'whenExhausted %s: failed after %s attempt(s): %s', exhausted, task.attempts_count,
      error_text), exhausted = 'skip-cascade');
    perform switchyard._start_ready_steps(task.run_id);
    perform switchyard._complete_run_if_done(task.run_id);
    return 'skipped';
  end if;
  if exhausted = 'pause' and run_status = 'started' then
    update switchyard.step_tasks t
       set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    perform switchyard._pause_run(task.run_id, format(
      'whenExhausted pause: step %s%s failed after %s attempt(s): %s', to_json(task.step_slug)::text,
      case when task.task_index > 0 then format(' element %s', task.task_index) else '' end,
      task.attempts_count, error_text), 'whenExhausted');
    return 'paused';
  end if;
  perform switchyard._fail_run(task, error_text);
  return 'failed';
end
$$;
