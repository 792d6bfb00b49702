-- The per-minute samples of the counters
-- (docs/design/observability.md#counters-histograms-and-levels), what the dashboard's
-- charts and the view metrics_minutes are differences of: one row per queue and minute, the
-- queue's counters of switchyard.metric_counters (summed over flows, steps and shards) and its
-- lag as they were when switchyard.sample_metrics took it, the first time in that minute (a
-- worker's heartbeat or the keep-alive tick). A chart's minute is the difference of the
-- sample ending it and the one before it, its p95 the quantile of the bucket differences, as
-- Prometheus' increase() and histogram_quantile() read the same counters. sample_metrics
-- deletes the samples older than the charts' longest span (1440 minutes) but each queue's newest
-- of them (the base of the first difference), so the table holds at most 1442 rows per queue,
-- whatever the work and whether prune runs or not.
--
--   task_duration, queue_wait   a histogram's count per bucket (1 to 17, not cumulative: the
--                               buckets of switchyard.metric_bucket)
--   lag_seconds                 how long the oldest visible message had been visible
--                               (the gauge switchyard_queue_lag_seconds; 0: none)
create table switchyard.metric_samples (
  queue_name text not null,
  minute timestamptz not null,
  taken_at timestamptz not null,
  claims bigint not null,
  retries bigint not null,
  failed_attempts bigint not null,
  throttled bigint not null,
  completions bigint not null,
  task_duration bigint[] not null,
  task_duration_seconds double precision not null,
  queue_wait bigint[] not null,
  lag_seconds double precision not null,
  depth bigint not null,
  primary key (queue_name, minute)
);
create index metric_samples_minute on switchyard.metric_samples (minute);
