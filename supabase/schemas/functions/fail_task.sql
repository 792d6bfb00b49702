-- A failed attempt: retried after min(base_delay * 2^(attempt - 1), max_delay) seconds
-- while attempts remain (the same message becomes visible again), else the run fails, or with
-- whenExhausted 'skip' the step is skipped (_exhaust_task).
-- The exponent stops at 40: base_delay <= 86400 < 2^17, so the product stays below 2^57
-- (no bigint overflow at any attempt), and 2^40 s is beyond every accepted max_delay
-- (at most 604800), so the cap is unchanged by it.
create or replace function switchyard.fail_task(
  run_id uuid, step_slug text, attempt int, error_message text, task_index int default 0
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  run_status text;
  delay_seconds int;
  error_text text := left(coalesce(error_message, 'unknown error'), 4000);
begin
  select * into task from switchyard.step_tasks t
   where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
     and t.task_index = fail_task.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    return 'ignored';
  end if;
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if task.attempts_count < task.max_attempts and run_status = 'started' then
    delay_seconds := least(task.base_delay::bigint * (1::bigint << least(task.attempts_count - 1, 40)),
                           task.max_delay)::int;
    update switchyard.step_tasks t
       set status = 'queued', error = error_text, worker_id = null
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.set_vt(task.queue_name, task.message_id, delay_seconds);
    return 'retrying';
  end if;
  return switchyard._exhaust_task(task, error_text);
end
$$;
