-- How long a queued task must have been queued (or last claimed) before the stall sweep
-- treats its missing message as lost, and how often one queue is searched for lost messages.
-- The kit sends a task's message in the transaction that queues the task, so a queued task
-- without its message means someone removed it outside the kit (pgmq.delete, pgmq.archive,
-- purge_queue, a partition dropped by retention); the wait only keeps the search rare and far
-- from anything in flight.
create or replace function switchyard.lost_message_grace_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 60 $$;
