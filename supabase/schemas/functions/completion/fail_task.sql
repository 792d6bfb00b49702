-- A failed attempt: retried after min(base_delay * 2^(attempt - 1), max_delay) seconds
-- while attempts remain (the same message becomes visible again), else the run fails, or with
-- whenExhausted 'skip' the step is skipped (_exhaust_task). The signature released runtimes
-- call; fail_task_with is the same with the handler's RetryAfter and NonRetriable.
create or replace function switchyard.fail_task(
  run_id uuid, step_slug text, attempt int, error_message text, task_index int default 0
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard.fail_task_with(
    fail_task.run_id, fail_task.step_slug, fail_task.attempt, fail_task.error_message,
    fail_task.task_index, null, false);
end
$$;
