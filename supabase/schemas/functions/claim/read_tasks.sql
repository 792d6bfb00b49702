-- One read of a queue in the order docs/design/flow-control.md#priority-and-keys-in-turn gives
-- (docs/design/claim.md#read): up to `qty` message
-- ids, hidden for `visibility_seconds`; none when no message may be read now. It does not wait:
-- the worker polls, sleeping between reads outside any statement, so no lock on a switchyard table
-- is held while it waits (a migration's preamble takes them all, docs/design/supabase.md). The
-- worker calls it only for
-- a queue that read_ordered(queue) names; any other it reads with PGMQ's own read_with_poll, in
-- message order, as every earlier release did. Here a plain queue gets pgmq.read.
--
-- The order:
--   - by rank: a message whose body has `ranked_at` (a run of priority p, _task_message) ranks
--     as if it had become visible p x priority_ageing_seconds earlier; any other by its send time,
--     in message order. Higher priority goes first, and a message that waited longer than the
--     levels between them goes before one of higher priority: none is starved;
--   - by turn: a message of a step with keyed concurrency (its body's `concurrency_key`) takes
--     its key's next turn, so keys are served round-robin (the first message of every key, then
--     the second, ...), and a key is given at most its free slots (the step's limit less its
--     started tasks): messages of a full key are not read at all, so they are neither written
--     nor counted as read while they wait.
-- Each side (ranked, unranked) offers its first candidates through its own index (the partial
-- index of ranked messages that _tune_queue_table gives every kit queue, and the primary key);
-- the chosen ones are then locked, skipping those another reader holds, and hidden. The claim
-- (start_tasks, _flow_control) still decides every start: the order is a hint, never a rule a
-- claim trusts.
create or replace function switchyard.read_tasks(
  queue_name text, visibility_seconds int, qty int
)
returns setof bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  keyed boolean;
  window_size int;
  used_keys text[];
  used_counts int[];
  full_keys text[];
  tbl text := pgmq.format_table_name(read_tasks.queue_name, 'q');
  c_ids bigint[];
  c_ranks numeric[];
  c_slots text[];
  c_steps text[];
  chosen bigint[];
begin
  if qty is null or qty not between 1 and 1000 then
    perform switchyard._refuse('22023', 'read_qty', 'qty', qty::text, format(
      'read_tasks(%s): qty %s is invalid: read 1 to 1000 messages at a time',
      switchyard._clip(queue), coalesce(qty::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 1000));
  end if;
  if visibility_seconds is null or visibility_seconds not between 0 and 86400 then
    perform switchyard._refuse('22023', 'read_visibility', 'visibility_seconds',
      visibility_seconds::text, format(
      'read_tasks(%s): visibility_seconds %s is invalid: use 0 to 86400 seconds',
      switchyard._clip(queue), coalesce(visibility_seconds::text, 'null')),
      context => jsonb_build_object('min', 0, 'max', 86400));
  end if;
  perform from switchyard.queues q where q.queue_name = queue;
  if not found then
    perform switchyard._refuse('22023', 'queue_unknown', 'queue_name', queue, format(
      'read_tasks: queue %s is not a queue of the kit: create it with ensure_shared_queue or '
      'adopt_queue, or deploy a flow whose steps use it', switchyard._clip(queue)));
  end if;
  -- Which queues are read in order is read_ordered's rule, here as for the worker.
  if not switchyard.read_ordered(queue) then
    return query select r.msg_id from pgmq.read(queue, visibility_seconds, qty) r;
    return;
  end if;
  -- Whether the read counts the keys' slots (a queue may be ordered by priority alone).
  keyed := exists (select 1 from switchyard.steps s
                    where s.queue_name = queue and s.concurrency_limit is not null);

  window_size := least(greatest(qty * 4, 50), 2000);
  if keyed then
    -- The keys holding slots now: every started task with a slot, through the partial index
    -- of those (as many as the limits allow, however long the queue).
    select coalesce(array_agg(k.slot), '{}'), coalesce(array_agg(k.used), '{}'),
           coalesce(array_agg(k.slot) filter (where k.used >= k.lim), '{}')
      into used_keys, used_counts, full_keys
      from (select t.concurrency_key as slot, count(*)::int as used,
                   min(s.concurrency_limit) as lim
              from switchyard.step_tasks t
              join switchyard.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
             where t.status = 'started' and t.concurrency_key is not null
               and t.queue_name = queue
             group by t.concurrency_key) k;
  end if;
  -- 1. The candidates, each side through its own index. Three statements rather than one: the
  -- two on the queue table are dynamic (its name), so they are planned on every call, and kept
  -- as small as PGMQ's own; the choice between them is static SQL, planned once per session.
  execute format($q$
    select coalesce(array_agg(c.msg_id), '{}'), coalesce(array_agg(c.rank), '{}'),
           coalesce(array_agg(c.slot), '{}'), coalesce(array_agg(c.step), '{}')
      from ((select m.msg_id, (m.message ->> 'ranked_at')::numeric as rank,
                    m.message ->> 'concurrency_key' as slot,
                    (m.message ->> 'flow_slug') || '/' || (m.message ->> 'step_slug') as step
               from pgmq.%1$I m
              where m.message ? 'ranked_at' and m.vt <= switchyard.queue_clock()
                and not coalesce(m.message ->> 'concurrency_key' = any ($2), false)
              order by (m.message ->> 'ranked_at')::numeric
              limit $1)
            union all
            (select m.msg_id, extract(epoch from m.enqueued_at), m.message ->> 'concurrency_key',
                    (m.message ->> 'flow_slug') || '/' || (m.message ->> 'step_slug')
               from pgmq.%1$I m
              where not m.message ? 'ranked_at' and m.vt <= switchyard.queue_clock()
                and not coalesce(m.message ->> 'concurrency_key' = any ($2), false)
              order by m.msg_id
              limit $1)) c$q$, tbl)
    into c_ids, c_ranks, c_slots, c_steps
    using window_size, coalesce(full_keys, '{}');
  if cardinality(c_ids) = 0 then
    return;
  end if;
  -- 2. Turns: each key's candidates in rank order, at most its free slots (its step's limit less
  -- its started tasks); then the first `qty` by (turn, rank, id).
  select coalesce(array_agg(t.id order by t.turn, t.rank, t.id), '{}') into chosen
    from (select x.id, x.rank, x.turn
            from (select c.id, c.rank, c.slot,
                         row_number() over (partition by coalesce(c.slot, c.id::text)
                                            order by c.rank, c.id) as turn,
                         (select s.concurrency_limit from switchyard.steps s
                           where c.slot is not null
                             and s.flow_slug = split_part(c.step, '/', 1)
                             and s.step_slug = split_part(c.step, '/', 2))
                           - coalesce(used_counts[array_position(used_keys, c.slot)], 0) as free
                    from unnest(c_ids, c_ranks, c_slots, c_steps) as c(id, rank, slot, step)) x
           where x.slot is null or x.free is null or x.turn <= x.free
           order by x.turn, x.rank, x.id
           limit qty) t;
  -- 3. Lock the chosen (by key; one another reader holds is left to it) and hide them.
  return query execute format($q$
    update pgmq.%1$I m
       set vt = switchyard.queue_clock() + make_interval(secs => $1), read_ct = m.read_ct + 1
      from (select x.msg_id from pgmq.%1$I x
             where x.msg_id = any ($2) and x.vt <= switchyard.queue_clock()
               for update skip locked) l
     where m.msg_id = l.msg_id
    returning m.msg_id$q$, tbl)
    using visibility_seconds, chosen;
end
$$;
