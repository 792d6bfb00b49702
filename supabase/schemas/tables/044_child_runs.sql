-- Child runs (docs/design/waits.md): the run a parent's 'flow' step started, its id
-- derived from the parent's run and step, so starting it again finds the same run.
create table switchyard.child_runs (
  run_id uuid primary key references switchyard.runs on delete cascade,
  parent_run_id uuid not null,
  parent_step text not null,
  unique (parent_run_id, parent_step),
  foreign key (parent_run_id, parent_step) references switchyard.step_states on delete cascade
);
