-- The dashboard's charts (docs/ARCHITECTURE.md §16): per queue and minute over the last
-- `minutes` (1-1440, default 60), the current minute last, every minute present:
--   lag_seconds  the longest wait of a ready task: of the first attempts claimed in the minute,
--                from when their message became visible (queued, plus the step's startDelay)
--                to the claim, and, for the tasks of started runs still waiting for their
--                first claim, up to the minute's end (a queue no worker reads shows its lag);
--   p95_ms       the 95th percentile of the durations (claim to completion) of the tasks
--                completed in the minute, null when none;
--   failures     the failed attempts in the minute (a task failing five times counts five);
--   completions  the tasks completed in the minute.
-- The tasks of the window are read through step_tasks_recent, their failed attempts through
-- failed_attempts_recent, the waiting ones through step_tasks_live: no history is read.
create or replace function switchyard.dashboard_metrics_history(minutes int default 60)
returns table (
  queue_name text, minute timestamptz, lag_seconds double precision, p95_ms double precision,
  failures int, completions int
)
language sql
stable
security definer
set search_path = ''
as $$
  with span as (
    select date_trunc('minute', switchyard.clock_now())
             - make_interval(mins => least(greatest(coalesce(minutes, 60), 1), 1440) - 1)
             as first_minute
  ),
  recent as materialized (
    select t.queue_name, t.started_at, t.completed_at, t.last_failed_at, t.attempts_count,
           t.queued_at, t.flow_slug, t.step_slug
      from switchyard.step_tasks t, span
     where t.started_at is not null
       and greatest(t.started_at, t.completed_at, t.last_failed_at) >= span.first_minute
  ),
  done as (
    select r.queue_name, date_trunc('minute', r.completed_at) as minute, count(*) as n,
           percentile_cont(0.95) within group (
             order by extract(epoch from r.completed_at - r.started_at) * 1000) as p95
      from recent r, span where r.completed_at >= span.first_minute group by 1, 2
  ),
  failed as (
    select fa.queue_name, date_trunc('minute', fa.failed_at) as minute, count(*) as n
      from switchyard.failed_attempts fa, span
     where fa.failed_at >= span.first_minute group by 1, 2
  ),
  waited as (
    select r.queue_name, date_trunc('minute', r.started_at) as minute,
           max(extract(epoch from r.started_at - r.queued_at) - st.start_delay) as secs
      from recent r
      join switchyard.steps st on st.flow_slug = r.flow_slug and st.step_slug = r.step_slug,
           span
     where r.started_at >= span.first_minute and r.attempts_count = 1
     group by 1, 2
  ),
  waiting as (
    select t.queue_name, min(t.queued_at + make_interval(secs => st.start_delay)) as since
      from switchyard.step_tasks t
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
      join switchyard.runs ru on ru.run_id = t.run_id and ru.status = 'started'
     where t.status = 'queued' and t.attempts_count = 0
     group by 1
  )
  select x.queue_name, m.minute,
         greatest(coalesce(w.secs, 0),
                  coalesce(extract(epoch from least(m.minute + interval '1 minute', switchyard.clock_now())
                                             - wn.since), 0),
                  0)::double precision,
         d.p95::double precision, coalesce(f.n, 0)::int, coalesce(d.n, 0)::int
    from switchyard.queues x
    cross join span
    cross join lateral generate_series(span.first_minute, date_trunc('minute', switchyard.clock_now()),
                                       interval '1 minute') as m(minute)
    left join done d on d.queue_name = x.queue_name and d.minute = m.minute
    left join failed f on f.queue_name = x.queue_name and f.minute = m.minute
    left join waited w on w.queue_name = x.queue_name and w.minute = m.minute
    left join waiting wn on wn.queue_name = x.queue_name
   order by x.queue_name, m.minute
$$;
