-- A failed attempt with the handler's say (docs/design/claim.md#dispatch-and-completion,
-- docs/design/flow-control.md#rate-limits-and-keyed-concurrency): retry_after_seconds
-- (RetryAfter) replaces the backoff delay of the retry (attempts are counted as ever); with the
-- step's rate limit named, it also empties that limit's bucket until the retry is due, but for
-- at most the limit's own period (per_seconds), so every step sharing the limit backs off (an
-- HTTP 429) while one task cannot freeze a bucket others share for longer than its period (a
-- RetryAfter(604800) waits 7 days itself; the bucket, a minute for a limit per minute), and
-- set_rate_limit lifts the drain. non_retriable (NonRetriable) fails the task
-- now, its remaining attempts unused, as an exhausted task does (_exhaust_task: whenExhausted
-- holds). Null and false: fail_task's backoff, min(base_delay * 2^(attempt - 1), max_delay).
-- The exponent stops at 40: base_delay <= 86400 < 2^17, so the product stays below 2^57
-- (no bigint overflow at any attempt), and 2^40 s is beyond every accepted max_delay
-- (at most 604800), so the cap is unchanged by it. An attempt of a cancelled run answers
-- 'cancelled' (its task cancelled, no failed attempt counted). The retry of a task whose run
-- moved onto another version while it ran goes to that version (_follow_run_flow,
-- docs/design/rerun.md).
create or replace function switchyard.fail_task_with(
  run_id uuid, step_slug text, attempt int, error_message text, task_index int,
  retry_after_seconds int, non_retriable boolean
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
  run_flow text;
  delay_seconds int;
  limit_name text;
  error_text text := left(coalesce(error_message, 'unknown error'), 4000);
begin
  if retry_after_seconds is not null and (retry_after_seconds < 0 or retry_after_seconds > 604800) then
    perform switchyard._refuse('22023', 'retry_after_range', 'retry_after_seconds',
      retry_after_seconds::text, format(
      'fail_task_with: retry_after_seconds %s is out of range: use 0 to 604800 (7 days)',
      retry_after_seconds),
      context => jsonb_build_object('min', 0, 'max', 604800));
  end if;
  select * into task from switchyard.step_tasks t
   where t.run_id = fail_task_with.run_id and t.step_slug = fail_task_with.step_slug
     and t.task_index = fail_task_with.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    return 'ignored';
  end if;
  select r.status, r.flow_slug into run_status, run_flow
    from switchyard.runs r where r.run_id = task.run_id for update;
  -- The run was cancelled while the attempt ran (its handler may fail because of it: a refused
  -- progress report, an aborted call): not a failure. The task is cancelled like the run's
  -- queued tasks (cancel_run), with the handler's error kept and no failed attempt counted.
  if run_status = 'cancelled' then
    update switchyard.step_tasks t
       set status = 'cancelled', error = error_text, worker_id = null
     where t.run_id = task.run_id and t.step_slug = task.step_slug
       and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    return 'cancelled';
  end if;
  if task.attempts_count < task.max_attempts and run_status = 'started'
     and not coalesce(non_retriable, false) then
    delay_seconds := coalesce(retry_after_seconds,
      least(task.base_delay::bigint * (1::bigint << least(task.attempts_count - 1, 40)),
            task.max_delay)::int);
    update switchyard.step_tasks t
       set status = 'queued', error = error_text, worker_id = null, last_failed_at = switchyard.clock_now()
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.set_vt(task.queue_name, task.message_id, delay_seconds);
    -- The run moved onto another version while this attempt ran (move_run): the retry is the
    -- new version's (docs/design/rerun.md).
    if run_flow <> task.flow_slug then
      perform switchyard._follow_run_flow(task.run_id, task.step_slug, task.task_index,
                                          delay_seconds);
    end if;
    if retry_after_seconds is not null then
      select st.rate_limit into limit_name from switchyard.steps st
       where st.flow_slug = task.flow_slug and st.step_slug = task.step_slug;
      if limit_name is not null then
        update switchyard.rate_limits l
           set tokens = least(l.tokens, 0),
               refilled_at = greatest(l.refilled_at,
                 switchyard.clock_now() + make_interval(secs => least(retry_after_seconds, l.per_seconds)))
         where l.name = limit_name;
      end if;
    end if;
    return 'retrying';
  end if;
  -- The failed attempt's time for the metrics (docs/design/observability.md); an exhausted task is
  -- failed only here.
  update switchyard.step_tasks t set last_failed_at = switchyard.clock_now()
   where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
  return switchyard._exhaust_task(task, error_text);
end
$$;
