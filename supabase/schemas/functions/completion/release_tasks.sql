-- Shutdown: a stopping worker hands back the tasks it still holds
-- (docs/design/worker.md#worker-states-and-parts), in
-- one transaction; the worker is marked deprecated in it, so a worker released by anyone else
-- stops at its next heartbeat. The worker drops whatever its released handlers return, so an
-- attempt number claimed again elsewhere is never answered twice.
--
-- An attempt is refunded (the task queued again with attempts_count - 1, its message visible at
-- once) only for work handed back: the worker names the task in `handed_back` (a JSON array of
-- {run_id, step_slug, task_index}: its handler honoured the shutdown, throwing the abort reason
-- within the grace period, or never started), or the task saved a checkpoint since its claim.
-- Refunds are bounded: at most max_task_refunds() per task, and the time the attempt ran on
-- every instance counts toward the step timeout (carried_ms, which start_tasks hands to the next
-- claim of the same attempt). Every other task the worker holds fails its attempt through
-- fail_task_with (retried with backoff while attempts remain, else its run fails or its step is
-- skipped), saying why: a handler still running after the grace period with no checkpoint since
-- its claim, a task handed back max_task_refunds() times, or an attempt past its step timeout.
-- `handed_back` null (a 0.3.0 runtime's call) names every task the worker holds.
-- Locks in (queue, message id) order, as complete_tasks and start_tasks do, then a failed
-- attempt's run (fail_task_with). Returns the tasks handed back, refunded or not.
create or replace function switchyard.release_tasks(worker_id uuid, handed_back jsonb default null)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  t record;
  released int := 0;
  max_refunds int := switchyard.max_task_refunds();
begin
  if worker_id is null then
    perform switchyard._refuse('22023', 'argument_missing', 'worker_id', null,
      'release_tasks: worker_id is null: pass the id of the stopping worker');
  end if;
  if handed_back is not null and jsonb_typeof(handed_back) <> 'array' then
    perform switchyard._refuse('22023', 'handed_back_not_array', 'handed_back', handed_back::text,
      format(
      'release_tasks: handed_back %s is invalid: pass a JSON array of {run_id, step_slug, '
      'task_index}, or null for every task the worker holds', left(handed_back::text, 200)));
  end if;
  update switchyard.workers w set deprecated_at = coalesce(w.deprecated_at, switchyard.clock_now())
   where w.worker_id = release_tasks.worker_id;
  for t in
    select x.run_id, x.step_slug, x.task_index, x.queue_name, x.message_id, x.attempts_count,
           x.timeout, x.refunds,
           x.carried_ms + (extract(epoch from switchyard.clock_now() - x.started_at) * 1000)::bigint as used_ms,
           handed_back is null
             or exists (select 1 from jsonb_array_elements(handed_back) h
                         where h ->> 'run_id' = x.run_id::text and h ->> 'step_slug' = x.step_slug
                           and coalesce(h ->> 'task_index', '0') = x.task_index::text) as named,
           exists (select 1 from switchyard.task_checkpoints c
                    where c.run_id = x.run_id and c.step_slug = x.step_slug
                      and c.task_index = x.task_index and c.saved_at >= x.started_at)
             as checkpointed
      from switchyard.step_tasks x
     where x.worker_id = release_tasks.worker_id and x.status = 'started'
     order by x.queue_name, x.message_id
       for update of x
  loop
    released := released + 1;
    if (t.named or t.checkpointed) and t.refunds < max_refunds
       and t.used_ms < t.timeout * 1000::bigint then
      update switchyard.step_tasks x
         set status = 'queued', attempts_count = x.attempts_count - 1, worker_id = null,
             refunds = x.refunds + 1, carried_ms = t.used_ms::int,
             carried_attempt = t.attempts_count
       where x.run_id = t.run_id and x.step_slug = t.step_slug and x.task_index = t.task_index;
      perform pgmq.set_vt(t.queue_name, t.message_id, 0);
      -- A task of a run moved while it ran follows the run now (docs/design/rerun.md).
      perform switchyard._follow_run_flow(t.run_id, t.step_slug, t.task_index, 0);
      continue;
    end if;
    perform switchyard.fail_task_with(t.run_id, t.step_slug, t.attempts_count,
      case
        when t.used_ms >= t.timeout * 1000::bigint then format(
          'step %s timed out: attempt %s ran %s s over the instances that handed it back, '
          'past its timeout of %s s', t.step_slug, t.attempts_count, round(t.used_ms / 1000.0, 1),
          t.timeout)
        when t.named or t.checkpointed then format(
          'attempt %s was handed back at an instance''s end %s times, the most a task may be '
          'without counting (max_task_refunds()): this hand-over counts as a failed attempt',
          t.attempts_count, t.refunds)
        else format(
          'attempt %s was still running when the worker stopped and its grace period ended, '
          'with no checkpoint since its claim: it counts as a failed attempt (watch ctx.signal, '
          'and save progress with ctx.checkpoint, to hand the task over without one)',
          t.attempts_count)
      end, t.task_index, null, false);
  end loop;
  return released;
end
$$;
