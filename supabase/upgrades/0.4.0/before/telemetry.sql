-- Metrics and traces (issue 26, docs/ARCHITECTURE.md §16): the caller's trace context of a run,
-- the time of a task's last failed attempt, and the index of recent task activity.
alter table switchyard.runs add column trace_context text
  check (trace_context ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');

alter table switchyard.step_tasks add column last_failed_at timestamptz;

create index step_tasks_recent on switchyard.step_tasks
  ((greatest(started_at, completed_at, last_failed_at))) where started_at is not null;
