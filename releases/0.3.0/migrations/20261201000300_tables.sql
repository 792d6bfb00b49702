-- Switchyard state. SQL owns every decision about these rows; the TypeScript
-- worker only calls the SQL functions in the following migrations.

-- The queue catalog (docs/ARCHITECTURE.md §3): every physical PGMQ queue the kit uses.
create table switchyard.queues (
  queue_name text primary key
    check (switchyard.queue_name_problem(queue_name, false) is null),
  pgmq_name text not null,                 -- exact spelling in pgmq.meta
  ownership text not null check (ownership in ('private', 'shared')),
  owner_flow text,                         -- the flow that owns a private queue
  created_at timestamptz not null default now(),
  adopted_at timestamptz,                  -- set when an existing PGMQ queue was adopted
  lost_checked_at timestamptz,             -- the stall sweep's last look for lost messages
  check ((ownership = 'private') = (owner_flow is not null)),
  check (ownership = 'private' or position('__' in queue_name) = 0)
);

create table switchyard.flows (
  flow_slug text primary key,
  placement text not null check (placement in ('plain', 'step_queues', 'routed')),
  max_attempts int not null,
  base_delay int not null,
  max_delay int not null,                  -- cap of the retry delay (seconds)
  timeout int not null,
  shape jsonb not null,                    -- the exact shape it was compiled from
  created_at timestamptz not null default now()
);
-- Slugs are unique case-insensitively.
create unique index flows_slug_ci on switchyard.flows (lower(flow_slug));

create table switchyard.steps (
  flow_slug text not null references switchyard.flows on delete cascade,
  step_slug text not null,
  step_index int not null,
  queue_name text not null references switchyard.queues,
  deps_count int not null,
  max_attempts int,                        -- null: the flow's value
  base_delay int,
  max_delay int,
  timeout int,
  start_delay int not null default 0,
  primary key (flow_slug, step_slug),
  unique (flow_slug, step_index)
);
create index steps_queue on switchyard.steps (queue_name);

create table switchyard.deps (
  flow_slug text not null,
  dep_slug text not null,
  step_slug text not null,
  primary key (flow_slug, step_slug, dep_slug),
  foreign key (flow_slug, dep_slug) references switchyard.steps on delete cascade,
  foreign key (flow_slug, step_slug) references switchyard.steps on delete cascade
);
create index deps_by_dep on switchyard.deps (flow_slug, dep_slug);

-- Aliases: a stable name over one active concrete version.
create table switchyard.aliases (
  alias text primary key,
  flow_slug text not null references switchyard.flows,
  activated_at timestamptz not null default now()
);
create unique index aliases_ci on switchyard.aliases (lower(alias));

-- Which concrete versions a deployment declared under an alias (kept for drain status).
create table switchyard.alias_members (
  alias text not null,
  flow_slug text not null references switchyard.flows on delete cascade,
  added_at timestamptz not null default now(),
  primary key (alias, flow_slug)
);
create unique index alias_members_one_alias on switchyard.alias_members (flow_slug);

create table switchyard.alias_activations (
  activation_id bigint generated always as identity primary key,
  alias text not null,
  flow_slug text not null,
  previous_flow_slug text,
  activated_at timestamptz not null default now(),
  source text not null                     -- 'worker' (registry order) or 'operator'
);

create table switchyard.runs (
  run_id uuid primary key default gen_random_uuid(),
  flow_slug text not null references switchyard.flows,
  started_as text not null,                -- the alias or slug the caller used
  status text not null default 'started' check (status in ('started', 'completed', 'failed')),
  input jsonb not null,
  output jsonb,
  error text,
  remaining_steps int not null,
  started_at timestamptz not null default now(),
  completed_at timestamptz,
  failed_at timestamptz
);
create index runs_flow_started on switchyard.runs (flow_slug) where status = 'started';

create table switchyard.step_states (
  run_id uuid not null references switchyard.runs on delete cascade,
  flow_slug text not null,
  step_slug text not null,
  status text not null default 'created'
    check (status in ('created', 'started', 'completed', 'failed')),
  remaining_deps int not null,
  output jsonb,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  primary key (run_id, step_slug),
  foreign key (flow_slug, step_slug) references switchyard.steps on delete cascade
);
create index step_states_open on switchyard.step_states (flow_slug, step_slug)
  where status in ('created', 'started');

-- One task per (run, step). Its queue is a snapshot taken when the task is created;
-- every queue operation uses it, never a name recomputed from the flow.
create table switchyard.step_tasks (
  run_id uuid not null,
  step_slug text not null,
  flow_slug text not null,
  queue_name text not null references switchyard.queues,
  message_id bigint not null,
  status text not null default 'queued' check (status in ('queued', 'started', 'completed', 'failed')),
  attempts_count int not null default 0,
  max_attempts int not null,
  base_delay int not null,
  max_delay int not null,
  timeout int not null,
  worker_id uuid,
  error text,
  output jsonb,
  queued_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  primary key (run_id, step_slug),
  foreign key (run_id, step_slug) references switchyard.step_states on delete cascade,
  check (attempts_count <= max_attempts)
);
-- Message identity is (queue_name, message_id).
create unique index step_tasks_message on switchyard.step_tasks (queue_name, message_id);
create index step_tasks_live on switchyard.step_tasks (queue_name, flow_slug, step_slug)
  where status in ('queued', 'started');
create index step_tasks_worker on switchyard.step_tasks (worker_id) where status = 'started';

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
  created_at timestamptz not null default now(),
  last_woken_at timestamptz,
  check ((paused_at is null) = (pause_reason is null)),
  check (paused_at is not null or pause_detail is null)
);

create table switchyard.workers (
  worker_id uuid primary key,
  queue_name text not null,
  function_name text not null references switchyard.worker_functions,
  pair_set text not null,                  -- its exact support set: a key of switchyard.pair_sets
  started_at timestamptz not null default now(),
  last_heartbeat_at timestamptz not null default now(),
  -- Seconds without a heartbeat after which this worker's started tasks are recovered. The
  -- worker's own setting, stored at registration (at least heartbeat_window_floor_seconds());
  -- recovery never takes a window from its caller.
  heartbeat_window_seconds int not null default 15 check (heartbeat_window_seconds >= 2),
  deprecated_at timestamptz,
  stopped_at timestamptz,
  stop_reason text
);
create index workers_live on switchyard.workers (function_name) where stopped_at is null;

-- Worker liveness (docs/ARCHITECTURE.md §6), defined once for every SQL function that asks.
--   running: not stopped, and heart-beat within the window (a worker that crashed without
--            stopping stops counting once its heartbeat is that old). A deprecated worker
--            still runs until it stops: a fence waits for it (fence_status), and stall
--            recovery leaves its tasks alone (recover_stalled recovers the tasks of workers
--            that are not running).
--   live:    running and not deprecated: the keep-alive wakes a queue function without a
--            live worker (keep_alive, function_states).
-- Plain SQL expressions, neither STRICT nor security definer and without SET options, so
-- the planner inlines them into the calling statement: the caller's index use is unchanged.
-- (That is also why search_path is not pinned here; the functions are schema-qualified and
-- every caller in the kit pins its own.)
create or replace function switchyard._worker_running(
  stopped_at timestamptz, last_heartbeat_at timestamptz, heartbeat_window_seconds int
)
returns boolean
language sql
stable
as $$
  select stopped_at is null
     and last_heartbeat_at >= pg_catalog.now()
                              - pg_catalog.make_interval(secs => heartbeat_window_seconds)
$$;

create or replace function switchyard._worker_live(
  stopped_at timestamptz, deprecated_at timestamptz, last_heartbeat_at timestamptz,
  heartbeat_window_seconds int
)
returns boolean
language sql
stable
as $$
  select deprecated_at is null
     and switchyard._worker_running(stopped_at, last_heartbeat_at, heartbeat_window_seconds)
$$;

-- The exact (flow, step) support sets workers registered, one row per pair, keyed by a hash
-- of the sorted set: the claim path looks up each message's pair by index, so its cost does
-- not grow with the registry. Workers with the same registry share one set.
create table switchyard.pair_sets (
  pair_set text not null,
  pair text not null,
  primary key (pair_set, pair)
);
