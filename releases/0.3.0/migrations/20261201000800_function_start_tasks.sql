-- The claim path (docs/ARCHITECTURE.md §5): classify every message of a batch read from one
-- physical queue, then claim the eligible ones, or refuse the whole batch.

create type switchyard.task_claim as (
  disposition text,        -- claimed | duplicate | stale | unsupported
  message_id bigint,
  queue_name text,
  flow_slug text,          -- null when the message has no task
  step_slug text,
  run_id uuid,
  attempt int,
  timeout int,
  input jsonb,             -- the outputs of the dependencies; null for a root step, whose
                           -- handler input is the flow input
  flow_input jsonb         -- the run's input, on the first claimed row of each run in the
                           -- batch only (a large input travels once per batch, not per row)
);

-- Visibility of a claimed message: the step's timeout plus this margin, so the
-- message does not reappear while its handler may legitimately still run.
create or replace function switchyard.claim_margin_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 5 $$;

-- The key of a support set of `flow/step` pairs in switchyard.pair_sets (a hash of
-- the sorted, de-duplicated set), adding the set when it is new. Registration calls
-- it once per worker; claims then look pairs up by index.
create or replace function switchyard.pair_set(pairs text[])
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  key text;
begin
  select encode(sha256(convert_to(
           coalesce(array_agg(distinct p.pair order by p.pair), '{}')::text, 'UTF8')), 'hex')
    into key
    from unnest(pairs) as p(pair)
   where p.pair is not null;
  if not exists (select 1 from switchyard.pair_sets s where s.pair_set = key) then
    insert into switchyard.pair_sets (pair_set, pair)
    select distinct key, p.pair from unnest(pairs) as p(pair) where p.pair is not null
    on conflict do nothing;
  end if;
  return key;
end
$$;

-- Classification of one batch (no side effects). Identity is (queue_name,
-- message_id) only: message bodies are never trusted. `pair_set` is a key from
-- switchyard.pair_set(); each message costs index lookups only, so the cost does
-- not grow with the size of the registry.
--   eligible    supported pair, task queued, run started
--   duplicate   supported pair, task started, run started (left to stall recovery)
--   stale       supported pair, task terminal or run ended (archived)
--   unsupported no task for the message on this queue, or an unsupported pair
-- PL/pgSQL rather than SQL so that the plan is cached per session.
create or replace function switchyard.classify_batch(
  queue text, message_ids bigint[], pair_set text
)
returns table (message_id bigint, class text, flow_slug text, step_slug text)
language plpgsql
stable
set search_path = ''
as $$
begin
  return query
  select b.id,
         case
           when t.run_id is null or not t.supported then 'unsupported'
           when t.run_status <> 'started' or t.status in ('completed', 'failed') then 'stale'
           when t.status = 'started' then 'duplicate'
           else 'eligible'
         end,
         t.flow_slug,
         t.step_slug
    from (select distinct u.id from unnest(message_ids) as u(id)) b
    left join lateral (
      select x.run_id, x.flow_slug, x.step_slug, x.status,
             (select r.status from switchyard.runs r where r.run_id = x.run_id) as run_status,
             exists (select 1 from switchyard.pair_sets s
                      where s.pair_set = classify_batch.pair_set
                        and s.pair = x.flow_slug || '/' || x.step_slug) as supported
        from switchyard.step_tasks x
       where x.queue_name = queue and x.message_id = b.id
       limit 1  -- a probe per message, never a scan of the queue (see start_tasks)
    ) t on true
   order by b.id;
end
$$;

-- Sets the visibility of a batch of messages in one statement: the claimed messages
-- (their step's timeout plus the margin) and a refused batch (visible again at once).
-- PGMQ 1.5 has only a one-message set_vt, and a call per message (dynamic SQL each) was
-- a sixth of the database time of a claim. This writes PGMQ's documented queue table
-- (msg_id, read_ct, enqueued_at, vt, message, headers) the way set_vt does (vt =
-- clock_timestamp() + seconds), naming the table with PGMQ's own
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
    'update pgmq.%I q set vt = clock_timestamp() + make_interval(secs => v.secs)
       from unnest($1::bigint[], $2::int[]) as v(id, secs)
      where q.msg_id = v.id',
    pgmq.format_table_name(queue, 'q'))
  using ids, seconds;
end
$$;

-- `supported_pairs` null means the exact set the worker registered (the worker's
-- normal call: the set is sent once, at registration).
--
-- Index probes only (enable_seqscan/hashjoin/mergejoin off for this call and the
-- SQL functions it calls): every statement here touches a batch of at most a few hundred
-- rows, found by key. PL/pgSQL caches a generic plan per statement after a few calls;
-- for the joins of the batch's arrays to the task table that plan (a hash join over a
-- scan of the table) was chosen while the tables were small, and in a worker's
-- long-lived session the claim then slowed down as the tables grew (in the bench, its
-- task update went from 0.4 to 3.1 ms per batch within 15,000 tasks, and a worker from
-- 1,700 to 700 tasks/s). Planning every call instead (plan_cache_mode =
-- force_custom_plan) was tried and measured worse: planning time on every call, and the
-- completion's first statement (a join of jsonb_array_elements to the task table) still
-- took 3 ms per batch instead of 0.3.
create or replace function switchyard.start_tasks(
  queue_name text, message_ids bigint[], worker_id uuid, supported_pairs text[] default null
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
  eligible_ids bigint[];
  duplicate_ids bigint[];
  claimed_ids bigint[];
  claimed_secs int[];
  reason text;
  support text;
  task_ids bigint[];      -- the batch's tasks (parallel arrays, in message order)
  task_runs uuid[];
  task_steps text[];
begin
  if message_ids is null or cardinality(message_ids) = 0 then
    return;
  end if;
  select w.worker_id, w.queue_name, w.function_name, w.pair_set into worker
    from switchyard.workers w where w.worker_id = start_tasks.worker_id;
  if not found then
    raise exception using errcode = '22023', message = format(
      'start_tasks: worker %s is not registered', start_tasks.worker_id),
      detail = jsonb_build_object(
        'rule', 'worker_not_registered', 'argument', 'worker_id',
        'value', start_tasks.worker_id::text)::text;
  end if;
  if worker.queue_name <> queue then
    raise exception using errcode = '22023', message = format(
      'start_tasks: worker %s polls queue %s, not %s', worker.worker_id,
      to_json(worker.queue_name)::text, to_json(queue)::text),
      detail = jsonb_build_object(
        'rule', 'worker_queue_mismatch', 'argument', 'queue_name', 'value', left(queue, 200),
        'worker_id', worker.worker_id, 'worker_queue', worker.queue_name)::text;
  end if;
  support := case when supported_pairs is null then worker.pair_set
                  else switchyard.pair_set(supported_pairs) end;

  -- Lock every task of the batch, in message order, before deciding anything, so the
  -- classification holds until the claim commits. One unique-index probe per message:
  -- the LIMIT keeps the planner from replacing the probes with a scan of the whole queue
  -- when its statistics are stale (as they are right after a burst of new work), which
  -- would make every claim cost as much as the backlog.
  select coalesce(array_agg(b.id order by b.id), '{}'),
         coalesce(array_agg(l.run_id order by b.id), '{}'),
         coalesce(array_agg(l.step_slug order by b.id), '{}')
    into task_ids, task_runs, task_steps
    from (select distinct u.id from unnest(message_ids) as u(id) order by u.id) b
    cross join lateral (select t.run_id, t.step_slug from switchyard.step_tasks t
                         where t.queue_name = queue and t.message_id = b.id
                         limit 1 for update) l;

  select array_agg(c.message_id order by c.message_id) filter (where c.class = 'unsupported'),
         array_agg(distinct coalesce(c.flow_slug || '/' || c.step_slug, '(no task)'))
           filter (where c.class = 'unsupported'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'stale'),
         coalesce(array_agg(c.message_id) filter (where c.class = 'eligible'), '{}'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'duplicate')
    into unsupported_ids, unsupported_pairs, stale_ids, eligible_ids, duplicate_ids
    from switchyard.classify_batch(queue, message_ids, support) c;

  if unsupported_ids is not null then
    -- Refuse the whole batch: nothing claimed, no attempt consumed, nothing
    -- archived; every message visible again; the queue function pauses durably.
    perform switchyard._hide_messages(
      queue, message_ids, array_fill(0, array[cardinality(message_ids)]));
    reason := format(
      'unsupported work on queue %s at %s: message ids [%s]; unsupported flow/step pairs [%s]',
      queue, to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
      array_to_string(unsupported_ids, ', '), array_to_string(unsupported_pairs, ', '));
    update switchyard.worker_functions wf
       set paused_at = now(), pause_reason = reason,
           pause_detail = jsonb_build_object(
             'queue', queue,
             'message_ids', (select jsonb_agg(u.id::text order by u.id)
                               from unnest(unsupported_ids) u(id)),
             'pairs', to_jsonb(unsupported_pairs))
     where wf.function_name = worker.function_name and wf.paused_at is null;
    update switchyard.workers w
       set deprecated_at = coalesce(w.deprecated_at, now()), stop_reason = reason
     where w.worker_id = worker.worker_id;
    return query
      select 'unsupported'::text, c.message_id, queue, c.flow_slug, c.step_slug,
             null::uuid, null::int, null::int, null::jsonb, null::jsonb
        from switchyard.classify_batch(queue, message_ids, support) c
       where c.class = 'unsupported';
    return;
  end if;

  if stale_ids is not null then
    perform pgmq.archive(queue, stale_ids);
  end if;

  with claimed as (
    update switchyard.step_tasks t
       set status = 'started', attempts_count = t.attempts_count + 1, started_at = now(),
           worker_id = worker.worker_id
      from unnest(task_ids, task_runs, task_steps) as k(id, run_id, step_slug)
     where k.id = any (eligible_ids) and t.run_id = k.run_id and t.step_slug = k.step_slug
    returning t.message_id, t.timeout
  )
  select coalesce(array_agg(c.message_id order by c.message_id), '{}'),
         coalesce(array_agg(c.timeout + switchyard.claim_margin_seconds() order by c.message_id), '{}')
    into claimed_ids, claimed_secs
    from claimed c;
  if cardinality(claimed_ids) > 0 then
    perform switchyard._hide_messages(queue, claimed_ids, claimed_secs);
  end if;

  return query
    select 'claimed'::text, t.message_id, t.queue_name, t.flow_slug, t.step_slug, t.run_id,
           t.attempts_count, t.timeout,
           case when st.deps_count > 0 then
                  (select jsonb_object_agg(d.dep_slug, ds.output)
                     from switchyard.deps d
                     join switchyard.step_states ds
                       on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                    where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug)
           end,
           case when row_number() over (partition by t.run_id order by t.message_id) = 1
                then r.input end
      from unnest(task_ids, task_runs, task_steps) as k(id, run_id, step_slug)
      join switchyard.step_tasks t on t.run_id = k.run_id and t.step_slug = k.step_slug
      join switchyard.runs r on r.run_id = t.run_id
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
     where k.id = any (claimed_ids)
    union all
    select 'duplicate'::text, k.id, queue, t.flow_slug, t.step_slug,
           null, null, null, null, null
      from unnest(task_ids, task_runs, task_steps) as k(id, run_id, step_slug)
      join switchyard.step_tasks t on t.run_id = k.run_id and t.step_slug = k.step_slug
     where k.id = any (duplicate_ids)
    union all
    select 'stale'::text, s, queue, null, null, null, null, null, null, null
      from unnest(stale_ids) s;
end
$$;
