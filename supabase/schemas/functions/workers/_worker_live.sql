-- Whether a worker is live (docs/design/versions.md): running (_worker_running) and not asked to
-- stop. Plain SQL without a SET clause, so the planner inlines it into its callers.
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
