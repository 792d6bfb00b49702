-- Compiled flows, their steps and dependencies (docs/design/overview.md#layers,
-- docs/design/overview.md#identity-rules).
create table switchyard.flows (
  flow_slug text primary key,
  placement text not null check (placement in ('plain', 'step_queues', 'routed')),
  max_attempts int not null,
  base_delay int not null,
  max_delay int not null,                  -- cap of the retry delay (seconds)
  timeout int not null,
  shape jsonb not null,                    -- the exact shape it was compiled from
  created_at timestamptz not null default switchyard.clock_now(),
  run_timeout int                          -- a run's time limit in seconds (runTimeout), or null
    check (run_timeout between 1 and 31536000),
  -- false (the flow option events: false): its runs and steps write no run_events rows; their
  -- transitions still notify (docs/design/client.md).
  events boolean not null default true
);

-- Slugs are unique case-insensitively.
create unique index flows_slug_ci on switchyard.flows (lower(flow_slug));

create table switchyard.steps (
  flow_slug text not null references switchyard.flows on delete cascade,
  step_slug text not null,
  step_index int not null,
  queue_name text references switchyard.queues,   -- null: a wait or sleep step (no task)
  deps_count int not null,
  max_attempts int,                        -- null: the flow's value
  base_delay int,
  max_delay int,
  timeout int,
  start_delay int not null default 0,
  -- 'map' (docs/design/runs.md#map-steps): one task per element of an array, the run input (a
  -- root map) or the output of its one dependency. 'wait' and 'sleep' (docs/design/waits.md): no
  -- task and no
  -- queue; a wait ends with a signal or its timeout, a sleep after wait_timeout seconds; a 'flow'
  -- step starts a child run and ends with it.
  step_type text not null default 'single',
  -- Condition (docs/design/runs.md#ready-steps-conditions-and-skips): the step runs when its input
  -- contains cond_if and
  -- does not contain cond_if_not (jsonb @>); null means no pattern.
  cond_if jsonb,
  cond_if_not jsonb,
  when_unmet text not null default 'skip'
    check (when_unmet in ('skip', 'skip-cascade', 'fail')),
  -- What a task out of attempts does ('pause': pauses the run for an operator,
  -- docs/design/rerun.md).
  when_exhausted text not null default 'fail'
    check (when_exhausted in ('fail', 'skip', 'skip-cascade', 'pause')),
  primary key (flow_slug, step_slug),
  unique (flow_slug, step_index),
  -- Flow control (docs/design/flow-control.md#rate-limits-and-keyed-concurrency), runtime options:
  -- the rate limit the step's
  -- tasks draw from (switchyard.rate_limits by name; cost tokens per start), and the keyed
  -- concurrency: at most concurrency_limit started tasks per value of the key at the JSON
  -- path concurrency_path in the run input ('run') or the task's input ('step').
  rate_limit text,
  rate_cost int not null default 1,
  concurrency_path text[],
  concurrency_input text not null default 'run' check (concurrency_input in ('run', 'step')),
  concurrency_limit int,
  -- A wait step's timeout (a sleep's length) in seconds; null: a wait without timeout.
  wait_timeout int,
  -- What a wait's timeout does: fail the run, or skip the step.
  on_timeout text not null default 'fail' check (on_timeout in ('fail', 'skip')),
  constraint steps_step_type_check check (step_type in ('single', 'map', 'wait', 'sleep', 'flow')),
  constraint steps_queue_by_type
    check ((queue_name is null) = (step_type in ('wait', 'sleep', 'flow'))),
  -- A 'flow' step (docs/design/waits.md): the alias whose active version it starts.
  child_alias text,
  -- A sleep until a time (docs/design/waits.md): the path of keys to an ISO 8601
  -- timestamp in the run input ('run') or the step's input ('step'); null: a sleep of
  -- wait_timeout seconds.
  sleep_until text[],
  sleep_until_input text check (sleep_until_input in ('run', 'step')),
  constraint steps_sleep_until check (
    (sleep_until is null) = (sleep_until_input is null)
    and (sleep_until is null or (step_type = 'sleep' and wait_timeout is null)))
);

create index steps_queue on switchyard.steps (queue_name);

-- The steps under flow control, by queue: start_tasks asks it once per batch, so a queue with
-- none pays one probe of an empty index
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency).
create index steps_flow_control on switchyard.steps (queue_name)
  where rate_limit is not null or concurrency_limit is not null;

create table switchyard.deps (
  flow_slug text not null,
  dep_slug text not null,
  step_slug text not null,
  primary key (flow_slug, step_slug, dep_slug),
  foreign key (flow_slug, dep_slug) references switchyard.steps on delete cascade,
  foreign key (flow_slug, step_slug) references switchyard.steps on delete cascade
);

create index deps_by_dep on switchyard.deps (flow_slug, dep_slug);

-- Every change of a flow's runtime options: who (session user and application name), when,
-- the options before and after, and the differences in words.
create table switchyard.flow_option_changes (
  change_id bigint generated always as identity primary key,
  flow_slug text not null references switchyard.flows on delete cascade,
  changed_at timestamptz not null default switchyard.clock_now(),
  changed_by text not null,
  application_name text,
  old_options jsonb not null,
  new_options jsonb not null,
  differences text[] not null
);

create index flow_option_changes_flow on switchyard.flow_option_changes (flow_slug, change_id);
