-- Completed tasks per queue and minute over the last `minutes` minutes (1-1440, default 60),
-- the current minute last, every minute present (0 when none): the completions of the charts
-- (dashboard_metrics_history), differences of the counters' per-minute samples
-- (docs/design/observability.md#counters-histograms-and-levels), so the
-- dashboard's completed-tasks chart shows what /metrics' switchyard_task_completions_total
-- counts. No task row and no archive is read.
create or replace function switchyard.dashboard_throughput(minutes int default 60)
returns table (queue_name text, minute timestamptz, completed int)
language sql
stable
security definer
set search_path = ''
as $$
  select h.queue_name, h.minute, h.completions
    from switchyard.dashboard_metrics_history(dashboard_throughput.minutes) h
$$;
