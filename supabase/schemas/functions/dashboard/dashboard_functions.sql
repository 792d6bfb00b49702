-- Every queue function of switchyard.function_states (its flags and live workers) with its
-- unstopped workers, newest first (at most 20 each); `live` is switchyard._worker_live, the
-- one definition of docs/design/versions.md, over the worker's own window or the given one
-- when that is larger, as in function_states. A window below 1 second counts as 1.
create or replace function switchyard.dashboard_functions(heartbeat_window_seconds int default 15)
returns table (
  function_name text, queue_name text, enabled boolean, paused_at timestamptz,
  pause_reason text, last_woken_at timestamptz, live_workers int, workers jsonb
)
language sql
stable
security definer
set search_path = ''
as $$
  select s.function_name, s.queue_name, s.enabled, s.paused_at, s.pause_reason, s.last_woken_at,
         s.live_workers,
         coalesce((
           select jsonb_agg(jsonb_build_object(
                    'worker_id', w.worker_id, 'started_at', w.started_at,
                    'last_heartbeat_at', w.last_heartbeat_at, 'deprecated_at', w.deprecated_at,
                    'live', switchyard._worker_live(
                              w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                              switchyard._heartbeat_window(w.heartbeat_window_seconds, h.secs)))
                  order by w.started_at desc)
             from (select * from switchyard.workers w0
                    where w0.function_name = s.function_name and w0.stopped_at is null
                    order by w0.started_at desc limit 20) w
         ), '[]'::jsonb)
    from (select greatest(coalesce(dashboard_functions.heartbeat_window_seconds, 15), 1) as secs) h
    cross join lateral switchyard.function_states(null, h.secs) s
   order by s.function_name
$$;
