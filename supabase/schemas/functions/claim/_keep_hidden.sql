-- Keeps each claimed message hidden at least `seconds` from now (its task's timeout plus the
-- margin), writing only the messages that would reappear sooner
-- (docs/design/claim.md#hiding-claimed-messages).
-- The worker reads with the visibility its queue's tasks need (read_visibility_seconds), so in
-- the common case the read already hid each message long enough and this writes nothing: each
-- message is then written twice in PGMQ's queue table (the read, the archive), not three times,
-- and a queue table's dead rows grow a third slower. A message read with less (an older worker,
-- a timeout raised after the read, a claim later than its window) is written as set_vt would,
-- like _hide_messages; a message hidden longer stays so (stall recovery and the failure path
-- set its visibility when it must reappear). Messages gone meanwhile are skipped. The test of vt
-- is written so that no index can answer it (vt minus the seconds, not vt alone): as a plain
-- range on vt the planner read PGMQ's vt index, dead entries and all, instead of probing each
-- message by its key, and in a long-lived queue the claim that wrote nothing took 5.6 ms where a
-- fresh one took 0.3 ms (BENCHMARKS.md, issue 27).
create or replace function switchyard._keep_hidden(queue text, ids bigint[], seconds int[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  execute format(
    'update pgmq.%I q set vt = switchyard.queue_clock() + make_interval(secs => v.secs)
       from unnest($1::bigint[], $2::int[]) as v(id, secs)
      where q.msg_id = v.id and q.vt - make_interval(secs => v.secs) < switchyard.queue_clock()',
    pgmq.format_table_name(queue, 'q'))
  using ids, seconds;
end
$$;
