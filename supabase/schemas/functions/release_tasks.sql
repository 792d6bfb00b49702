-- Shutdown: a stopping worker hands back the tasks it still holds (docs/ARCHITECTURE.md §9).
-- Each started task of the worker goes back to queued with the attempt refunded (the shutdown
-- is not the handler's failure) and its message becomes visible at once, in one statement per
-- queue. The worker is marked deprecated in the same transaction, so a worker released by
-- anyone else stops at its next heartbeat. The worker drops whatever its released handlers
-- return, so the refunded attempt number, claimed again by another worker, is never answered
-- twice. Locks in (queue, message id) order, as complete_tasks and start_tasks do.
-- Returns the tasks released.
create or replace function switchyard.release_tasks(worker_id uuid)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  q record;
  released int := 0;
begin
  if worker_id is null then
    raise exception using errcode = '22023',
      message = 'release_tasks: worker_id is null: pass the id of the stopping worker',
      detail = jsonb_build_object('rule', 'argument_missing', 'argument', 'worker_id',
                                  'value', null)::text;
  end if;
  update switchyard.workers w set deprecated_at = coalesce(w.deprecated_at, now())
   where w.worker_id = release_tasks.worker_id;
  for q in
    with held as (
      select t.run_id, t.step_slug, t.task_index from switchyard.step_tasks t
       where t.worker_id = release_tasks.worker_id and t.status = 'started'
       order by t.queue_name, t.message_id
         for update of t
    ),
    back as (
      update switchyard.step_tasks t
         set status = 'queued', attempts_count = t.attempts_count - 1, worker_id = null
        from held h
       where t.run_id = h.run_id and t.step_slug = h.step_slug and t.task_index = h.task_index
      returning t.queue_name, t.message_id
    )
    select b.queue_name, array_agg(b.message_id order by b.message_id) as ids
      from back b group by b.queue_name order by b.queue_name
  loop
    perform switchyard._hide_messages(q.queue_name, q.ids, array_fill(0, array[cardinality(q.ids)]));
    released := released + cardinality(q.ids);
  end loop;
  return released;
end
$$;
