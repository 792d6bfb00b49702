-- The progress rate window of a task (switchyard.report_progress, docs/design/observability.md):
-- when its current one-second window began and how many progress events it holds. A row exists
-- only for a task that reported progress. Deleted with its task.
create table switchyard.task_progress (
  run_id uuid not null,
  step_slug text not null,
  task_index int not null,
  window_started_at timestamptz not null,
  window_count int not null,
  primary key (run_id, step_slug, task_index),
  foreign key (run_id, step_slug, task_index) references switchyard.step_tasks on delete cascade
);
