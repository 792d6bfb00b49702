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
  -- The keyed concurrency slot a claim gave the task
  -- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): the step's
  -- scope and the key's value; the task holds it while it is started.
  concurrency_key text,
  -- When an attempt of the task last failed (retried or not): failures over time
  -- (docs/design/observability.md).
  last_failed_at timestamptz,
  -- Attempts handed back at an instance's end without being counted (release_tasks,
  -- docs/design/worker.md#worker-states-and-parts): at most max_task_refunds(), then a hand-over
  -- counts.
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
-- (docs/design/observability.md). A claim and a completion already update the row off the HOT path
-- (its status is in step_tasks_live's predicate), so the key adds one index entry to each.
create index step_tasks_recent on switchyard.step_tasks
  ((greatest(started_at, completed_at, last_failed_at))) where started_at is not null;

create index step_tasks_worker on switchyard.step_tasks (worker_id) where status = 'started';

-- The started tasks holding a keyed concurrency slot, counted by the claim
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency).
create index step_tasks_concurrency on switchyard.step_tasks (concurrency_key)
  where status = 'started' and concurrency_key is not null;
