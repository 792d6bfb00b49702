-- Read-only SQL functions of the dashboard (`deno task dashboard`). They change nothing
-- and decide nothing: versions come from switchyard.drain_status, an open fence from
-- switchyard.fence_status, pause and resume go through pause_function/resume_function
-- (docs/ARCHITECTURE.md §6). Every argument is clamped to its range instead of raising:
-- the TypeScript API refuses bad parameters with 400 before it calls these.

-- Recent runs first, for dashboard_runs.
create index if not exists runs_started_at on switchyard.runs (started_at desc);

-- Every catalogued queue with its depth, read from PGMQ's queue table (the documented
-- layout the contract suite checks; docs/ARCHITECTURE.md §5.4): messages visible now,
-- hidden (read or claimed, or waiting for a retry's delay), and the oldest one's age.
create or replace function switchyard.dashboard_queues()
returns table (
  queue_name text, pgmq_name text, ownership text, owner_flow text,
  visible bigint, hidden bigint, oldest_enqueued_at timestamptz
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  tbl text;
begin
  for q in
    select x.queue_name, x.pgmq_name, x.ownership, x.owner_flow
      from switchyard.queues x order by x.queue_name
  loop
    queue_name := q.queue_name;
    pgmq_name := q.pgmq_name;
    ownership := q.ownership;
    owner_flow := q.owner_flow;
    visible := null;
    hidden := null;
    oldest_enqueued_at := null;
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'select count(*) filter (where vt <= clock_timestamp()),
                count(*) filter (where vt > clock_timestamp()), min(enqueued_at)
           from pgmq.%I', tbl)
        into visible, hidden, oldest_enqueued_at;
    end if;
    return next;
  end loop;
end
$$;

-- Every queue function of switchyard.function_states (its flags and live workers) with its
-- unstopped workers, newest first (at most 20 each); `live` is switchyard._worker_live, the
-- one definition of docs/ARCHITECTURE.md §6. A window below 1 second counts as 1.
create or replace function switchyard.dashboard_functions(heartbeat_window_seconds int default 15)
returns table (
  function_name text, queue_name text, enabled boolean, paused_at timestamptz,
  pause_reason text, last_woken_at timestamptz, live_workers int, workers jsonb
)
language sql
stable
security definer
set search_path = ''
as $$
  select s.function_name, s.queue_name, s.enabled, s.paused_at, s.pause_reason, s.last_woken_at,
         s.live_workers,
         coalesce((
           select jsonb_agg(jsonb_build_object(
                    'worker_id', w.worker_id, 'started_at', w.started_at,
                    'last_heartbeat_at', w.last_heartbeat_at, 'deprecated_at', w.deprecated_at,
                    'live', switchyard._worker_live(w.stopped_at, w.deprecated_at,
                                                    w.last_heartbeat_at, h.secs))
                  order by w.started_at desc)
             from (select * from switchyard.workers w0
                    where w0.function_name = s.function_name and w0.stopped_at is null
                    order by w0.started_at desc limit 20) w
         ), '[]'::jsonb)
    from (select greatest(coalesce(dashboard_functions.heartbeat_window_seconds, 15), 1) as secs) h
    cross join lateral switchyard.function_states(null, h.secs) s
   order by s.function_name
$$;

-- Recent runs, newest first (at most 200), optionally of one status, of flows with a step on
-- one queue, or one run. Each with its duration (so far, for a started run), its error and
-- failing step, and its steps in step order with their task's queue snapshot, attempts and
-- times: queued (the step became ready), started (the latest attempt), finished.
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
         coalesce(r.completed_at, r.failed_at),
         (extract(epoch from coalesce(r.completed_at, r.failed_at, now()) - r.started_at)
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
                   'finished_at', coalesce(ss.completed_at, ss.failed_at, t.completed_at,
                                           t.failed_at),
                   'error', t.error) order by st.step_index), '[]'::jsonb)
            from switchyard.step_states ss
            join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
            left join switchyard.step_tasks t on t.run_id = ss.run_id and t.step_slug = ss.step_slug
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

-- Completed tasks per queue and minute over the last `minutes` minutes (1-1440, default 60),
-- the current minute last, every minute present (0 when none). A completion archives its
-- message in the same transaction (§5.5), so the count starts from PGMQ's archive table,
-- whose archived_at index bounds it to the window, and keeps the archived messages whose
-- task completed (stale and failed messages are archived too).
create or replace function switchyard.dashboard_throughput(minutes int default 60)
returns table (queue_name text, minute timestamptz, completed int)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  span int := least(greatest(coalesce(dashboard_throughput.minutes, 60), 1), 1440);
  first_minute timestamptz := date_trunc('minute', now()) - make_interval(mins => span - 1);
  tbl text;
begin
  for q in select x.queue_name, x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'a');
    if to_regclass(format('pgmq.%I', tbl)) is null then
      return query
        select q.queue_name, m.minute, 0
          from generate_series(first_minute, date_trunc('minute', now()), interval '1 minute')
               as m(minute);
      continue;
    end if;
    return query execute format(
      'select $1, m.minute, coalesce(c.n, 0)::int
         from generate_series($2, date_trunc(''minute'', now()), interval ''1 minute'') as m(minute)
         left join (select date_trunc(''minute'', t.completed_at) as minute, count(*) as n
                      from pgmq.%I a
                      join switchyard.step_tasks t
                        on t.queue_name = $1 and t.message_id = a.msg_id and t.status = ''completed''
                     where a.archived_at >= $2
                     group by 1) c on c.minute = m.minute
        order by m.minute', tbl)
      using q.queue_name, first_minute;
  end loop;
end
$$;

-- Privileges as in 20261201009000_grants.sql: nothing for PostgREST's roles, the service
-- role may call the functions.
revoke execute on function switchyard.dashboard_queues() from public;
revoke execute on function switchyard.dashboard_functions(int) from public;
revoke execute on function switchyard.dashboard_runs(int, text, text, uuid) from public;
revoke execute on function switchyard.dashboard_throughput(int) from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke execute on function switchyard.dashboard_queues() from %I', role_name);
      execute format('revoke execute on function switchyard.dashboard_functions(int) from %I',
                     role_name);
      execute format(
        'revoke execute on function switchyard.dashboard_runs(int, text, text, uuid) from %I',
        role_name);
      execute format('revoke execute on function switchyard.dashboard_throughput(int) from %I',
                     role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant execute on function switchyard.dashboard_queues() to service_role;
    grant execute on function switchyard.dashboard_functions(int) to service_role;
    grant execute on function switchyard.dashboard_runs(int, text, text, uuid) to service_role;
    grant execute on function switchyard.dashboard_throughput(int) to service_role;
  end if;
end
$$;
