-- Sets the visibility of a batch of messages in one statement: the claimed messages
-- (their step's timeout plus the margin) and a refused batch (visible again at once).
-- PGMQ 1.5 has only a one-message set_vt, and a call per message (dynamic SQL each) was
-- a sixth of the database time of a claim. This writes PGMQ's documented queue table
-- (msg_id, read_ct, enqueued_at, vt, message, headers) the way set_vt does (vt =
-- switchyard.queue_clock() + seconds), naming the table with PGMQ's own
-- pgmq.format_table_name(queue, 'q') as PGMQ's functions do (it lower-cases the name, so
-- any spelling PGMQ accepts reaches the same table). Messages gone meanwhile are skipped.
-- The callers, start_tasks and release_tasks, lock the messages' tasks first, in message
-- order.
create or replace function switchyard._hide_messages(queue text, ids bigint[], seconds int[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  execute format(
    'update pgmq.%I q set vt = switchyard.queue_clock() + make_interval(secs => v.secs)
       from unnest($1::bigint[], $2::int[]) as v(id, secs)
      where q.msg_id = v.id',
    pgmq.format_table_name(queue, 'q'))
  using ids, seconds;
end
$$;
