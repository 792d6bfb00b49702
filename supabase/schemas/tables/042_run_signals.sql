-- The signal of a wait step (docs/design/waits.md), kept from the moment
-- switchyard.signal_run's transaction commits: delivered (the step's output) when the step is
-- waiting, else when it becomes ready. At most one per step; its key makes a repeat a no-op.
create table switchyard.run_signals (
  run_id uuid not null,
  step_slug text not null,
  signal_key text,
  payload jsonb not null,
  signalled_at timestamptz not null default switchyard.clock_now(),
  delivered_at timestamptz,
  primary key (run_id, step_slug),
  foreign key (run_id, step_slug) references switchyard.step_states on delete cascade
);
