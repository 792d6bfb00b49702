-- The metrics of every queue and step (docs/design/observability.md) over the last `window_seconds`
-- (1 to 86400, default 60), as one JSON document:
--
--   { "at", "window_seconds",
--     "queues": [{ queue_name, functions, depth, hidden, lag_seconds, oldest_age_seconds,
--                  claims, completions, failures, retries, and the first three per second }],
--     "steps":  [{ queue_name, flow_slug, step_slug, claims, completions, failures, retries,
--                  p50_ms, p95_ms, p99_ms, attempts_avg, attempts_max }] }
--
-- depth is the messages visible now, hidden the others (claimed, or waiting for a delay);
-- lag_seconds how long the oldest visible message has been visible (0 when none), and
-- oldest_age_seconds the age of the oldest message, from PGMQ's queue table (O(depth), as
-- dashboard_queues). The counts come from the tasks touched in the window, read through the
-- index step_tasks_recent, and from the failed attempts of the window, read through
-- failed_attempts_recent, so their cost grows with the window's activity, never with the
-- history: claims are the tasks whose latest claim is in the window, retries those of them
-- claimed again after a failed attempt, completions the tasks completed, failures the failed
-- attempts (a throw, a timeout, a stall; retried or not) in it: a task that failed five times
-- in the window counts five (a retry storm shows), while a task claimed twice in one window
-- counts once among the claims. Durations are a completed task's last
-- attempt, from its claim to its completion; attempts those of the tasks that finished
-- (completed, or failed for good) in the window. A step or queue with no activity in the window
-- has no step rows and zero counts.
create or replace function switchyard.metrics(window_seconds int default 60)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  since timestamptz;
  q record;
  tbl text;
  depth bigint;
  hidden bigint;
  oldest_visible timestamptz;
  oldest timestamptz;
  steps jsonb;
  queues jsonb := '[]'::jsonb;
begin
  if window_seconds is null or window_seconds < 1 or window_seconds > 86400 then
    perform switchyard._refuse('22023', 'window_range', 'window_seconds', window_seconds::text,
      format(
      'metrics: window_seconds %s is out of range: use 1 to 86400 (one day)',
      coalesce(window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 86400));
  end if;
  since := switchyard.clock_now() - make_interval(secs => window_seconds);
  -- One sort per step for the three percentiles (percentile_cont over an array of fractions).
  select coalesce(jsonb_agg(jsonb_build_object(
           'queue_name', s.queue_name, 'flow_slug', s.flow_slug, 'step_slug', s.step_slug,
           'claims', s.claims, 'completions', s.completions, 'failures', coalesce(f.n, 0),
           'retries', s.retries, 'p50_ms', s.p[1], 'p95_ms', s.p[2], 'p99_ms', s.p[3],
           'attempts_avg', s.attempts_avg, 'attempts_max', s.attempts_max)
           order by s.queue_name, s.flow_slug, s.step_slug), '[]'::jsonb)
    into steps
    from (
      select t.queue_name, t.flow_slug, t.step_slug,
             count(*) filter (where t.started_at >= since) as claims,
             count(*) filter (where t.completed_at >= since) as completions,
             count(*) filter (where t.started_at >= since and t.attempts_count > 1) as retries,
             percentile_cont(array[0.5, 0.95, 0.99]) within group (order by extract(epoch from
               t.completed_at - t.started_at) * 1000) filter (where t.completed_at >= since)
               as p,
             (avg(t.attempts_count) filter (where t.completed_at >= since
               or (t.status = 'failed' and t.last_failed_at >= since)))::double precision
               as attempts_avg,
             max(t.attempts_count) filter (where t.completed_at >= since
               or (t.status = 'failed' and t.last_failed_at >= since)) as attempts_max
        from switchyard.step_tasks t
       where t.started_at is not null
         and greatest(t.started_at, t.completed_at, t.last_failed_at) >= since
       group by t.queue_name, t.flow_slug, t.step_slug
    ) s
    -- A step with a failed attempt in the window has a task whose last failure is in it: a row
    -- of s.
    left join (
      select fa.queue_name, fa.flow_slug, fa.step_slug, count(*) as n
        from switchyard.failed_attempts fa
       where fa.failed_at >= since
       group by fa.queue_name, fa.flow_slug, fa.step_slug
    ) f on f.queue_name = s.queue_name and f.flow_slug = s.flow_slug
       and f.step_slug = s.step_slug;
  for q in
    select x.queue_name, x.pgmq_name,
           coalesce((select jsonb_agg(f.function_name order by f.function_name)
                       from switchyard.worker_functions f where f.queue_name = x.queue_name),
                    '[]'::jsonb) as functions,
           coalesce(sum((s.value ->> 'claims')::bigint), 0) as claims,
           coalesce(sum((s.value ->> 'completions')::bigint), 0) as completions,
           coalesce(sum((s.value ->> 'failures')::bigint), 0) as failures,
           coalesce(sum((s.value ->> 'retries')::bigint), 0) as retries
      from switchyard.queues x
      left join jsonb_array_elements(steps) s on s.value ->> 'queue_name' = x.queue_name
     group by x.queue_name, x.pgmq_name
     order by x.queue_name
  loop
    depth := null;
    hidden := null;
    oldest_visible := null;
    oldest := null;
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'select count(*) filter (where vt <= switchyard.queue_now()), count(*) filter (where vt > switchyard.queue_now()),
                min(vt) filter (where vt <= switchyard.queue_now()), min(enqueued_at)
           from pgmq.%I', tbl)
        into depth, hidden, oldest_visible, oldest;
    end if;
    queues := queues || jsonb_build_object(
      'queue_name', q.queue_name, 'functions', q.functions,
      'depth', depth, 'hidden', hidden,
      'lag_seconds', coalesce(greatest(extract(epoch from switchyard.queue_now() - oldest_visible), 0), 0),
      'oldest_age_seconds', coalesce(extract(epoch from switchyard.queue_now() - oldest), 0),
      'claims', q.claims, 'completions', q.completions, 'failures', q.failures,
      'retries', q.retries,
      'claims_per_second', q.claims::double precision / window_seconds,
      'completions_per_second', q.completions::double precision / window_seconds,
      'failures_per_second', q.failures::double precision / window_seconds);
  end loop;
  return jsonb_build_object('at', switchyard.clock_now(), 'window_seconds', window_seconds, 'queues', queues,
                            'steps', steps);
end
$$;
