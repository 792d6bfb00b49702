-- Checkpoints of long handlers (issue 25), as supabase/schemas/tables/40_runs.sql creates them.
create table switchyard.task_checkpoints (
  run_id uuid not null,
  step_slug text not null,
  task_index int not null,
  state jsonb not null,
  attempt int not null,                    -- the attempt that saved it
  saved_at timestamptz not null default now(),
  primary key (run_id, step_slug, task_index),
  foreign key (run_id, step_slug, task_index) references switchyard.step_tasks on delete cascade
);
