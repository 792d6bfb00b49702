-- The dashboard's charts (docs/design/observability.md): per queue and minute over the last
-- `minutes` (1-1440, default 60), the current minute last, every minute present, read from the
-- counters through their per-minute samples (switchyard.metric_samples, written by
-- sample_metrics), so a chart shows what /metrics and the Grafana views serve:
--   lag_seconds  the queue's lag (how long its oldest visible message had been visible, the
--                gauge switchyard_queue_lag_seconds) at the minute's end: the sample of the next
--                minute, now for the current minute; null when no sample ends the minute;
--   p95_ms       the 95th percentile of the task durations completed in the minute,
--                metric_quantile (histogram_quantile) of the task_duration buckets' difference;
--                null when none completed;
--   failures     failed attempts in the minute (the failed_attempts counter's difference);
--   completions  tasks completed in the minute (task_duration's count's difference).
-- A minute's figures are the difference of the sample ending it (the next minute's; for the
-- current minute the counters now) and the sample before that one, however far back (none: the
-- counters started at zero): a minute nobody sampled shows 0 and the minute whose end was
-- sampled next carries its work, so the figures of a span add up to the counters' increase
-- over it, and to the counters themselves while the span reaches the queue's first sample. No
-- task row is read.
create or replace function switchyard.dashboard_metrics_history(minutes int default 60)
returns table (
  queue_name text, minute timestamptz, lag_seconds double precision, p95_ms double precision,
  failures int, completions int
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  this_minute timestamptz := date_trunc('minute', switchyard.clock_now());
  first_minute timestamptz := this_minute
    - make_interval(mins => least(greatest(coalesce(dashboard_metrics_history.minutes, 60), 1), 1440) - 1);
begin
  return query
    with points as (
      -- Each point ends the minute before its own: the samples of the span's minutes after
      -- the first, the counters now (ending the current minute), and, as the base of the first
      -- difference, each queue's last sample at or before the first minute.
      select s.queue_name, s.minute, s.failed_attempts, s.completions, s.task_duration,
             s.lag_seconds
        from switchyard.metric_samples s
       where s.minute > first_minute and s.minute <= this_minute
      union all
      select l.queue_name, this_minute + interval '1 minute', l.failed_attempts, l.completions,
             l.task_duration, l.lag_seconds
        from switchyard._metric_sample_now() l
      union all
      select b.queue_name, b.minute, b.failed_attempts, b.completions, b.task_duration,
             b.lag_seconds
        from switchyard.queues x
        cross join lateral (select s.queue_name, s.minute, s.failed_attempts, s.completions,
                                   s.task_duration, s.lag_seconds
                              from switchyard.metric_samples s
                             where s.queue_name = x.queue_name and s.minute <= first_minute
                             order by s.minute desc limit 1) b
    ),
    paired as (
      select p.queue_name, p.minute - interval '1 minute' as minute, p.lag_seconds,
             p.failed_attempts, p.completions, p.task_duration,
             -- A queue's first sample ever is based on zero: the counters start at zero.
             lag(p.failed_attempts, 1, 0::bigint) over w as failed_before,
             lag(p.completions, 1, 0::bigint) over w as completions_before,
             lag(p.task_duration, 1, array_fill(0::bigint, array[17])) over w as duration_before
        from points p
      window w as (partition by p.queue_name order by p.minute)
    ),
    -- A counter that went down was reset (as Prometheus reads it): its difference is its value.
    diffs as (
      select d.queue_name, d.minute, d.lag_seconds,
             case when d.failed_attempts >= d.failed_before then d.failed_attempts - d.failed_before
                  else d.failed_attempts end as failures,
             case when d.completions >= d.completions_before
                  then d.completions - d.completions_before else d.completions end as completions,
             case when d.completions >= d.completions_before
                  then array(select greatest(e.n - e.b, 0)
                               from unnest(d.task_duration, d.duration_before) as e(n, b))
                  else d.task_duration end as buckets
        from paired d
       where d.minute >= first_minute
    )
    select x.queue_name, m.minute, d.lag_seconds,
           case when d.buckets is not null
                then switchyard.metric_quantile(0.95, d.buckets) * 1000 end,
           coalesce(d.failures, 0)::int, coalesce(d.completions, 0)::int
      from switchyard.queues x
      cross join lateral generate_series(first_minute, this_minute, interval '1 minute') as m(minute)
      left join diffs d on d.queue_name = x.queue_name and d.minute = m.minute
     order by x.queue_name, m.minute;
end
$$;
