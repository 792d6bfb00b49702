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
    raise exception using errcode = '22023', message = format(
      'fence_status: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'heartbeat_window_seconds',
        'value', heartbeat_window_seconds::text, 'min', 1)::text;
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

-- Wakes every queue function that is enabled, unpaused, has no live worker and was not woken
-- within debounce_seconds (20261201001300_function_keep_alive.sql has the full description);
-- the base URL as in 20261202000300_function_keep_alive_urls.sql. A live worker
-- (switchyard._worker_live) has not stopped, is not deprecated, and heart-beat within its own
-- window, or within heartbeat_window_seconds when that is larger (switchyard._heartbeat_window).
create or replace function switchyard.keep_alive(
  base_url text default null,
  debounce_seconds int default 30,
  heartbeat_window_seconds int default 15
)
returns table (function_name text, queue_name text, url text, via text, request_id bigint)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  use_net boolean := switchyard._pg_net_available();
  configured text := (select s.value from switchyard.settings s where s.name = 'functions_base_url');
  given text := nullif(keep_alive.base_url, '');
  base text := coalesce(given, configured);
  problem text := case when base is not null then switchyard.base_url_problem(base) end;
  bearer text;
  woken record;
  target text;
  req bigint;
begin
  if debounce_seconds is null or debounce_seconds < 0 then
    raise exception using errcode = '22023', message = format(
      'keep_alive: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'debounce_seconds',
        'value', debounce_seconds::text, 'min', 0)::text;
  end if;
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    raise exception using errcode = '22023', message = format(
      'keep_alive: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'heartbeat_window_seconds',
        'value', heartbeat_window_seconds::text, 'min', 1)::text;
  end if;
  -- The bearer goes to this base URL only (docs/ARCHITECTURE.md §6, keep-alive).
  if problem is not null then
    raise exception using errcode = '22023', message = format(
      'keep_alive: base URL %s%s is invalid: %s', switchyard._clip(base),
      case when given is null then ' (setting functions_base_url)' else '' end, problem),
      detail = jsonb_build_object(
        'rule', 'url_format',
        'argument', case when given is null then 'functions_base_url' else 'base_url' end,
        'value', left(base, 200), 'problem', problem)::text;
  end if;
  if given is not null and configured is not null
     and switchyard._url_origin(given) <> switchyard._url_origin(configured) then
    raise exception using errcode = '22023', message = format(
      'keep_alive: base URL %s is refused: the bearer goes only to the configured host %s '
      '(setting functions_base_url); pass no base_url, or change the setting',
      switchyard._clip(given), to_json(switchyard._url_origin(configured))::text),
      detail = jsonb_build_object(
        'rule', 'bearer_host', 'argument', 'base_url', 'value', left(given, 200),
        'configured', switchyard._url_origin(configured))::text;
  end if;
  base := rtrim(base, '/');
  if use_net then
    bearer := switchyard._functions_bearer();
    if bearer ~ '[[:space:][:cntrl:]]' then
      raise exception using errcode = '22023', message =
        'keep_alive: the bearer (Vault secret switchyard_functions_bearer or setting '
        'functions_bearer) contains whitespace or a control character; store it without them',
        detail = jsonb_build_object(
          'rule', 'bearer_characters', 'argument', null, 'value', null,
          'setting', 'functions_bearer', 'vault_secret', 'switchyard_functions_bearer')::text;
    end if;
    if base is null then
      raise exception using errcode = '22023', message =
        'keep_alive: pg_net is installed but no base URL is configured: pass base_url or run '
        'select switchyard.set_setting(''functions_base_url'', ''https://<project-ref>.supabase.co'')',
        detail = jsonb_build_object(
          'rule', 'base_url_missing', 'argument', 'base_url', 'value', null,
          'setting', 'functions_base_url')::text;
    end if;
    if bearer is null then
      raise exception using errcode = '22023', message =
        'keep_alive: pg_net is installed but no bearer is configured: store the service role key '
        '(or the kit secret) in Vault as switchyard_functions_bearer, or run '
        'select switchyard.set_setting(''functions_bearer'', ''<key>'')',
        detail = jsonb_build_object(
          'rule', 'bearer_missing', 'argument', null, 'value', null,
          'setting', 'functions_bearer', 'vault_secret', 'switchyard_functions_bearer')::text;
    end if;
  end if;

  for woken in
    with due as (
      select f.function_name
        from switchyard.worker_functions f
       where f.enabled
         and f.paused_at is null
         and (f.last_woken_at is null
              or f.last_woken_at <= now() - make_interval(secs => keep_alive.debounce_seconds))
         and not exists (
           select 1 from switchyard.workers w
            where w.function_name = f.function_name
              and switchyard._worker_live(
                    w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                    switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                                 keep_alive.heartbeat_window_seconds)))
       order by f.function_name
       for update of f skip locked
    )
    update switchyard.worker_functions f
       set last_woken_at = now()
      from due
     where f.function_name = due.function_name
    returning f.function_name, f.queue_name
  loop
    target := coalesce(base, '') || '/functions/v1/' || woken.function_name;
    req := null;
    if use_net then
      execute 'select net.http_post(url := $1, body := $2, headers := $3)'
        into req
        using target,
              jsonb_build_object('source', 'switchyard.keep_alive', 'function', woken.function_name),
              jsonb_build_object('Content-Type', 'application/json',
                                 'Authorization', 'Bearer ' || bearer);
    end if;
    insert into switchyard.wake_requests (function_name, queue_name, url, via, request_id)
    values (woken.function_name, woken.queue_name, target,
            case when use_net then 'pg_net' else 'recorded' end, req);
    function_name := woken.function_name;
    queue_name := woken.queue_name;
    url := target;
    via := case when use_net then 'pg_net' else 'recorded' end;
    request_id := req;
    return next;
  end loop;
end
$$;

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
    raise exception using errcode = '22023', message = format(
      'function_states: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'heartbeat_window_seconds',
        'value', heartbeat_window_seconds::text, 'min', 1)::text;
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

-- Every queue function of switchyard.function_states (its flags and live workers) with its
-- unstopped workers, newest first (at most 20 each); `live` is switchyard._worker_live, the
-- one definition of docs/ARCHITECTURE.md §6, over the worker's own window or the given one
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

-- Privileges as in the limits migration (20261202000200_function_limits.sql): the helper is
-- for the SQL core only, nothing for PUBLIC (so nothing for anon or authenticated). The
-- redefined functions keep their signatures and so their privileges.
revoke execute on function switchyard._heartbeat_window(int, int) from public;
