-- Administrative adoption of an existing PGMQ queue as a shared queue. Succeeds
-- only when the queue is empty or every message in it belongs to a tracked task. The adopted
-- queue's table is tuned for churn (_tune_queue_table).
create or replace function switchyard.adopt_queue(pgmq_queue_name text)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  canonical text := lower(pgmq_queue_name);
  spellings text[];
  existing switchyard.queues;
  foreign_ids bigint[];
  foreign_count bigint;
begin
  if pgmq_queue_name is null then
    perform switchyard._refuse('22023', 'argument_missing', 'pgmq_queue_name', null,
      'adopt_queue: queue name is missing');
  end if;
  perform switchyard.assert_queue_name(canonical, true);
  perform switchyard._lock_queue_name(canonical);
  spellings := switchyard._pgmq_spellings(canonical);
  if cardinality(spellings) = 0 then
    perform switchyard._refuse('22023', 'pgmq_queue_missing', 'pgmq_queue_name', pgmq_queue_name,
      format(
      'cannot adopt queue %s: PGMQ has no such queue', to_json(pgmq_queue_name)::text));
  elsif cardinality(spellings) > 1 then
    perform switchyard._refuse('22023', 'pgmq_queue_ambiguous', 'pgmq_queue_name', pgmq_queue_name,
      format(
      'cannot adopt queue %s: PGMQ lists it under several spellings (%s), which share one table',
      to_json(pgmq_queue_name)::text, array_to_string(spellings, ', ')),
      context => jsonb_build_object('pgmq_spellings', to_jsonb(spellings)));
  end if;
  select * into existing from switchyard.queues q where q.queue_name = canonical;
  if found then
    if existing.ownership = 'private' then
      perform switchyard._refuse('23505', 'queue_is_private', 'pgmq_queue_name', pgmq_queue_name,
        format(
        'cannot adopt queue %s: it is the private queue of flow %s',
        to_json(canonical)::text, to_json(existing.owner_flow)::text),
        context => jsonb_build_object('owner_flow', existing.owner_flow));
    end if;
    return 'already registered';
  end if;
  -- Hold off writers while the messages are checked. PGMQ names the queue's table
  -- (pgmq.format_table_name lower-cases the spelling).
  execute format('lock table pgmq.%I in exclusive mode', pgmq.format_table_name(spellings[1], 'q'));
  execute format(
    'select array_agg(m.msg_id order by m.msg_id), count(*) from pgmq.%I m
      where not exists (select 1 from switchyard.step_tasks t
                        where t.queue_name = $1 and t.message_id = m.msg_id)',
    pgmq.format_table_name(spellings[1], 'q')) into foreign_ids, foreign_count using canonical;
  if foreign_count > 0 then
    perform switchyard._refuse('55000', 'queue_has_untracked_messages', 'pgmq_queue_name',
      pgmq_queue_name, format(
      'cannot adopt queue %s: %s message(s) do not belong to any tracked task (message ids %s); '
      'adoption requires an empty queue or only tracked messages',
      to_json(spellings[1])::text, foreign_count, array_to_string(foreign_ids[1:20], ', ')),
      context => jsonb_build_object('untracked_count', foreign_count,
        'message_ids', to_jsonb(foreign_ids[1:20])));
  end if;
  perform switchyard._tune_queue_table(spellings[1]);
  insert into switchyard.queues (queue_name, pgmq_name, ownership, owner_flow, adopted_at)
  values (canonical, spellings[1], 'shared', null, switchyard.clock_now());
  return 'adopted';
end
$$;
