-- A run of a concrete flow (docs/design/runs.md#starting-a-run, docs/design/client.md): its input,
-- status and output, who it
-- is for, its deadline, trace context and priority. Its step states, tasks and events follow in
-- 041-051, one table per file.
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
  -- The caller's W3C trace context (a traceparent, docs/design/observability.md): the run's task
  -- spans join that trace. Null: none given. A run retried or rerun after its span was recorded
  -- has that span's context here instead (retry_run, rerun_run), so its new span is a child of it.
  trace_context text
    check (trace_context ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
  -- Claim order on a shared queue (docs/design/flow-control.md#priority-and-keys-in-turn): higher
  -- first, with ageing.
  priority smallint not null default 0 check (priority between -10 and 10),
  -- A fork's lineage (switchyard.fork_run, docs/design/rerun.md): the run it was forked
  -- from and the step it reran from. No foreign key: pruning the original leaves the fork whole.
  forked_from uuid,
  from_step text,
  -- Paused (switchyard.pause_run, or a step's whenExhausted 'pause'): none of the run's tasks is
  -- claimed until switchyard.resume_run; running tasks finish. Null: not paused.
  paused_at timestamptz,
  pause_reason text,
  -- The attempts the run's tasks had used before its latest rerun (switchyard.rerun_run): a task
  -- created after it counts its attempts on from here, so a late answer of an attempt from
  -- before the rerun is never taken for a new one. 0 for a run never rerun.
  attempt_floor int not null default 0,
  -- Whether a worker recorded the run's span (switchyard.take_run_spans,
  -- docs/design/observability.md#metrics-traces-and-charts): a traced run
  -- that ended waits for it.
  run_span_taken boolean not null default false,
  -- When the run's current span starts, for a run retried or rerun after its span was recorded
  -- (its new life's span, a child of the first; retry_run, rerun_run). Null: at started_at.
  span_started_at timestamptz,
  -- Where the run came from (docs/design/origins.md): a JSON object with a `kind` (row_trigger,
  -- backfill, webhook, batch, …) and what names the source, as start_flow's `origin` gave it.
  -- Null: a plain start (start_flow called by the app, the client, a schedule or a child step).
  origin jsonb
);

-- The paused runs, for the dashboard and resume (empty when unused).
create index runs_paused on switchyard.runs (paused_at) where paused_at is not null;

-- A run's forks, newest first (empty when unused).
create index runs_forked_from on switchyard.runs (forked_from) where forked_from is not null;

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

-- Traced runs whose span is not recorded yet: what take_run_spans reads (empty untraced).
create index runs_span_pending on switchyard.runs (run_id)
  where trace_context is not null and not run_span_taken;

-- Runs with an origin, newest first: the dashboard's runs per row trigger in the last hour
-- (dashboard_row_triggers). Plain starts (origin null) add no entry.
create index runs_origin_started on switchyard.runs (started_at) where origin is not null;

-- The user rate limit counts a user's runs of the last minute through this index.
create index runs_owner_started on switchyard.runs (owner, started_at) where owner is not null;
