-- Worker liveness (docs/design/versions.md), defined once for every SQL function that asks.
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
     and last_heartbeat_at >= switchyard.clock_now()
                              - pg_catalog.make_interval(secs => heartbeat_window_seconds)
$$;
