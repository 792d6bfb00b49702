-- A shared (explicit, routed) queue: validated and provisioned when absent; never
-- adopted implicitly and never dropped with a flow. A queue it creates has its queue table
-- tuned for churn (_tune_queue_table).
create or replace function switchyard.ensure_shared_queue(queue text)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  existing switchyard.queues;
begin
  perform switchyard.assert_queue_name(queue, true);
  perform switchyard._lock_queue_name(queue);
  select * into existing from switchyard.queues q where q.queue_name = queue;
  if found then
    if existing.ownership = 'private' then
      perform switchyard._refuse('23505', 'queue_is_private', 'queue_name', queue, format(
        'queue %s is the private queue of flow %s; it cannot be used as a shared queue',
        to_json(queue)::text, to_json(existing.owner_flow)::text),
        context => jsonb_build_object('owner_flow', existing.owner_flow));
    end if;
    return 'registered';
  end if;
  if cardinality(switchyard._pgmq_spellings(queue)) > 0 then
    perform switchyard._refuse('23505', 'queue_not_in_catalog', 'queue_name', queue, format(
      'queue %s already exists in PGMQ (as %s) but is not in the switchyard registry; '
      'routed flows never adopt it implicitly: run select switchyard.adopt_queue(%L) first',
      to_json(queue)::text, array_to_string(switchyard._pgmq_spellings(queue), ', '),
      (switchyard._pgmq_spellings(queue))[1]),
      context => jsonb_build_object('pgmq_spellings', to_jsonb(switchyard._pgmq_spellings(queue))));
  end if;
  perform pgmq.create(queue);
  perform switchyard._tune_queue_table(queue);
  insert into switchyard.queues (queue_name, pgmq_name, ownership, owner_flow)
  values (queue, queue, 'shared', null);
  return 'created';
end
$$;
