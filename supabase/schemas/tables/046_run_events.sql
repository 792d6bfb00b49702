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
  -- 'waiting', 'signalled' and 'timed out': a wait step's (docs/design/waits.md).
  constraint run_events_event_check check (event in
    ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried', 'waiting',
     'signalled', 'timed out', 'progress', 'rerun', 'forked', 'moved', 'paused', 'resumed')),
  -- A 'progress' event's task (its index) and the JSON its handler reported with ctx.progress
  -- (switchyard.report_progress, docs/design/observability.md); for 'rerun', 'forked', 'moved',
  -- 'paused' and 'resumed' (docs/design/rerun.md), who did it and what; null for every other event.
  task_index int,
  data jsonb
);

-- Rows are readable only through row-level security: the table owner (the migration role)
-- and roles with BYPASSRLS (Supabase's service_role) read every row; a signed-in user reads
-- the events of the runs they own, once the opt-in grant of docs/design/client.md gives
-- them SELECT (nothing is granted here).
alter table switchyard.run_events enable row level security;

-- What a DELETE of an event (prune) publishes: Supabase Realtime sends it to every subscriber
-- of the table, without row-level security, with the old row's replica identity. The default,
-- the primary key, holds run_id: other users' run ids. The identity is event_id alone, a
-- number that names no run (docs/design/client.md). One more index entry per event.
create unique index run_events_event_id on switchyard.run_events (event_id);

alter table switchyard.run_events replica identity using index run_events_event_id;
