-- Runs, their step states and tasks, and their events (docs/ARCHITECTURE.md §5, §14).
create table switchyard.runs (
  run_id uuid primary key default gen_random_uuid(),
  flow_slug text not null references switchyard.flows,
  started_as text not null,                -- the alias or slug the caller used
  status text not null default 'started'
    check (status in ('started', 'completed', 'failed', 'cancelled')),
  input jsonb not null,
  output jsonb,
  error text,                              -- the failure, or the reason of a cancelled run
  remaining_steps int not null,
  started_at timestamptz not null default switchyard.clock_now(),
  completed_at timestamptz,
  failed_at timestamptz,
  owner uuid,                              -- who the run is for (start_flow's owner)
  cancelled_at timestamptz,
  deadline_at timestamptz,                 -- cancelled with reason 'deadline' when still started
  -- The caller's W3C trace context (a traceparent, docs/ARCHITECTURE.md §16): the run's task
  -- spans join that trace. Null: none given.
  trace_context text
    check (trace_context ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
  -- Claim order on a shared queue (docs/ARCHITECTURE.md §5.14): higher first, with ageing.
  priority smallint not null default 0 check (priority between -10 and 10)
);

create index runs_flow_started on switchyard.runs (flow_slug) where status = 'started';

-- Started runs with a deadline, soonest first: cancel_overdue_runs' probe (empty when unused).
create index runs_deadline on switchyard.runs (deadline_at)
  where status = 'started' and deadline_at is not null;

-- Recent runs first, for dashboard_runs.
create index runs_started_at on switchyard.runs (started_at desc);

-- Finished runs by the time they finished: prune's candidates, oldest first. Keyed by a
-- column the hot path never filters on, so it cannot be picked for a claim or completion.
create index runs_finished on switchyard.runs ((coalesce(completed_at, failed_at, cancelled_at)))
  where status in ('completed', 'failed', 'cancelled');

-- The user rate limit counts a user's runs of the last minute through this index.
create index runs_owner_started on switchyard.runs (owner, started_at) where owner is not null;

-- No index of open step states by (flow, step): _start_ready_steps finds a run's created
-- states by the primary key's run_id prefix (docs/ARCHITECTURE.md §5.7); coverage and drain
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

-- The signal of a wait step (docs/ARCHITECTURE.md §5.11), kept from the moment
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

-- Delayed starts (start_flow_at, docs/ARCHITECTURE.md §5.11) not begun yet: the run exists,
-- its steps start when switchyard.expire_waits finds it due, and the row goes.
create table switchyard.delayed_starts (
  run_id uuid primary key references switchyard.runs on delete cascade,
  start_at timestamptz not null
);

create index delayed_starts_due on switchyard.delayed_starts (start_at);

-- Child runs (docs/ARCHITECTURE.md §5.11): the run a parent's 'flow' step started, its id
-- derived from the parent's run and step, so starting it again finds the same run.
create table switchyard.child_runs (
  run_id uuid primary key references switchyard.runs on delete cascade,
  parent_run_id uuid not null,
  parent_step text not null,
  unique (parent_run_id, parent_step),
  foreign key (parent_run_id, parent_step) references switchyard.step_states on delete cascade
);

-- One task per (run, step, task index): index 0 for an ordinary step, one per element for a
-- map step. Its queue is a snapshot taken when the task is created; every queue operation
-- uses it, never a name recomputed from the flow. 'skipped': the other tasks of a map step
-- skipped after one element exhausted its attempts; 'cancelled': queued when its run was
-- cancelled (its message is archived).
create table switchyard.step_tasks (
  run_id uuid not null,
  step_slug text not null,
  flow_slug text not null,
  queue_name text not null references switchyard.queues,
  message_id bigint not null,
  status text not null default 'queued'
    check (status in ('queued', 'started', 'completed', 'failed', 'skipped', 'cancelled')),
  attempts_count int not null default 0,
  max_attempts int not null,
  base_delay int not null,
  max_delay int not null,
  timeout int not null,
  worker_id uuid,
  error text,
  output jsonb,
  queued_at timestamptz not null default switchyard.clock_now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  task_index int not null default 0,
  primary key (run_id, step_slug, task_index),
  foreign key (run_id, step_slug) references switchyard.step_states on delete cascade,
  check (attempts_count <= max_attempts),
  -- The keyed concurrency slot a claim gave the task (docs/ARCHITECTURE.md §5.12): the step's
  -- scope and the key's value; the task holds it while it is started.
  concurrency_key text,
  -- When an attempt of the task last failed (retried or not): failures over time (§16).
  last_failed_at timestamptz,
  -- Attempts handed back at an instance's end without being counted (release_tasks,
  -- docs/ARCHITECTURE.md §9): at most max_task_refunds(), then a hand-over counts.
  refunds int not null default 0,
  -- Milliseconds attempt carried_attempt already ran on instances that handed it back: the step
  -- timeout counts them, so it keeps its meaning across instances (start_tasks sets it to 0 for
  -- a new attempt).
  carried_ms int not null default 0,
  carried_attempt int
);

-- Message identity is (queue_name, message_id).
create unique index step_tasks_message on switchyard.step_tasks (queue_name, message_id);

create index step_tasks_live on switchyard.step_tasks (queue_name, flow_slug, step_slug)
  where status in ('queued', 'started');

-- The tasks by their latest claim, completion or failed attempt: switchyard.metrics and the
-- dashboard's charts read the tasks of a recent window through it, never the history
-- (docs/ARCHITECTURE.md §16). A claim and a completion already update the row off the HOT path
-- (its status is in step_tasks_live's predicate), so the key adds one index entry to each.
create index step_tasks_recent on switchyard.step_tasks
  ((greatest(started_at, completed_at, last_failed_at))) where started_at is not null;

create index step_tasks_worker on switchyard.step_tasks (worker_id) where status = 'started';

-- The started tasks holding a keyed concurrency slot, counted by the claim (§5.12).
create index step_tasks_concurrency on switchyard.step_tasks (concurrency_key)
  where status = 'started' and concurrency_key is not null;

-- One row per transition of a run or one of its steps, numbered in commit order within a
-- run: the triggers (triggers.sql) lock the run's row before numbering its events, and every
-- writer keeps that lock until it commits, so a reader that saw event n of a run never later
-- finds a smaller number for that run. Deleted with its run.
create table switchyard.run_events (
  event_id bigint generated always as identity,
  run_id uuid not null references switchyard.runs on delete cascade,
  owner uuid,                              -- the run's owner, copied for row-level security
  flow_slug text not null,
  step_slug text,                          -- null: an event of the run itself
  event text not null,
  created_at timestamptz not null default switchyard.clock_now(),
  -- One index: a reader always names the run (event_id > n within it), and so does the
  -- cascade from runs.
  primary key (run_id, event_id),
  -- 'waiting', 'signalled' and 'timed out': a wait step's (docs/ARCHITECTURE.md §5.11).
  constraint run_events_event_check check (event in
    ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried', 'waiting',
     'signalled', 'timed out', 'progress')),
  -- A 'progress' event's task (its index) and the JSON its handler reported with ctx.progress
  -- (switchyard.report_progress, docs/ARCHITECTURE.md §16); null for every other event.
  task_index int,
  data jsonb
);

-- Rows are readable only through row-level security: the table owner (the migration role)
-- and roles with BYPASSRLS (Supabase's service_role) read every row; a signed-in user reads
-- the events of the runs they own, once the opt-in grant of docs/ARCHITECTURE.md §14 gives
-- them SELECT (nothing is granted here).
alter table switchyard.run_events enable row level security;

-- What a DELETE of an event (prune) publishes: Supabase Realtime sends it to every subscriber
-- of the table, without row-level security, with the old row's replica identity. The default,
-- the primary key, holds run_id: other users' run ids. The identity is event_id alone, a
-- number that names no run (docs/ARCHITECTURE.md §14). One more index entry per event.
create unique index run_events_event_id on switchyard.run_events (event_id);

alter table switchyard.run_events replica identity using index run_events_event_id;

-- Aliases a signed-in user may start through start_user_run. Empty: nobody may, until an
-- operator inserts an alias (the opt-in of docs/ARCHITECTURE.md §14).
create table switchyard.user_start_aliases (
  alias text primary key,
  added_at timestamptz not null default switchyard.clock_now()
);

-- A long handler's checkpoint (docs/ARCHITECTURE.md §9, "Checkpoints"): the last state it saved
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

-- The progress rate window of a task (switchyard.report_progress, docs/ARCHITECTURE.md §16):
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

-- Each failed attempt of a task (a throw, a timeout, a stall; retried or not), for the failure
-- counts of switchyard.metrics and the dashboard's charts (docs/ARCHITECTURE.md §16): a task that
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

-- Wait steps a signed-in user may signal in the runs they own, through signal_user_run, by the
-- alias whose versions the run's flow belongs to. Empty: nobody may, until an operator inserts
-- a row (the opt-in of docs/ARCHITECTURE.md §14).
create table switchyard.user_signal_steps (
  alias text not null,
  step_slug text not null,
  added_at timestamptz not null default switchyard.clock_now(),
  -- What a user's payload must be, in a subset of JSON Schema (_payload_problem); null: any JSON.
  -- The flow's signalPayload<T>() is a TypeScript type only, which a browser never meets.
  payload_schema jsonb,
  primary key (alias, step_slug)
);
