-- A span for a retried run's new end (issue 42,
-- docs/design/observability.md#metrics-traces-and-charts), as
-- supabase/schemas/tables/040_runs.sql declares it: when the span of a run retried or rerun after
-- its first span was recorded starts. Null for every run so far.
alter table switchyard.runs add column span_started_at timestamptz;
