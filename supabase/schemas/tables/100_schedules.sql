-- Schedules (docs/design/schedules.md): cron-started runs of an alias, exactly one run per tick.
create table switchyard.schedules (
  name text primary key check (name ~ '^[a-z][a-z0-9_-]{0,62}$'),
  alias text not null,                     -- what a tick starts: an alias (or a flow slug)
  cron text not null,                      -- five fields: minute hour day-of-month month day-of-week
  time_zone text not null default 'UTC',   -- the cron's fields are local times of this zone
  input jsonb not null default '{}',       -- the input of every run it starts
  overlap text not null default 'skip'
    check (overlap in ('skip', 'queue', 'cancel_previous')),
  catch_up text not null default 'latest'
    check (catch_up in ('none', 'latest', 'all')),
  catch_up_limit int not null default 10 check (catch_up_limit between 1 and 1000),
  enabled boolean not null default true,
  created_at timestamptz not null default switchyard.clock_now(),
  updated_at timestamptz not null default switchyard.clock_now(),
  checked_until timestamptz,               -- ticks up to here were considered (null: none yet)
  last_run_id uuid,                        -- the run of the latest started tick: the overlap test
  missed_ticks bigint not null default 0,  -- ticks the catch-up policy did not run
  skipped_ticks bigint not null default 0  -- ticks the overlap policy skipped
);

-- One row per considered tick that started, queued, skipped or could not start a run. The run id
-- is derived from (schedule, tick), so a second fire of the same tick is a no-op.
create table switchyard.schedule_ticks (
  schedule_name text not null references switchyard.schedules on delete cascade,
  tick_at timestamptz not null,
  run_id uuid not null,
  outcome text not null check (outcome in ('started', 'queued', 'skipped', 'failed')),
  error text,
  recorded_at timestamptz not null default switchyard.clock_now(),
  primary key (schedule_name, tick_at)
);

-- Queued ticks (overlap 'queue') of a schedule, oldest first.
create index schedule_ticks_queued on switchyard.schedule_ticks (schedule_name, tick_at)
  where outcome = 'queued';

-- Ticks by age, for their retention (30 days).
create index schedule_ticks_recorded on switchyard.schedule_ticks (recorded_at);
