-- Whether the worker reads `queue_name` through read_tasks, in the order of
-- docs/design/flow-control.md#priority-and-keys-in-turn (true), or through PGMQ's own
-- read_with_poll, in message order (false): true once a run
-- with a priority had a step on the queue (start_flow sets queues.priority_used_at) or while a
-- step on it has keyed concurrency. One probe of the queue's row and one of a partial index of
-- steps (empty when no step has flow control). False for a queue the kit does not know, which
-- PGMQ's read then names.
create or replace function switchyard.read_ordered(queue_name text)
returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce((select q.priority_used_at is not null from switchyard.queues q
                    where q.queue_name = read_ordered.queue_name), false)
         or exists (select 1 from switchyard.steps s
                     where s.queue_name = read_ordered.queue_name
                       and s.concurrency_limit is not null)
$$;
