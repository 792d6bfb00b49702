-- Queue functions, their workers and support sets (docs/design/worker.md#worker-start-up,
-- docs/design/worker.md#worker-states-and-parts), and the
-- foreign messages a quarantine moved out of a queue (docs/design/claim.md#the-unsupported-batch).

-- A queue function (one Supabase Edge Function per explicit queue) and its durable flags.
create table switchyard.worker_functions (
  function_name text primary key check (function_name ~ '^[a-z][a-z0-9_-]*$'),
  queue_name text not null,
  enabled boolean not null default true,
  paused_at timestamptz,
  pause_reason text,
  -- A pause by unsupported work, structurally: {"queue", "message_ids" (as strings), "pairs"},
  -- the same ids and pairs the reason names; null for an operator's pause. Read by
  -- quarantine_messages, never parsed from the reason text.
  pause_detail jsonb,
  created_at timestamptz not null default switchyard.clock_now(),
  last_woken_at timestamptz,
  check ((paused_at is null) = (pause_reason is null)),
  check (paused_at is not null or pause_detail is null)
);

create table switchyard.workers (
  worker_id uuid primary key,
  queue_name text not null,
  function_name text not null references switchyard.worker_functions,
  pair_set text not null,                  -- its exact support set: a key of switchyard.pair_sets
  started_at timestamptz not null default switchyard.clock_now(),
  last_heartbeat_at timestamptz not null default switchyard.clock_now(),
  -- Seconds without a heartbeat after which this worker's started tasks are recovered. The
  -- worker's own setting, stored at registration (at least heartbeat_window_floor_seconds());
  -- recovery never takes a window from its caller.
  heartbeat_window_seconds int not null default 15 check (heartbeat_window_seconds >= 2),
  deprecated_at timestamptz,
  stopped_at timestamptz,
  stop_reason text
);

create index workers_live on switchyard.workers (function_name) where stopped_at is null;

-- The exact (flow, step) support sets workers registered, one row per pair, keyed by a hash
-- of the sorted set: the claim path looks up each message's pair by index, so its cost does
-- not grow with the registry. Workers with the same registry share one set.
create table switchyard.pair_sets (
  pair_set text not null,
  pair text not null,
  primary key (pair_set, pair)
);

-- Quarantine (docs/design/claim.md#the-unsupported-batch) is never automatic: only
-- quarantine_messages moves
-- anything, and only messages the pause named that belong to no task.
-- Foreign messages moved out of their queue, bodies and headers kept for inspection.
create table switchyard.quarantined_messages (
  queue_name text not null,
  msg_id bigint not null,
  read_ct int not null,
  enqueued_at timestamptz not null,
  message jsonb,
  headers jsonb,
  function_name text not null,             -- the paused function
  pause_reason text not null,              -- the pause that named the message
  quarantined_at timestamptz not null default switchyard.clock_now(),
  primary key (queue_name, msg_id)
);
