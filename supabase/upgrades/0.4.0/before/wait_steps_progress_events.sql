-- Progress events (issue 26, docs/ARCHITECTURE.md §16), as supabase/schemas/tables/40_runs.sql
-- has them: the event name 'progress', its task and data on run_events, and the tasks' rate
-- windows. Adding nullable columns without a default rewrites nothing. The check constraint is
-- added NOT VALID and validated afterwards, so the table is scanned under a lock that lets
-- readers and writers go on. Named to run after wait_steps.sql, which sets the constraint too.
alter table switchyard.run_events drop constraint run_events_event_check;

alter table switchyard.run_events add constraint run_events_event_check
  check (event in ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried',
                   'waiting', 'signalled', 'timed out', 'progress')) not valid;

alter table switchyard.run_events validate constraint run_events_event_check;

alter table switchyard.run_events add column task_index int;

alter table switchyard.run_events add column data jsonb;

create table switchyard.task_progress (
  run_id uuid not null,
  step_slug text not null,
  task_index int not null,
  window_started_at timestamptz not null,
  window_count int not null,
  primary key (run_id, step_slug, task_index),
  foreign key (run_id, step_slug, task_index) references switchyard.step_tasks on delete cascade
);
