-- Every queue function with its durable flags and its number of live workers (see
-- switchyard._worker_live; each worker judged by its own window, or by
-- heartbeat_window_seconds when that is larger), by name; one row when a name is given, none
-- when it is unknown.
create or replace function switchyard.function_states(
  p_function_name text default null,
  heartbeat_window_seconds int default 15
)
returns table (
  function_name text, queue_name text, enabled boolean, paused_at timestamptz,
  pause_reason text, last_woken_at timestamptz, live_workers int
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'function_states: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  return query
    select f.function_name, f.queue_name, f.enabled, f.paused_at, f.pause_reason,
           f.last_woken_at,
           (select count(*) from switchyard.workers w
             where w.function_name = f.function_name
               and switchyard._worker_live(
                     w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                     switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                                  function_states.heartbeat_window_seconds)))::int
      from switchyard.worker_functions f
     where p_function_name is null or f.function_name = p_function_name
     order by f.function_name;
end
$$;
