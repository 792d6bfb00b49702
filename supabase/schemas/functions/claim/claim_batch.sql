-- The claim (docs/design/claim.md): turns the messages a worker read into started
-- tasks, all or nothing per batch. It locks the batch's runs and tasks, classifies every message
-- (classify_batch), refuses a batch with unsupported work whole (the function pauses), archives
-- stale messages, hides a paused run's again (docs/design/rerun.md), holds back what flow control
-- says must wait (docs/design/flow-control.md#rate-limits-and-keyed-concurrency), starts the
-- eligible tasks
-- and returns each with its input. Per message it probes unique keys only
-- (docs/design/claim.md#planner-settings), so its cost
-- does not grow with the backlog or the registry.
--
-- This is start_tasks (the call of every earlier worker, 0.4.0's among them, which hands it null)
-- with one more argument, `hidden_until`: the earliest `vt` the worker's read gave the batch
-- (PGMQ's read returns it). When every claimed message is hidden that long already (its timeout
-- plus the margin from now), the claim writes no message and skips _keep_hidden, its one dynamic
-- statement (docs/design/claim.md#hiding-claimed-messages). Null: _keep_hidden checks each
-- message. A wrong value can only let a claimed message reappear early, which a read then
-- classifies as a duplicate (left to stall recovery).
create or replace function switchyard.claim_batch(
  queue_name text, message_ids bigint[], worker_id uuid, supported_pairs text[],
  hidden_until timestamptz
)
returns setof switchyard.task_claim
language plpgsql
volatile
security definer
set search_path = ''
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  queue alias for queue_name;
  worker record;
  unsupported_ids bigint[];
  unsupported_pairs text[];
  stale_ids bigint[];
  gone_ids bigint[];          -- read, then archived by a move or a rerun: stale (below)
  paused_ids bigint[];
  eligible_ids bigint[];
  duplicate_ids bigint[];
  claimed_ids bigint[];
  claimed_secs int[];
  reason text;
  support text;
  task_ids bigint[];      -- the batch's tasks (parallel arrays, in message order)
  task_runs uuid[];
  task_steps text[];
  task_idxs int[];
  held_ids bigint[];      -- eligible, but held back by flow control
                          -- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency), and
                          -- their waits
  held_secs int[];
  slot_ids bigint[];      -- claimed with a keyed concurrency slot, and the slots
  slot_keys text[];
  claimed_flows text[];   -- the claimed tasks' flows, steps, attempts and waits (the counters)
  claimed_steps text[];
  claimed_attempts int[];
  claimed_waits double precision[];
  counted text[];         -- the figures counted per row (claims, retries, queue_wait)
begin
  if message_ids is null or cardinality(message_ids) = 0 then
    return;
  end if;
  select w.worker_id, w.queue_name, w.function_name, w.pair_set into worker
    from switchyard.workers w where w.worker_id = claim_batch.worker_id;
  if not found then
    perform switchyard._refuse('22023', 'worker_not_registered', 'worker_id',
      claim_batch.worker_id::text, format(
      'start_tasks: worker %s is not registered', claim_batch.worker_id));
  end if;
  if worker.queue_name <> queue then
    perform switchyard._refuse('22023', 'worker_queue_mismatch', 'queue_name', queue, format(
      'start_tasks: worker %s polls queue %s, not %s', worker.worker_id,
      switchyard._clip(worker.queue_name), switchyard._clip(queue)),
      context => jsonb_build_object('worker_id', worker.worker_id, 'worker_queue', worker.queue_name));
  end if;
  support := case when supported_pairs is null then worker.pair_set
                  else switchyard.pair_set(supported_pairs) end;

  -- The batch's runs first, in run order, FOR KEY SHARE (claims do not block each other): a
  -- failure, a cancel or a completion holds its run FOR UPDATE until it commits, so a claim
  -- that overlaps one waits for it, and the classification below (a statement of its own, so
  -- a newer snapshot) sees the run's new status: a task of a run that is no longer started is
  -- stale, never claimed. Without this lock a claim could start an element of a map after a
  -- sibling's failure had failed the run (the failure was not committed when the claim read the
  -- run). Runs before tasks, as cancel_run locks them; a task's run never changes, so the
  -- unlocked probe that finds it is exact.
  perform 1
     from switchyard.runs r
    where r.run_id in (select l.run_id
                         from (select distinct u.id from unnest(message_ids) as u(id)) b
                         cross join lateral (select t.run_id from switchyard.step_tasks t
                                              where t.queue_name = queue and t.message_id = b.id
                                              limit 1) l)
    order by r.run_id
      for key share of r;

  -- Lock every task of the batch, in message order, before deciding anything, so the
  -- classification holds until the claim commits. One unique-index probe per message:
  -- the LIMIT keeps the planner from replacing the probes with a scan of the whole queue
  -- when its statistics are stale (as they are right after a burst of new work), which
  -- would make every claim cost as much as the backlog.
  select coalesce(array_agg(b.id order by b.id), '{}'),
         coalesce(array_agg(l.run_id order by b.id), '{}'),
         coalesce(array_agg(l.step_slug order by b.id), '{}'),
         coalesce(array_agg(l.task_index order by b.id), '{}')
    into task_ids, task_runs, task_steps, task_idxs
    from (select distinct u.id from unnest(message_ids) as u(id) order by u.id) b
    cross join lateral (select t.run_id, t.step_slug, t.task_index from switchyard.step_tasks t
                         where t.queue_name = queue and t.message_id = b.id
                         limit 1 for update) l;

  select array_agg(c.message_id order by c.message_id) filter (where c.class = 'unsupported'),
         array_agg(distinct coalesce(c.flow_slug || '/' || c.step_slug, '(no task)'))
           filter (where c.class = 'unsupported'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'stale'),
         coalesce(array_agg(c.message_id) filter (where c.class = 'eligible'), '{}'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'duplicate'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'paused')
    into unsupported_ids, unsupported_pairs, stale_ids, eligible_ids, duplicate_ids, paused_ids
    from switchyard.classify_batch(queue, message_ids, support) c;

  -- A message read before the SQL core took it off this queue names no task here: a move
  -- re-sent its task on the new version's queue (_follow_run_flow), a rerun deleted its task
  -- (_rerun_steps), each archiving the message, so it is in the queue no more. Such a read is
  -- stale, not unsupported work: it must not pause the function. Looked for only when the batch
  -- has an unsupported message (one probe of the queue's table per such message).
  if unsupported_ids is not null then
    execute format(
      'select array_agg(u.id order by u.id) from unnest($1) u(id)
        where not exists (select 1 from switchyard.step_tasks t
                           where t.queue_name = $2 and t.message_id = u.id)
          and not exists (select 1 from pgmq.%I m where m.msg_id = u.id)',
      pgmq.format_table_name(queue, 'q'))
      into gone_ids using unsupported_ids, queue;
    if gone_ids is not null then
      unsupported_ids := nullif(array(select u.id from unnest(unsupported_ids) u(id)
                                       where u.id <> all (gone_ids)), '{}');
      stale_ids := coalesce(stale_ids, '{}') || gone_ids;
    end if;
  end if;

  if unsupported_ids is not null then
    -- Refuse the whole batch: nothing claimed, no attempt consumed, nothing
    -- archived; every message visible again; the queue function pauses durably.
    perform switchyard._hide_messages(
      queue, message_ids, array_fill(0, array[cardinality(message_ids)]));
    reason := format(
      'unsupported work on queue %s at %s: message ids [%s]; unsupported flow/step pairs [%s]',
      queue, to_char(switchyard.clock_now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
      array_to_string(unsupported_ids, ', '), array_to_string(unsupported_pairs, ', '));
    update switchyard.worker_functions wf
       set paused_at = switchyard.clock_now(), pause_reason = reason,
           pause_detail = jsonb_build_object(
             'queue', queue,
             'message_ids', (select jsonb_agg(u.id::text order by u.id)
                               from unnest(unsupported_ids) u(id)),
             'pairs', to_jsonb(unsupported_pairs))
     where wf.function_name = worker.function_name and wf.paused_at is null;
    update switchyard.workers w
       set deprecated_at = coalesce(w.deprecated_at, switchyard.clock_now()), stop_reason = reason
     where w.worker_id = worker.worker_id;
    return query
      select 'unsupported'::text, c.message_id, queue, c.flow_slug, c.step_slug,
             null::uuid, null::int, null::int, null::jsonb, null::jsonb, null::int, null::int
        from switchyard.classify_batch(queue, message_ids, support) c
       where c.class = 'unsupported';
    return;
  end if;

  if stale_ids is not null then
    perform pgmq.archive(queue, stale_ids);
  end if;
  -- A paused run's messages (docs/design/rerun.md): hidden again, no attempt used;
  -- resume_run shows them. Answered 'throttled', which every worker release skips.
  if paused_ids is not null then
    perform switchyard._hide_messages(queue, paused_ids,
      array_fill(switchyard.pause_hide_seconds(), array[cardinality(paused_ids)]));
  end if;

  -- Flow control (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): only when a step
  -- on this queue has a rate limit
  -- or a keyed concurrency (one probe of a partial index that is empty otherwise). A task held
  -- back is not started and uses no attempt; its same message is visible again when it may run.
  if cardinality(eligible_ids) > 0
     and exists (select 1 from switchyard.steps s
                  where s.queue_name = queue
                    and (s.rate_limit is not null or s.concurrency_limit is not null)) then
    select coalesce(array_agg(f.message_id order by f.message_id)
                      filter (where f.wait_seconds is not null), '{}'),
           coalesce(array_agg(f.wait_seconds order by f.message_id)
                      filter (where f.wait_seconds is not null), '{}'),
           array_agg(f.message_id) filter (where f.wait_seconds is null and f.slot is not null),
           array_agg(f.slot) filter (where f.wait_seconds is null and f.slot is not null)
      into held_ids, held_secs, slot_ids, slot_keys
      from switchyard._flow_control(queue, eligible_ids) f;
    if cardinality(held_ids) > 0 then
      eligible_ids := array(select e from unnest(eligible_ids) e where e <> all (held_ids));
      perform switchyard._hide_messages(queue, held_ids, held_secs);
    end if;
  end if;

  with claimed as (
    update switchyard.step_tasks t
       set status = 'started', attempts_count = t.attempts_count + 1, started_at = switchyard.clock_now(),
           worker_id = worker.worker_id,
           -- The time earlier instances used of the step timeout: kept for the attempt they
           -- handed back (release_tasks), none for a new attempt.
           carried_ms = case when t.carried_attempt = t.attempts_count + 1 then t.carried_ms
                             else 0 end,
           carried_attempt = t.attempts_count + 1,
           concurrency_key = case when slot_ids is not null
                                  then slot_keys[array_position(slot_ids, t.message_id)] end
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
     where k.id = any (eligible_ids) and t.run_id = k.run_id and t.step_slug = k.step_slug
       and t.task_index = k.idx
    returning t.message_id, t.timeout - t.carried_ms / 1000 as seconds_left, t.flow_slug,
              t.step_slug, t.attempts_count, t.started_at - t.queued_at as waited
  )
  select coalesce(array_agg(c.message_id order by c.message_id), '{}'),
         coalesce(array_agg(c.seconds_left + switchyard.claim_margin_seconds()
                            order by c.message_id), '{}'),
         coalesce(array_agg(c.flow_slug), '{}'), coalesce(array_agg(c.step_slug), '{}'),
         coalesce(array_agg(c.attempts_count), '{}'),
         coalesce(array_agg(extract(epoch from c.waited)::double precision), '{}')
    into claimed_ids, claimed_secs, claimed_flows, claimed_steps, claimed_attempts, claimed_waits
    from claimed c;
  if cardinality(claimed_ids) > 0 then
    -- Only the messages the read did not already hide long enough
    -- (docs/design/claim.md#hiding-claimed-messages): none in the common case, and no statement
    -- at all when the read's earliest vt covers the longest need.
    if hidden_until is null
       or hidden_until < switchyard.queue_clock()
                         + make_interval(secs => (select max(s) from unnest(claimed_secs) s)) then
      perform switchyard._keep_hidden(queue, claimed_ids, claimed_secs);
    end if;
    -- The counters (docs/design/observability.md#counters-histograms-and-levels), in one call:
    -- every claim, the claims of a later attempt
    -- (retries), and, for a first attempt, how long its message waited since it could run
    -- (queued, plus the step's startDelay).
    select array_agg(c.metric), array_agg(c.f), array_agg(c.s), array_agg(c.w)
      into counted, claimed_flows, claimed_steps, claimed_waits
      from (select 'claims' as metric, x.f, x.s, null::double precision as w
              from unnest(claimed_flows, claimed_steps) as x(f, s)
            union all
            select 'retries', x.f, x.s, null
              from unnest(claimed_flows, claimed_steps, claimed_attempts) as x(f, s, a)
             where x.a > 1
            union all
            select 'queue_wait', x.f, x.s, x.w - st.start_delay
              from unnest(claimed_flows, claimed_steps, claimed_attempts, claimed_waits)
                     as x(f, s, a, w)
              join switchyard.steps st on st.flow_slug = x.f and st.step_slug = x.s
             where x.a = 1) c;
    perform switchyard._count_metrics(counted, array_fill(queue, array[cardinality(counted)]),
      claimed_flows, claimed_steps, null, claimed_waits);
  end if;
  if cardinality(held_ids) > 0 then
    perform switchyard._count_metrics(array['throttled'],
      array_fill(queue, array[cardinality(held_ids)]), null, null);
  end if;

  return query
    select 'claimed'::text, t.message_id, t.queue_name, t.flow_slug, t.step_slug, t.run_id,
           t.attempts_count, t.timeout,
           case
             -- A map task: its element of the run input (root map) or of the one
             -- dependency's output (docs/design/runs.md#map-steps). Never SQL NULL (a JSON
             -- null element is 'null'), so the worker never mistakes it for a root step.
             when st.step_type = 'map' then
               case when st.deps_count = 0 then r.input
                    else (select ds.output from switchyard.deps d
                            join switchyard.step_states ds
                              on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                           where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug
                           limit 1)
               end -> t.task_index
             -- As switchyard._dependency_outputs, inline: a skipped dependency is absent.
             when st.deps_count > 0 then
               coalesce((select jsonb_object_agg(d.dep_slug, ds.output)
                           from switchyard.deps d
                           join switchyard.step_states ds
                             on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                          where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug
                            and ds.status = 'completed'), '{}'::jsonb)
           end,
           case when row_number() over (partition by t.run_id order by t.message_id) = 1
                then r.input end,
           t.task_index, t.carried_ms
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
      -- One probe of the whole key per claimed task: a join here let the plan probe by
      -- run_id alone and filter the rest, reading every task of a map run up to the element.
      cross join lateral (select x.message_id, x.queue_name, x.flow_slug, x.step_slug,
                                 x.run_id, x.attempts_count, x.timeout, x.task_index, x.carried_ms
                            from switchyard.step_tasks x
                           where x.run_id = k.run_id and x.step_slug = k.step_slug
                             and x.task_index = k.idx
                           limit 1) t
      join switchyard.runs r on r.run_id = t.run_id
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
     where k.id = any (claimed_ids)
    union all
    select 'duplicate'::text, k.id, queue, t.flow_slug, t.step_slug,
           null, null, null, null, null, t.task_index, null
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
      cross join lateral (select x.flow_slug, x.step_slug, x.task_index
                            from switchyard.step_tasks x
                           where x.run_id = k.run_id and x.step_slug = k.step_slug
                             and x.task_index = k.idx
                           limit 1) t
     where k.id = any (duplicate_ids)
    union all
    select 'stale'::text, s, queue, null, null, null, null, null, null, null, null, null
      from unnest(stale_ids) s
    union all
    select 'throttled'::text, h, queue, null, null, null, null, null, null, null, null, null
      from unnest(held_ids || coalesce(paused_ids, '{}')) h;
end
$$;

