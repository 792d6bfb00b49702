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
  -- A started wait or sleep step: when its timeout is due (null: none). Kept after it ends (a
  -- late signal is told the wait timed out, and when).
  wait_deadline timestamptz,
  foreign key (flow_slug, step_slug) references switchyard.steps on delete cascade,
  -- The deadline of a wait or sleep in progress: wait_deadline while the step is started, null
  -- once it ends (every statement that ends a step clears it; the check makes a missed one
  -- fail loudly). What step_states_wait_due indexes, so the index holds the open waits only.
  wait_due timestamptz,
  constraint step_states_wait_due_started check (wait_due is null or status = 'started')
)
-- Room on each page for the row's next versions: a step's count-down, start and completion
-- update the row in place (HOT: no index holds a column they change), and its dead versions are
-- pruned on the page, so the table stays as compact as its live rows and no index grows with
-- the updates (docs/design/runs.md#the-history-tables-and-their-updates).
with (fillfactor = 80);

-- The started wait and sleep steps with a deadline, soonest first: what switchyard.expire_waits
-- reads. Its predicate names no status (a status in it would make every update of a step's
-- status a non-HOT one, with a new entry in every index): wait_due is set only while the step
-- waits, so an ended wait leaves no entry.
create index step_states_wait_due on switchyard.step_states (wait_due) where wait_due is not null;
