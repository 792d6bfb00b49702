-- Each failed attempt of a task (a throw, a timeout, a stall; retried or not), for the failure
-- counts of switchyard.metrics and the dashboard's charts (docs/design/observability.md): a task
-- that
-- fails five times is five failures, so a retry storm shows. Written by the trigger
-- step_tasks_failed_attempt whenever a started task's last_failed_at moves, so every path that
-- fails an attempt is counted without a second copy of it. Read by time through
-- failed_attempts_recent, never the history; deleted with its task.
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

-- The cascade from a deleted task (prune) finds its rows by key.
create index failed_attempts_task on switchyard.failed_attempts (run_id, step_slug, task_index);

create index failed_attempts_recent on switchyard.failed_attempts (failed_at);
