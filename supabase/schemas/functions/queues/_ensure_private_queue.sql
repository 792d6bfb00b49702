-- Creates or finds the private queue of a flow (docs/design/overview.md#queue-ownership): recorded
-- in the queue
-- catalog with its owner, created in PGMQ when absent, its queue table tuned for churn
-- (_tune_queue_table). Refuses a queue another flow owns or that is shared, and a name PGMQ
-- spells several ways. The values it echoes are clipped.
create or replace function switchyard._ensure_private_queue(queue text, owner text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  existing switchyard.queues;
begin
  perform switchyard.assert_queue_name(queue, false);
  perform switchyard._lock_queue_name(queue);
  select * into existing from switchyard.queues q where q.queue_name = queue;
  if found then
    if existing.ownership = 'shared' then
      perform switchyard._refuse('23505', 'queue_is_shared', 'queue_name', queue, format(
        'queue %s is shared; flow %s cannot use it as its private queue',
        switchyard._clip(queue), switchyard._clip(owner)),
        context => jsonb_build_object('flow_slug', left(owner, 200)));
    elsif existing.owner_flow <> owner then
      perform switchyard._refuse('23505', 'queue_owned_by_other_flow', 'queue_name', queue, format(
        'queue %s is the private queue of flow %s; flow %s cannot own it too',
        switchyard._clip(queue), switchyard._clip(existing.owner_flow), switchyard._clip(owner)),
        context => jsonb_build_object('flow_slug', left(owner, 200),
          'owner_flow', existing.owner_flow));
    end if;
    return;
  end if;
  if cardinality(switchyard._pgmq_spellings(queue)) > 0 then
    perform switchyard._refuse('23505', 'queue_not_in_catalog', 'queue_name', queue, format(
      'queue %s already exists in PGMQ (as %s) but is not in the switchyard registry; '
      'a private queue is never adopted: rename the flow or drop that queue',
      switchyard._clip(queue), array_to_string(switchyard._pgmq_spellings(queue), ', ')),
      context => jsonb_build_object('pgmq_spellings', to_jsonb(switchyard._pgmq_spellings(queue))));
  end if;
  perform pgmq.create(queue);
  perform switchyard._tune_queue_table(queue);
  insert into switchyard.queues (queue_name, pgmq_name, ownership, owner_flow)
  values (queue, queue, 'private', owner);
end
$$;
