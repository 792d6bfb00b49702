-- The state of each step of a run (docs/design/runs.md#ready-steps-conditions-and-skips): created,
-- started, then completed,
-- failed, skipped or cancelled, with its output and, for a wait step, its deadline.
--
-- No index of open step states by (flow, step): _start_ready_steps finds a run's created
-- states by the primary key's run_id prefix (docs/design/claim.md#planner-settings); coverage and
-- drain
-- reach open states from the started runs (the view open_run_steps).
create table switchyard.step_states (
  run_id uuid not null references switchyard.runs on delete cascade,
  flow_slug text not null,
  step_slug text not null,
  status text not null default 'created'
    check (status in ('created', 'started', 'completed', 'failed', 'skipped', 'cancelled')),
  remaining_deps int not null,
  output jsonb,
  created_at timestamptz not null default switchyard.clock_now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  remaining_tasks int not null default 1,  -- a map step: its elements not yet completed
  skip_reason text,                        -- why a skipped step was skipped
  skipped_at timestamptz,
  primary key (run_id, step_slug),
  -- A started wait or sleep step: when its timeout is due (null: none). Kept after it ends.
  wait_deadline timestamptz,
  foreign key (flow_slug, step_slug) references switchyard.steps on delete cascade
);

-- The started wait and sleep steps by deadline: what switchyard.expire_waits reads.
create index step_states_wait_deadline on switchyard.step_states (wait_deadline)
  where status = 'started' and wait_deadline is not null;
