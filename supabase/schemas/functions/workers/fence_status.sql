-- The open fence, one row per member queue function; no rows when no fence is open.
-- live_workers: workers that still run (switchyard._worker_running: not stopped and
-- heart-beat within the window, switchyard._heartbeat_window: the worker's own window, or
-- heartbeat_window_seconds when that is larger; the workers fence_begin deprecated count
-- until they stop, which is what the fence waits for). started_tasks: tasks those workers
-- still run. stalled_tasks: started tasks held by workers of the function that stopped or
-- went silent; they do not hold the fence, the next worker's stall recovery requeues them.
-- quiet: no live worker and no started task of one.
create or replace function switchyard.fence_status(heartbeat_window_seconds int default 15)
returns table (
  fence_id bigint, opened_at timestamptz, function_name text, queue_name text,
  was_enabled boolean, enabled boolean, paused boolean,
  live_workers int, started_tasks int, stalled_tasks int, quiet boolean
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
      'fence_status: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  return query
    with members as (
      select fe.fence_id, fe.opened_at, m.function_name, m.was_enabled,
             f.queue_name, f.enabled, f.paused_at is not null as paused
        from switchyard.fences fe
        join switchyard.fence_members m on m.fence_id = fe.fence_id
        join switchyard.worker_functions f on f.function_name = m.function_name
       where fe.closed_at is null
    ),
    workers as (
      select w.function_name, w.worker_id,
             switchyard._worker_running(
               w.stopped_at, w.last_heartbeat_at,
               switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                            fence_status.heartbeat_window_seconds)) as live
        from switchyard.workers w
       where w.function_name in (select mb.function_name from members mb)
    ),
    counted as (
      select mb.function_name,
             (select count(*) from workers w
               where w.function_name = mb.function_name and w.live)::int as live_workers,
             (select count(*) from switchyard.step_tasks t
                join workers w on w.worker_id = t.worker_id and w.live
               where w.function_name = mb.function_name and t.status = 'started')::int as started_tasks,
             (select count(*) from switchyard.step_tasks t
                join workers w on w.worker_id = t.worker_id and not w.live
               where w.function_name = mb.function_name and t.status = 'started')::int as stalled_tasks
        from members mb
    )
    select mb.fence_id, mb.opened_at, mb.function_name, mb.queue_name,
           mb.was_enabled, mb.enabled, mb.paused,
           c.live_workers, c.started_tasks, c.stalled_tasks,
           c.live_workers = 0 and c.started_tasks = 0
      from members mb
      join counted c on c.function_name = mb.function_name
     order by mb.function_name;
end
$$;
