-- Failed attempts counted one by one (issue 36), as supabase/schemas/tables/40_runs.sql creates
-- them: the metrics counted a task failing five times once.
create table switchyard.failed_attempts (
  run_id uuid not null,
  step_slug text not null,
  task_index int not null,
  attempt int not null,
  queue_name text not null,
  flow_slug text not null,
  failed_at timestamptz not null,
  foreign key (run_id, step_slug, task_index) references switchyard.step_tasks on delete cascade
);

create index failed_attempts_task on switchyard.failed_attempts (run_id, step_slug, task_index);

create index failed_attempts_recent on switchyard.failed_attempts (failed_at);
