-- Stall recovery (docs/design/claim.md#stall-recovery): a started task whose worker stopped
-- heart-beating
-- within its own window gets its attempt counted as failed and is queued again (or fails for
-- good); a stalled task of a cancelled run is cancelled instead. The run is read by its key. A
-- task of a run moved onto another version while it ran is queued on that version
-- (docs/design/rerun.md).
create or replace function switchyard.recover_stalled(queue_name text)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  task switchyard.step_tasks;
  recovered int := 0;
  grace int := switchyard.lost_message_grace_seconds();
  new_id bigint;
begin
  for task in
    select t.* from switchyard.step_tasks t
      left join switchyard.workers w on w.worker_id = t.worker_id
     where t.queue_name = queue and t.status = 'started'
       -- The attempt's time on earlier instances (carried_ms) counts: the timeout spans them.
       and (t.started_at + make_interval(secs => t.timeout - t.carried_ms / 1000.0
                                                 + switchyard.claim_margin_seconds()) < switchyard.clock_now()
            or w.worker_id is null
            or not switchyard._worker_running(w.stopped_at, w.last_heartbeat_at,
                                              w.heartbeat_window_seconds))
     for update of t skip locked
  loop
    -- A task of a cancelled run is not run again: its message is archived, the task is
    -- cancelled like the run's queued tasks (cancel_run), and nothing of the run stays visible.
    -- The run is locked (task, then run: the order of fail_task), so a cancel cannot commit
    -- between this test and the requeue below.
    if (select r.status from switchyard.runs r where r.run_id = task.run_id for update)
         = 'cancelled' then
      update switchyard.step_tasks t
         set status = 'cancelled', worker_id = null
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform pgmq.archive(queue, task.message_id);
      recovered := recovered + 1;
      continue;
    end if;
    -- A stalled attempt is a failed attempt for the metrics (docs/design/observability.md).
    if task.attempts_count >= task.max_attempts then
      update switchyard.step_tasks t set last_failed_at = switchyard.clock_now()
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform switchyard._exhaust_task(task, format('stalled on attempt %s (worker %s stopped or timed out)',
                                                    task.attempts_count, task.worker_id));
    else
      update switchyard.step_tasks t
         set status = 'queued', worker_id = null, last_failed_at = switchyard.clock_now(),
             error = format('stalled on attempt %s; recovered', task.attempts_count)
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform pgmq.set_vt(queue, task.message_id, 0);
      -- A task of a run moved while it ran follows the run now (docs/design/rerun.md).
      perform switchyard._follow_run_flow(task.run_id, task.step_slug, task.task_index, 0);
    end if;
    recovered := recovered + 1;
  end loop;

  -- No key update: taking the row does not block the foreign-key checks of tasks being
  -- queued on this queue meanwhile.
  perform 1 from switchyard.queues q
   where q.queue_name = queue
     and (q.lost_checked_at is null or q.lost_checked_at <= switchyard.clock_now() - make_interval(secs => grace))
     for no key update skip locked;
  if found then
    update switchyard.queues q set lost_checked_at = switchyard.clock_now() where q.queue_name = queue;
    -- Only tasks of started runs: when a run fails, _fail_run archives its other queued tasks'
    -- messages and leaves the tasks queued, and a new message would be archived as stale and
    -- sent again every period. The run's status is read by its key
    -- (docs/design/claim.md#planner-settings).
    for task in execute format(
      'select t.* from switchyard.step_tasks t
        where t.queue_name = $1 and t.status = ''queued''
          and greatest(t.queued_at, coalesce(t.started_at, t.queued_at))
                <= switchyard.clock_now() - make_interval(secs => $2)
          and (select r.status from switchyard.runs r where r.run_id = t.run_id) = ''started''
          and not exists (select 1 from pgmq.%I m where m.msg_id = t.message_id)
        order by t.message_id
          for update of t skip locked',
      pgmq.format_table_name(queue, 'q'))
      using queue, grace
    loop
      select s into new_id from pgmq.send(
        queue,
        switchyard._task_message(
          task.run_id, task.flow_slug, task.step_slug, nullif(task.task_index, 0),
          (select r.priority from switchyard.runs r where r.run_id = task.run_id), 0,
          switchyard._concurrency_key(task.run_id, task.flow_slug, task.step_slug,
                                      task.task_index)),
        0) s;
      update switchyard.step_tasks t set message_id = new_id
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      recovered := recovered + 1;
    end loop;
  end if;
  -- Run deadlines, on the same sweep (docs/design/client.md): one probe of an index of
  -- started runs with a deadline, empty when no flow or start sets one.
  perform switchyard.cancel_overdue_runs();
  return recovered;
end
$$;
