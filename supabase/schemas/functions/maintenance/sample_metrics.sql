-- Takes the minute's sample of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels) when nobody has yet:
-- per catalogued queue, its counters and lag now (switchyard._metric_sample_now) as the row of
-- switchyard.metric_samples for the minute of `now_at` (default clock_now()), the row the
-- dashboard's charts and metrics_minutes take differences of. Then deletes the samples older
-- than the charts' longest span (1440 minutes) but each queue's newest of them (the base of the
-- longest chart's first difference), and folds the counters' rows of
-- other sessions into shard 0 (fold_metric_counters), so neither table grows when prune is
-- never scheduled. Called by every worker's heartbeat (worker_heartbeat) and the keep-alive
-- tick, so a minute has its sample whenever a worker runs or the tick is scheduled; any mix is
-- safe: a minute that has a sample is one key probe, and one caller at a time samples (a
-- transaction-level advisory lock, tried, never waited for). `now_at` lets a test write the
-- samples of past minutes: at most now, at least 1440 minutes back (22023 now_at_range, as are
-- null and infinities). Returns the rows written: 0 when the minute had its sample.
create or replace function switchyard.sample_metrics(now_at timestamptz default switchyard.clock_now())
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  sampled_minute timestamptz := date_trunc('minute', sample_metrics.now_at);
  written int;
begin
  if sample_metrics.now_at is null or not isfinite(sample_metrics.now_at)
     or sample_metrics.now_at > switchyard.clock_now()
     or sample_metrics.now_at < switchyard.clock_now() - interval '1440 minutes' then
    perform switchyard._refuse('22023', 'now_at_range', 'now_at', sample_metrics.now_at::text, format(
      'sample_metrics: now_at %s is out of range: use an instant of the last 1440 minutes, not '
      'after the core''s clock (%s)', coalesce(sample_metrics.now_at::text, 'null'),
      switchyard.clock_now()),
      context => jsonb_build_object('max', switchyard.clock_now()::text,
                                    'min', (switchyard.clock_now() - interval '1440 minutes')::text));
  end if;
  if exists (select 1 from switchyard.metric_samples s where s.minute = sampled_minute) then
    return 0;
  end if;
  if not pg_try_advisory_xact_lock(hashtextextended('switchyard.sample_metrics', 0)) then
    return 0;
  end if;
  -- Looked at again under the lock, in a statement of its own: a sampler that committed since
  -- the first look is seen now.
  if exists (select 1 from switchyard.metric_samples s where s.minute = sampled_minute) then
    return 0;
  end if;
  insert into switchyard.metric_samples as s
         (queue_name, minute, taken_at, claims, retries, failed_attempts, throttled, completions,
          task_duration, task_duration_seconds, queue_wait, lag_seconds, depth)
  select l.queue_name, sampled_minute, sample_metrics.now_at, l.claims, l.retries,
         l.failed_attempts, l.throttled, l.completions, l.task_duration,
         l.task_duration_seconds, l.queue_wait, l.lag_seconds, l.depth
    from switchyard._metric_sample_now() l
  on conflict (queue_name, minute) do nothing;
  get diagnostics written = row_count;
  -- Older than the longest chart: deleted, but each queue's newest such sample, the base of
  -- its longest chart's first difference.
  delete from switchyard.metric_samples s
   where s.minute < date_trunc('minute', switchyard.clock_now()) - interval '1440 minutes'
     and s.minute < (select max(x.minute) from switchyard.metric_samples x
                      where x.queue_name = s.queue_name
                        and x.minute < date_trunc('minute', switchyard.clock_now())
                                       - interval '1440 minutes');
  perform switchyard.fold_metric_counters();
  return written;
end
$$;
