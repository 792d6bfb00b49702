-- Runs for callers (docs/ARCHITECTURE.md §14): who a run is for (runs.owner, set by
-- start_flow's new `owner` argument) and the 'cancelled' status of runs, step states and
-- tasks (cancel_run, 20261202001000). The functions below are their latest definitions
-- (20261202000700, 20261202000600) with only what these columns need:
--   start_flow      takes an owner; a repeated start for another owner is refused
--   _fail_run       a late failure of a cancelled run's task leaves its step cancelled
--   run_status      the run's owner and cancelled_at
--   dashboard_runs  a cancelled run finished when it was cancelled
--   prune           cancelled runs are finished runs too

alter table switchyard.runs
  drop constraint runs_status_check,
  add constraint runs_status_check
    check (status in ('started', 'completed', 'failed', 'cancelled')),
  add column owner uuid,                   -- who the run is for (start_flow's owner)
  add column cancelled_at timestamptz;     -- error holds the reason of a cancelled run

alter table switchyard.step_states
  drop constraint step_states_status_check,
  add constraint step_states_status_check
    check (status in ('created', 'started', 'completed', 'failed', 'skipped', 'cancelled'));

-- 'cancelled': queued when its run was cancelled; its message is archived.
alter table switchyard.step_tasks
  drop constraint step_tasks_status_check,
  add constraint step_tasks_status_check
    check (status in ('queued', 'started', 'completed', 'failed', 'skipped', 'cancelled'));

-- Prune's candidates by the time they finished, cancelled runs included.
drop index switchyard.runs_finished;
create index runs_finished on switchyard.runs ((coalesce(completed_at, failed_at, cancelled_at)))
  where status in ('completed', 'failed', 'cancelled');

-- ---------------------------------------------------------------------------------------------
-- start_flow with an owner (the three-argument one goes, so a call stays unambiguous)

drop function switchyard.start_flow(text, jsonb, uuid);

-- Starts a run of a concrete flow or of an alias's active version.
--
-- `run_id` (optional) makes the start idempotent: the caller chooses the id, and a second
-- start with the same id returns the existing run and starts nothing. The same id with
-- another input, naming another flow, or for another owner, is refused (23505). Two concurrent
-- starts with one id create one run: the second insert waits for the first on the primary key
-- and then finds its row (docs/ARCHITECTURE.md §5.8).
--
-- `owner` (optional) records who the run is for: its events carry it for row-level security
-- (docs/ARCHITECTURE.md §14).
create or replace function switchyard.start_flow(
  flow_or_alias text, input jsonb, run_id uuid default null, owner uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  concrete text;
  new_run uuid;
  existing record;
begin
  if input is null then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): input must be a JSON value, got SQL NULL (use ''null''::jsonb for JSON null)',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'input_sql_null', 'argument', 'input', 'value', null,
        'flow_or_alias', left(flow_or_alias, 200))::text;
  end if;
  concrete := switchyard.resolve_flow(flow_or_alias);
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner)
  select coalesce(start_flow.run_id, gen_random_uuid()), concrete, flow_or_alias, input, count(*),
         start_flow.owner
    from switchyard.steps st where st.flow_slug = concrete
  on conflict on constraint runs_pkey do nothing
  returning runs.run_id into new_run;
  if new_run is null then
    -- The id exists (committed, or committed while this insert waited for it): the same
    -- start again returns it; anything else under that id is refused.
    select r.flow_slug, r.started_as, r.input, r.owner into existing
      from switchyard.runs r where r.run_id = start_flow.run_id;
    -- Another owner's run is refused first, so the caller learns nothing else of it.
    if existing.owner is distinct from start_flow.owner then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started for another owner: '
        'a run id names one start; use a new id for another owner',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_owner', 'argument', 'owner', 'value', start_flow.owner::text,
          'run_id', start_flow.run_id)::text;
    end if;
    if existing.flow_slug <> concrete and existing.started_as <> flow_or_alias then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s already belongs to a run of flow %s (started as %s): '
        'a run id names one start; use a new id for another flow',
        to_json(flow_or_alias)::text, start_flow.run_id, to_json(existing.flow_slug)::text,
        to_json(existing.started_as)::text),
        detail = jsonb_build_object(
          'rule', 'run_id_other_flow', 'argument', 'run_id', 'value', start_flow.run_id::text,
          'flow_or_alias', left(flow_or_alias, 200), 'existing_flow_slug', existing.flow_slug,
          'existing_started_as', existing.started_as)::text;
    end if;
    if existing.input <> input then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started with another input: '
        'a run id names one start; use a new id for another input',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_input', 'argument', 'input', 'value', left(input::text, 200),
          'run_id', start_flow.run_id, 'existing_input', left(existing.input::text, 200))::text;
    end if;
    return start_flow.run_id;
  end if;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select new_run, st.flow_slug, st.step_slug, st.deps_count
    from switchyard.steps st where st.flow_slug = concrete;
  perform switchyard._start_ready_steps(new_run);
  return new_run;
end
$$;

-- ---------------------------------------------------------------------------------------------
-- Failure, status, dashboard and retention aware of cancelled runs

-- Final failure (20261202000700): the task, its step and its run fail. A step of a cancelled
-- run stays cancelled, and the run too (only a started run fails).
create or replace function switchyard._fail_run(task switchyard.step_tasks, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  run_status text;
begin
  update switchyard.step_tasks t
     set status = 'failed', failed_at = now(), error = error_text
   where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
  perform pgmq.archive(task.queue_name, task.message_id);
  update switchyard.step_states ss
     set status = 'failed', failed_at = now()
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug and ss.status <> 'cancelled';
  -- The run by key (locked), then its status: a status condition in the update let a plan
  -- made with stale statistics read every started run through runs_flow_started
  -- (docs/ARCHITECTURE.md §5.7).
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if run_status = 'started' then
    update switchyard.runs r
       set status = 'failed', failed_at = now(),
           error = format('step %s failed after %s attempt(s): %s', task.step_slug, task.attempts_count, error_text)
     where r.run_id = task.run_id;
  end if;
  -- The run's other queued messages (a map step: its other elements), by key and filtered
  -- afterwards, one archive per queue (_archive_queued).
  perform switchyard._archive_queued(task.run_id);
end
$$;

-- One run's status document with its steps (20261202000700), with its owner and when it was
-- cancelled.
create or replace function switchyard.run_status(run_id uuid)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'run_id', r.run_id, 'flow_slug', r.flow_slug, 'started_as', r.started_as,
    'status', r.status, 'output', r.output, 'error', r.error,
    'started_at', r.started_at, 'completed_at', r.completed_at, 'failed_at', r.failed_at,
    'cancelled_at', r.cancelled_at, 'owner', r.owner,
    -- Per step: its queue snapshot and attempts (a map step: the most attempts any element
    -- used), its number of tasks (a map step's elements), the first error in element order,
    -- and why it was skipped.
    'steps', (select coalesce(jsonb_agg(jsonb_build_object(
                'step_slug', ss.step_slug, 'status', ss.status,
                'queue_name', t.queue_name, 'attempts', coalesce(t.attempts, 0),
                'tasks', coalesce(t.tasks, 0), 'error', t.error,
                'skip_reason', ss.skip_reason) order by st.step_index), '[]')
                from switchyard.step_states ss
                join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                left join lateral (
                  select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts,
                         count(*)::int as tasks,
                         (array_agg(x.error order by x.task_index) filter (where x.error is not null))[1] as error
                    from switchyard.step_tasks x
                   where x.run_id = ss.run_id and x.step_slug = ss.step_slug
                ) t on true
               where ss.run_id = r.run_id))
  from switchyard.runs r where r.run_id = run_status.run_id
$$;

-- Recent runs, newest first (at most 200), optionally of one status, of flows with a step on
-- one queue, or one run. Each with its duration (so far, for a started run), its error and
-- failing step, and its steps in step order with their task's queue snapshot, attempts and
-- times: queued (the step became ready), started (the latest attempt), finished. A map step
-- (docs/ARCHITECTURE.md §5.10) has one task per element: its row sums them up (the most
-- attempts any element used, the first error in element order, `tasks` the element count).
create or replace function switchyard.dashboard_runs(
  max_runs int default 25, run_status text default null, queue_name text default null,
  run_id uuid default null
)
returns table (
  run_id uuid, flow_slug text, started_as text, status text, started_at timestamptz,
  finished_at timestamptz, duration_ms bigint, error text, failed_step text, steps jsonb
)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.flow_slug, r.started_as, r.status, r.started_at,
         coalesce(r.completed_at, r.failed_at, r.cancelled_at),
         (extract(epoch from coalesce(r.completed_at, r.failed_at, r.cancelled_at, now()) - r.started_at)
           * 1000)::bigint,
         r.error,
         (select ss.step_slug from switchyard.step_states ss
           where ss.run_id = r.run_id and ss.status = 'failed'
           order by ss.failed_at nulls last, ss.step_slug limit 1),
         (select coalesce(jsonb_agg(jsonb_build_object(
                   'step_slug', ss.step_slug, 'step_index', st.step_index, 'status', ss.status,
                   'queue_name', coalesce(t.queue_name, st.queue_name),
                   'attempts', coalesce(t.attempts_count, 0),
                   'max_attempts', coalesce(t.max_attempts, st.max_attempts),
                   'queued_at', t.queued_at, 'started_at', t.started_at,
                   'finished_at', coalesce(ss.completed_at, ss.failed_at, ss.skipped_at,
                                           t.completed_at, t.failed_at),
                   'error', t.error, 'tasks', t.tasks) order by st.step_index), '[]'::jsonb)
            from switchyard.step_states ss
            join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
            left join lateral (
              select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts_count,
                     max(x.max_attempts) as max_attempts, min(x.queued_at) as queued_at,
                     max(x.started_at) as started_at, max(x.completed_at) as completed_at,
                     max(x.failed_at) as failed_at, count(*)::int as tasks,
                     (array_agg(x.error order by x.task_index)
                        filter (where x.error is not null))[1] as error
                from switchyard.step_tasks x
               where x.run_id = ss.run_id and x.step_slug = ss.step_slug
            ) t on true
           where ss.run_id = r.run_id)
    from switchyard.runs r
   where (dashboard_runs.run_id is null or r.run_id = dashboard_runs.run_id)
     and (dashboard_runs.run_status is null or r.status = dashboard_runs.run_status)
     and (dashboard_runs.queue_name is null or exists (
           select 1 from switchyard.steps st
            where st.flow_slug = r.flow_slug and st.queue_name = dashboard_runs.queue_name))
   order by r.started_at desc, r.run_id
   limit least(greatest(coalesce(dashboard_runs.max_runs, 25), 1), 200)
$$;

-- Retention (20261202000600): finished runs are completed, failed or cancelled ones.
create or replace function switchyard.prune(older_than interval, batch_size int default 1000)
returns switchyard.prune_result
language plpgsql
volatile
security definer
set search_path = ''
-- Key probes only, as on the claim path (docs/ARCHITECTURE.md §5.7): a long prune loop
-- runs in one session, and a cached generic plan must not turn into a scan of the history.
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
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
    raise exception using errcode = '22023', message = format(
      'prune: older_than %s is invalid: use an interval of at least 1 hour (a worker may '
      'claim a message up to its visibility timeout, at most 3600 s, after reading it)',
      coalesce(older_than::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'interval_min', 'argument', 'older_than', 'value', older_than::text,
        'min', '1 hour')::text;
  end if;
  if batch_size is null or batch_size < 1 or batch_size > 10000 then
    raise exception using errcode = '22023', message = format(
      'prune: batch_size %s is invalid: use an integer from 1 to 10000',
      coalesce(batch_size::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_range', 'argument', 'batch_size', 'value', batch_size::text,
        'min', 1, 'max', 10000)::text;
  end if;
  cutoff := now() - older_than;

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
                         where m.msg_id = any ($1) and m.vt <= clock_timestamp()
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
    with d as (delete from switchyard.runs r
                where r.run_id = any (kept) returning 1)
    select count(*) into result.runs from d;
  end if;

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
  -- live by any window (§6), and stall recovery treats a missing worker as a stopped one.
  with d as (
    delete from switchyard.workers w
     where w.worker_id in (select x.worker_id from switchyard.workers x
                            where x.last_heartbeat_at < cutoff
                              and coalesce(x.stopped_at, x.last_heartbeat_at) < cutoff
                            limit batch_size
                              for update skip locked)
    returning 1)
  select count(*) into result.workers from d;

  return result;
end
$$;

-- ---------------------------------------------------------------------------------------------
-- Privileges as in the grants migration: nothing for PUBLIC (or PostgREST's anon and
-- authenticated roles); the service role may start runs. (Functions replaced with their
-- signature keep their privileges.)
revoke execute on function switchyard.start_flow(text, jsonb, uuid, uuid) from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke execute on function switchyard.start_flow(text, jsonb, uuid, uuid) '
                     'from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant execute on function switchyard.start_flow(text, jsonb, uuid, uuid) to service_role;
  end if;
end
$$;
