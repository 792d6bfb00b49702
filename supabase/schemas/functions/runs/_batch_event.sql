-- One event of a batched flow (docs/design/batching.md), from start_flow(..., batch_key) or a
-- row trigger's batch, in the caller's transaction: it joins the open batch of
-- (started_as, batch_key), opening one when there is none, and closes the batch when it is full
-- (maxSize events; or a list that would pass max_input_bytes with this event, which then opens
-- the next batch). Answers the id of the run the batch becomes.
--
-- Exactly one batch per event: the open batch's row is locked (FOR UPDATE), or inserted
-- ON CONFLICT DO NOTHING on (started_as, batch_key), so writers of one key take turns and a
-- second opener waits for the first's transaction, then finds its batch (or, if it rolled back,
-- opens one). The tick (close_batches) skips a batch a writer holds; a writer waiting on a batch
-- the tick is closing finds it gone when the tick commits (READ COMMITTED re-reads the row) and
-- opens the next. A rolled back event leaves nothing: its event row, the batch it opened and a
-- close it caused go with its transaction. `refused_with` names an option given with the batch
-- key (start_flow's), which is refused.
create or replace function switchyard._batch_event(
  started_as text, input jsonb, batch_key text, refused_with text default null
)
returns uuid
language plpgsql
volatile
set search_path = ''
as $$
declare
  concrete text;
  options jsonb;
  b switchyard.batches;
  event_bytes bigint := octet_length(input::text) + 2;
  max_bytes int := switchyard.limit_value('max_input_bytes');
begin
  if refused_with is not null then
    perform switchyard._refuse('22023', 'batch_key_alone', refused_with, batch_key, format(
      'start_flow(%s): batch_key %s comes with %s: an event of a batch takes no run id, owner, '
      'start or deadline time, start key, trace context or priority (the batch''s run is '
      'started when the batch closes); start without them',
      switchyard._clip(started_as), switchyard._clip(batch_key), refused_with));
  end if;
  if length(batch_key) not between 1 and 200 then
    perform switchyard._refuse('22023', 'batch_key_length', 'batch_key', batch_key, format(
      'start_flow(%s): batch_key %s is invalid: use 1 to 200 characters',
      switchyard._clip(started_as), switchyard._clip(batch_key)),
      context => jsonb_build_object('min', 1, 'max', 200));
  end if;
  concrete := switchyard.resolve_flow(started_as);
  select nullif(f.shape -> 'options' -> 'batch', 'null'::jsonb) into options
    from switchyard.flows f where f.flow_slug = concrete;
  if options is null then
    perform switchyard._refuse('22023', 'batch_not_declared', 'batch_key', batch_key, format(
      'start_flow(%s): batch_key %s is refused: flow %s has no batch option; declare '
      'batch: { maxSize, timeout } on the flow, or start without a batch key',
      switchyard._clip(started_as), switchyard._clip(batch_key), to_json(concrete)::text),
      context => jsonb_build_object('flow_slug', concrete));
  end if;
  -- The list [e1, e2] is 2 bytes of brackets and each event's text with ", ": a single event
  -- that could never fit is refused as start_flow refuses any input over the limit.
  if 2 + event_bytes > max_bytes then
    perform switchyard._refuse('22023', 'max_input_bytes', 'input', left(input::text, 200), format(
      'start_flow(%s): event is %s bytes of JSON: a batch of it alone would be over the limit of '
      '%s bytes (setting max_input_bytes)', switchyard._clip(started_as), event_bytes - 2,
      max_bytes),
      context => jsonb_build_object('size', event_bytes - 2, 'limit', max_bytes));
  end if;
  loop
    select * into b from switchyard.batches x
     where x.started_as = _batch_event.started_as and x.batch_key = _batch_event.batch_key
       for update;
    if not found then
      insert into switchyard.batches (started_as, batch_key, run_id, max_size, timeout,
                                      close_at)
      values (_batch_event.started_as, _batch_event.batch_key, gen_random_uuid(),
              (options ->> 'maxSize')::int, (options ->> 'timeout')::int,
              switchyard.clock_now() + (options ->> 'timeout')::int * interval '1 second')
      on conflict on constraint batches_open_key do nothing
      returning * into b;
      exit when b.batch_id is not null;
      continue;
    end if;
    -- Full by bytes: this event would make the run input too large; the batch closes and the
    -- event opens the next one.
    if b.bytes + event_bytes > max_bytes then
      perform switchyard._close_batch(b.batch_id, 'bytes');
      continue;
    end if;
    exit;
  end loop;
  insert into switchyard.batch_events (batch_id, seq, input)
  values (b.batch_id, b.size + 1, input);
  update switchyard.batches x set size = x.size + 1, bytes = x.bytes + event_bytes
   where x.batch_id = b.batch_id;
  if b.size + 1 >= b.max_size then
    perform switchyard._close_batch(b.batch_id, 'size');
  end if;
  return b.run_id;
end
$$;
