-- Retention (docs/design/local-runs.md): deletes one batch of runs finished before `older_than`
-- (completed, failed or cancelled), with their tasks and events; a run whose message a worker
-- still holds is kept for a later batch.
create or replace function switchyard.prune(older_than interval, batch_size int default 1000)
returns switchyard.prune_result
language plpgsql
volatile
security definer
set search_path = ''
-- Key probes only, as on the claim path (docs/design/claim.md#planner-settings): a long prune loop
-- runs in one session, and a cached generic plan must not turn into a scan of the history.
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
-- No JIT: with scans priced out, a statement that must still scan (the workers by heartbeat,
-- the metric counters' other shards, both small) is costed past jit_above_cost, and compiling
-- it took about 0.6 s of CPU per statement, over 1 s per call, on an idle database.
set jit = off
as $$
declare
  cutoff timestamptz;
  picked uuid[];          -- candidate runs, locked
  held uuid[] := '{}';    -- candidates left for a later call
  kept uuid[];            -- the runs this call deletes
  t_runs uuid[];          -- the candidates' tasks (parallel arrays)
  t_queues text[];
  t_messages bigint[];
  t_locked boolean[];     -- whether this call holds the task's lock
  q record;
  present bigint[];
  free bigint[];
  table_name text;
  n bigint;
  result switchyard.prune_result := row(0, 0, 0, 0, 0, 0, 0, 0);
begin
  if older_than is null or older_than < interval '1 hour' then
    perform switchyard._refuse('22023', 'interval_min', 'older_than', older_than::text, format(
      'prune: older_than %s is invalid: use an interval of at least 1 hour (a worker may '
      'claim a message up to its visibility timeout, at most 3600 s, after reading it)',
      coalesce(older_than::text, 'null')),
      context => jsonb_build_object('min', '1 hour'));
  end if;
  if batch_size is null or batch_size < 1 or batch_size > 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'batch_size', batch_size::text, format(
      'prune: batch_size %s is invalid: use an integer from 1 to 10000',
      coalesce(batch_size::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  cutoff := switchyard.clock_now() - older_than;

  -- The oldest finished runs nobody holds.
  select coalesce(array_agg(c.run_id), '{}') into picked
    from (select r.run_id from switchyard.runs r
           where r.status in ('completed', 'failed', 'cancelled')
             and coalesce(r.completed_at, r.failed_at, r.cancelled_at) < cutoff
           order by coalesce(r.completed_at, r.failed_at, r.cancelled_at)
           limit batch_size
             for update skip locked) c;

  if cardinality(picked) > 0 then
    -- Their tasks, by key (parallel arrays). A run with a task someone holds is held back.
    select coalesce(array_agg(t.run_id), '{}'), coalesce(array_agg(t.queue_name), '{}'),
           coalesce(array_agg(t.message_id), '{}'), coalesce(array_agg(l.run_id is not null), '{}')
      into t_runs, t_queues, t_messages, t_locked
      from unnest(picked) as p(run_id)
      cross join lateral (select x.run_id, x.step_slug, x.task_index, x.queue_name, x.message_id
                            from switchyard.step_tasks x where x.run_id = p.run_id) t
      left join lateral (select x.run_id from switchyard.step_tasks x
                          where x.run_id = t.run_id and x.step_slug = t.step_slug
                            and x.task_index = t.task_index
                          limit 1 for update skip locked) l on true;
    select coalesce(array_agg(distinct t.run_id), '{}') into held
      from unnest(t_runs, t_locked) as t(run_id, locked) where not t.locked;

    -- Messages still on their queue: free (nobody holds them; locked here) or held.
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from unnest(t_runs, t_queues, t_messages) as t(run_id, queue_name, message_id)
       where not t.run_id = any (held)
       group by t.queue_name order by t.queue_name
    loop
      table_name := pgmq.format_table_name(q.queue_name, 'q');
      continue when to_regclass('pgmq.' || quote_ident(table_name)) is null;
      execute format('select coalesce(array_agg(m.msg_id), ''{}'') from pgmq.%I m
                       where m.msg_id = any ($1)', table_name)
        into present using q.ids;
      continue when cardinality(present) = 0;
      execute format('select coalesce(array_agg(m.msg_id), ''{}'') from (
                        select m.msg_id from pgmq.%I m
                         where m.msg_id = any ($1) and m.vt <= switchyard.queue_clock()
                         order by m.msg_id for update skip locked) m', table_name)
        into free using present;
      select held || coalesce(array_agg(distinct t.run_id), '{}') into held
        from unnest(t_runs, t_queues, t_messages) as t(run_id, queue_name, message_id)
       where t.queue_name = q.queue_name and t.message_id = any (present)
         and not t.message_id = any (free);
    end loop;

    select coalesce(array_agg(p.run_id), '{}') into kept
      from unnest(picked) as p(run_id) where not p.run_id = any (held);
    result.held_runs := cardinality(picked) - cardinality(kept);

    -- Their messages: the stale ones still on a queue (locked above), then the archive rows.
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from unnest(t_runs, t_queues, t_messages) as t(run_id, queue_name, message_id)
       where t.run_id = any (kept)
       group by t.queue_name order by t.queue_name
    loop
      table_name := pgmq.format_table_name(q.queue_name, 'q');
      if to_regclass('pgmq.' || quote_ident(table_name)) is not null then
        execute format('with d as (delete from pgmq.%I m where m.msg_id = any ($1) returning 1)
                        select count(*) from d', table_name)
          into n using q.ids;
        result.queue_messages := result.queue_messages + n;
      end if;
      table_name := pgmq.format_table_name(q.queue_name, 'a');
      if to_regclass('pgmq.' || quote_ident(table_name)) is not null then
        execute format('with d as (delete from pgmq.%I m where m.msg_id = any ($1) returning 1)
                        select count(*) from d', table_name)
          into n using q.ids;
        result.archive_rows := result.archive_rows + n;
      end if;
    end loop;

    with d as (delete from switchyard.step_tasks t
                where t.run_id = any (kept) returning 1)
    select count(*) into result.step_tasks from d;
    with d as (delete from switchyard.step_states ss
                where ss.run_id = any (kept) returning 1)
    select count(*) into result.step_states from d;
    -- Their start keys (docs/design/flow-control.md#start-keys): a dedupe key still within its TTL
    -- outlives its run, with the expiry it has; the others go with the run.
    update switchyard.start_keys k
       set expires_at = coalesce(r.completed_at, r.failed_at, r.cancelled_at)
                        + k.ttl * interval '1 second'
      from switchyard.runs r
     where k.run_id = any (kept) and r.run_id = k.run_id and k.mode = 'dedupe'
       and coalesce(r.completed_at, r.failed_at, r.cancelled_at) + k.ttl * interval '1 second'
           > switchyard.clock_now();
    delete from switchyard.start_keys k where k.run_id = any (kept) and k.expires_at is null;
    with d as (delete from switchyard.runs r
                where r.run_id = any (kept) returning 1)
    select count(*) into result.runs from d;
  end if;

  -- Dedupe keys of pruned runs whose TTL is over.
  delete from switchyard.start_keys k
   where (k.started_as, k.key) in (select x.started_as, x.key from switchyard.start_keys x
                                    where x.expires_at <= switchyard.clock_now()
                                    order by x.expires_at
                                    limit batch_size
                                      for update skip locked);

  with d as (
    delete from switchyard.wake_requests w
     where w.wake_id in (select x.wake_id from switchyard.wake_requests x
                          where x.requested_at < cutoff
                          order by x.requested_at
                          limit batch_size
                            for update skip locked)
    returning 1)
  select count(*) into result.wake_requests from d;

  -- A worker row whose worker stopped, or has not heart-beat, since before the cutoff: not
  -- live by any window (docs/design/versions.md), and stall recovery treats a missing worker as a
  -- stopped one.
  with d as (
    delete from switchyard.workers w
     where w.worker_id in (select x.worker_id from switchyard.workers x
                            where x.last_heartbeat_at < cutoff
                              and coalesce(x.stopped_at, x.last_heartbeat_at) < cutoff
                            limit batch_size
                              for update skip locked)
    returning 1)
  select count(*) into result.workers from d;

  -- The counters' rows of other sessions fold into shard 0
  -- (docs/design/observability.md#counters-histograms-and-levels): the counters keep their
  -- sums while their table follows the sessions in use.
  perform switchyard.fold_metric_counters();
  return result;
end
$$;
