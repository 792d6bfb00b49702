-- Closes an open batch the caller holds locked (docs/design/batching.md): starts its run (the
-- id chosen when it opened) with the list of its events in the order they joined and its origin
-- {kind: 'batch', key, size, closed} (docs/design/origins.md), records the batch in its
-- 'started' event's data as well ({"batch": {"key", "size", "closed", "opened_at"}}; `reason`
-- 'size', 'bytes' or 'timeout'), and deletes the batch and its events,
-- all in the caller's transaction. The next event of the key opens a new batch.
create or replace function switchyard._close_batch(batch bigint, reason text)
returns uuid
language plpgsql
volatile
set search_path = ''
as $$
declare
  b switchyard.batches;
  events jsonb;
begin
  select * into b from switchyard.batches x where x.batch_id = batch;
  select jsonb_agg(e.input order by e.seq) into events
    from switchyard.batch_events e where e.batch_id = batch;
  perform switchyard.start_flow(b.started_as, events, run_id => b.run_id,
    origin => jsonb_build_object('kind', 'batch', 'key', b.batch_key, 'size', b.size,
                                 'closed', reason));
  update switchyard.run_events ev
     set data = coalesce(ev.data, '{}'::jsonb) || jsonb_build_object('batch', jsonb_build_object(
           'key', b.batch_key, 'size', b.size, 'closed', reason, 'opened_at', b.opened_at))
   where ev.run_id = b.run_id and ev.step_slug is null and ev.event = 'started';
  delete from switchyard.batches x where x.batch_id = batch;
  return b.run_id;
end
$$;
