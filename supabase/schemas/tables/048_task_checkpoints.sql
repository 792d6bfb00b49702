-- A long handler's checkpoint (docs/design/worker.md#worker-states-and-parts, "Checkpoints"): the
-- last state it saved
-- with ctx.checkpoint, read back by the next attempt with ctx.resume(). Deleted with its task.
create table switchyard.task_checkpoints (
  run_id uuid not null,
  step_slug text not null,
  task_index int not null,
  state jsonb not null,
  attempt int not null,                    -- the attempt that saved it
  saved_at timestamptz not null default switchyard.clock_now(),
  primary key (run_id, step_slug, task_index),
  foreign key (run_id, step_slug, task_index) references switchyard.step_tasks on delete cascade
);
