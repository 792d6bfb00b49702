-- Retention (docs/ARCHITECTURE.md §6, "Retention"): switchyard.prune deletes finished runs
-- with every row they left behind, in bounded batches that are safe while workers run, and
-- switchyard.schedule_prune installs it as a pg_cron job.
--
-- One call removes at most batch_size runs that completed or failed before
-- now() - older_than, with their step states, their tasks, and the PGMQ archive rows of
-- their messages (pgmq.a_<queue>, by message id). It also removes, at most batch_size of
-- each, the keep-alive's wake records and the rows of workers that stopped or went silent
-- before the same cutoff. Nothing else is touched: other runs, archive rows of other flows
-- and runs, open work.
--
-- Safety while workers run:
--   * Only completed and failed runs, finished before the cutoff. The cutoff is at least an
--     hour old: a worker claims a message within its visibility timeout (at most 3600 s)
--     after reading it, and a claim whose task was deleted would be refused as unsupported
--     work (docs/ARCHITECTURE.md §5.3). An hour-old finished run has no claim in flight.
--   * Runs and their tasks are locked with SKIP LOCKED: a run or task that a completion, a
--     failure, a stall sweep or another prune holds is left for a later call, so prune never
--     waits on the claim path and cannot deadlock with it.
--   * A message of the run still on its queue (a task of a failed run that another branch
--     was still running, or that stall recovery made visible again) is deleted only when no
--     reader holds it (visibility passed, and locked here SKIP LOCKED, as pgmq.read locks);
--     otherwise the run is held back for a later call (held_runs).

-- Finished runs by the time they finished: prune's candidates, oldest first. Keyed by a
-- column the hot path never filters on, so it cannot be picked for a claim or completion.
create index runs_finished on switchyard.runs ((coalesce(completed_at, failed_at)))
  where status in ('completed', 'failed');
-- Wake records by age, for the same cutoff.
create index wake_requests_requested on switchyard.wake_requests (requested_at);

create type switchyard.prune_result as (
  runs bigint,              -- runs deleted
  step_states bigint,       -- their step states
  step_tasks bigint,        -- their tasks
  archive_rows bigint,      -- PGMQ archive rows of their messages (pgmq.a_<queue>)
  queue_messages bigint,    -- their stale messages still on a queue, deleted
  held_runs bigint,         -- old enough, but locked by someone or a message still held: later
  wake_requests bigint,     -- keep-alive wake records older than the cutoff
  workers bigint            -- rows of workers stopped or silent since before the cutoff
);

-- Deletes one bounded batch (see the top of this file) and returns what it removed. Call it
-- until it returns zero runs; `deno task prune` and the pg_cron job do.
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
           where r.status in ('completed', 'failed')
             and coalesce(r.completed_at, r.failed_at) < cutoff
           order by coalesce(r.completed_at, r.failed_at)
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

-- The SQL a cron job runs for retention. Useful on its own where pg_cron lives in another
-- database (cron.schedule_in_database(name, schedule, <this>, db)).
create or replace function switchyard.prune_command(
  older_than interval default '7 days',
  batch_size int default 1000
)
returns text
language plpgsql
immutable
security definer
set search_path = ''
as $$
begin
  if older_than is null or older_than < interval '1 hour' then
    raise exception using errcode = '22023', message = format(
      'prune_command: older_than %s is invalid: use an interval of at least 1 hour',
      coalesce(older_than::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'interval_min', 'argument', 'older_than', 'value', older_than::text,
        'min', '1 hour')::text;
  end if;
  if batch_size is null or batch_size < 1 or batch_size > 10000 then
    raise exception using errcode = '22023', message = format(
      'prune_command: batch_size %s is invalid: use an integer from 1 to 10000',
      coalesce(batch_size::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_range', 'argument', 'batch_size', 'value', batch_size::text,
        'min', 1, 'max', 10000)::text;
  end if;
  return format('select runs from switchyard.prune(%L::interval, %s)', older_than::text, batch_size);
end
$$;

-- Creates or updates the pg_cron job 'switchyard_prune' in this database and returns its
-- job id. Each run removes one batch; the default (every minute, 1000 runs) keeps up with
-- up to 1.4 million finished runs a day.
create or replace function switchyard.schedule_prune(
  older_than interval default '7 days',
  schedule text default '* * * * *',
  batch_size int default 1000
)
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  job bigint;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    raise exception using errcode = 'SY020', message = format(
      'schedule_prune: pg_cron is not installed in database %s', to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in the '
             'database named by cron.database_name: there run select cron.schedule_in_database('
             '''switchyard_prune'', ''* * * * *'', <switchyard.prune_command()>, <this database>)';
  end if;
  if schedule is null or trim(schedule) = '' then
    raise exception using errcode = '22023', message =
      'schedule_prune: schedule is missing: use cron syntax such as ''* * * * *''',
      detail = jsonb_build_object(
        'rule', 'schedule_missing', 'argument', 'schedule', 'value', left(schedule, 200))::text;
  end if;
  -- pg_cron updates a job of the same name (and user) instead of adding another.
  execute 'select cron.schedule($1, $2, $3)' into job
    using 'switchyard_prune', schedule, switchyard.prune_command(older_than, batch_size);
  return job;
end
$$;

-- Removes the retention job; false when there was none.
create or replace function switchyard.unschedule_prune()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  removed boolean := false;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    return false;
  end if;
  execute 'select exists (select 1 from cron.job where jobname = $1)' into removed
    using 'switchyard_prune';
  if removed then
    execute 'select cron.unschedule($1)' using 'switchyard_prune';
  end if;
  return removed;
end
$$;

-- Privileges as in the grants migration: nothing for PUBLIC (or PostgREST's anon and
-- authenticated roles); the service role may run retention.
revoke execute on function
  switchyard.prune(interval, int),
  switchyard.prune_command(interval, int),
  switchyard.schedule_prune(interval, text, int),
  switchyard.unschedule_prune()
from public;

do $$
begin
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant execute on function
      switchyard.prune(interval, int),
      switchyard.prune_command(interval, int),
      switchyard.schedule_prune(interval, text, int),
      switchyard.unschedule_prune()
    to service_role;
  end if;
end
$$;
