-- Run spans (issue 42, docs/design/observability.md#metrics-traces-and-charts), as
-- supabase/schemas/tables/040_runs.sql
-- declares them. Runs that ended before this step get no span: they are marked taken.
alter table switchyard.runs add column run_span_taken boolean not null default false;
update switchyard.runs set run_span_taken = true
 where trace_context is not null and status <> 'started';
create index runs_span_pending on switchyard.runs (run_id)
  where trace_context is not null and not run_span_taken;
