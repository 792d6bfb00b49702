-- The window, in seconds, a liveness judgement (switchyard._worker_running,
-- switchyard._worker_live) uses for a worker: its own (workers.heartbeat_window_seconds),
-- widened by the caller's when that is larger, never narrowed; a null caller's window leaves the
-- worker's own (docs/design/versions.md, live worker; docs/design/claim.md#stall-recovery). A
-- worker heart-beats at a third of
-- its window or more often, so judging it by a caller's shorter window would call a live worker
-- silent between two heartbeats. Plain SQL like the liveness helpers, so the planner inlines it.
create or replace function switchyard._heartbeat_window(worker_window int, caller_window int)
returns int
language sql
immutable
as $$
  select greatest(worker_window, caller_window)
$$;
