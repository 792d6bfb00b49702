-- Counters and histograms (issue 42), as supabase/schemas/tables/120_metric_counters.sql creates them.
-- The monotonic counters and histograms of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels): what
-- Prometheus' rate(), increase() and histogram_quantile() read. One row per figure, label set,
-- histogram bucket and shard; a figure is the sum of its rows. The shard is the backend process
-- id of the session that counted: a backend runs one transaction at a time, so two transactions
-- never write the same row (no lock to queue on, no deadlock) and the hot path adds one upsert
-- per statement, grouped by label set, never one per task on a shared row. switchyard.prune folds
-- the rows of other backends into shard 0 (switchyard.fold_metric_counters), so the table
-- follows the connections in use, never the work done. Nothing else deletes a row and no counter
-- is read from the history, so pruning runs or tasks never makes a counter go down.
--
--   metric   'claims', 'retries', 'failed_attempts', 'throttled', 'task_duration',
--            'queue_wait', 'runs_retried', 'run_duration', 'signals' (runs started are derived
--            from these and the started runs: the view metrics_counters)
--   bucket   a histogram's bucket (switchyard.metric_bucket: 1 to 16 by the bounds of
--            switchyard.metric_bucket_bounds(), 17 past the last), 0 for a plain counter
--   n        how many were counted; total the sum of the observations (seconds)
create table switchyard.metric_counters (
  metric text not null,
  queue_name text not null default '',
  flow_slug text not null default '',     -- the concrete flow (the version)
  step_slug text not null default '',
  outcome text not null default '',       -- a run's end, a signal's ('delivered', 'kept')
  bucket smallint not null default 0,
  shard int not null,
  n bigint not null default 0,
  total double precision not null default 0,
  primary key (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard)
) with (fillfactor = 50);
