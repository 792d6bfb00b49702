-- Every liveness judgement uses the worker's own heartbeat window (docs/ARCHITECTURE.md §6,
-- live worker; §5.6). A worker stores its window at registration
-- (workers.heartbeat_window_seconds) and heart-beats at a third of it or more often; stall
-- recovery already judges it by that window. The operator calls judged it by the window their
-- caller passed (default 15 s), so a worker started with a 60 s window, heart-beating every
-- 20 s, looked silent between two heartbeats: a fence reported the rollout quiet while the
-- worker still ran tasks, the keep-alive woke a function that had a live worker, the dashboard
-- showed a live worker as not live. Now each call judges each worker by the larger of the
-- caller's window and the worker's own: a caller can widen the window, never narrow it.
--
-- fence_status, keep_alive, function_states and dashboard_functions are defined again whole
-- from their latest definitions (20261201001400_function_fence.sql,
-- 20261202000300_function_keep_alive_urls.sql, 20261201001000_function_workers.sql,
-- 20261201002000_function_dashboard.sql), with their signatures, so their privileges stay.
-- Stall recovery (recover_stalled) passes the worker's own window already and is unchanged.

-- The window, in seconds, a liveness judgement (switchyard._worker_running,
-- switchyard._worker_live) uses for a worker: its own (workers.heartbeat_window_seconds),
-- widened by the caller's when that is larger, never narrowed. A null caller's window leaves
-- the worker's own. Plain SQL like the liveness helpers, so the planner inlines it.
create or replace function switchyard._heartbeat_window(worker_window int, caller_window int)
returns int
language sql
immutable
as $$
  select greatest(worker_window, caller_window)
$$;
