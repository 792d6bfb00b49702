-- Workers and the queue functions they run in: registration, heartbeats, the
-- persistent pause flag and the enabled flag (docs/ARCHITECTURE.md §4, §6).

-- The smallest heartbeat window a worker may register with (seconds). The worker's
-- settings check the window against its heartbeat interval (at least 3 intervals) before
-- it starts; this floor holds for every caller of register_worker.
create or replace function switchyard.heartbeat_window_floor_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 2 $$;

-- Registers a worker for one physical queue. Upserts its queue function's row but
-- never re-enables a disabled or paused queue function: those refuse to start. The
-- supported pairs are stored once, as a row set, for the claim path. The heartbeat
-- window is stored with the worker: stall recovery judges each worker by its own
-- (docs/ARCHITECTURE.md §5.6).
create or replace function switchyard.register_worker(
  worker_id uuid, queue_name text, function_name text, supported_pairs text[],
  heartbeat_window_seconds int default 15
)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  fn switchyard.worker_functions;
begin
  if heartbeat_window_seconds is null
     or heartbeat_window_seconds < switchyard.heartbeat_window_floor_seconds() then
    raise exception using errcode = '22023', message = format(
      'register_worker: heartbeat_window_seconds %s is invalid: use at least %s seconds '
      '(and at least 3 heartbeat intervals)',
      coalesce(heartbeat_window_seconds::text, 'null'), switchyard.heartbeat_window_floor_seconds()),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'heartbeat_window_seconds',
        'value', heartbeat_window_seconds::text,
        'min', switchyard.heartbeat_window_floor_seconds())::text;
  end if;
  if not exists (select 1 from switchyard.queues q where q.queue_name = queue) then
    raise exception using errcode = '22023', message = format(
      'queue %s is not registered: no compiled flow routes a step to it', to_json(queue)::text),
      detail = jsonb_build_object(
        'rule', 'queue_unknown', 'argument', 'queue_name', 'value', left(queue, 200))::text;
  end if;
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    raise exception using errcode = '22023', message = format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      coalesce(to_json(function_name)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'function_name_format', 'argument', 'function_name',
        'value', left(function_name, 200))::text;
  end if;
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_worker.function_name, queue)
  on conflict do nothing;
  select * into fn from switchyard.worker_functions f
   where f.function_name = register_worker.function_name for share;
  if fn.queue_name <> queue then
    raise exception using errcode = '22023', message = format(
      'function %s is registered for queue %s, not %s',
      to_json(fn.function_name)::text, to_json(fn.queue_name)::text, to_json(queue)::text),
      detail = jsonb_build_object(
        'rule', 'function_queue_mismatch', 'argument', 'queue_name', 'value', left(queue, 200),
        'function_name', fn.function_name, 'registered_queue', fn.queue_name)::text;
  end if;
  if fn.paused_at is not null then
    raise exception using errcode = 'SY001', message = format(
      'function %s is paused: %s', to_json(fn.function_name)::text, fn.pause_reason),
      detail = jsonb_build_object(
        'function_name', fn.function_name, 'reason', fn.pause_reason)::text,
      hint = format('fix the registry, then select switchyard.resume_function(%L)', fn.function_name);
  end if;
  if not fn.enabled then
    raise exception using errcode = 'SY002', message = format(
      'function %s is disabled', to_json(fn.function_name)::text),
      detail = jsonb_build_object('function_name', fn.function_name)::text,
      hint = 'a fenced rollout disabled it; switchyard.fence_end() or set_function_enabled re-enables it';
  end if;
  insert into switchyard.workers (worker_id, queue_name, function_name, pair_set,
                                  heartbeat_window_seconds)
  values (register_worker.worker_id, queue, register_worker.function_name,
          switchyard.pair_set(supported_pairs), register_worker.heartbeat_window_seconds);
end
$$;

-- Every queue function with its durable flags and its number of live workers (see
-- switchyard._worker_live), by name; one row when a name is given, none when it is unknown.
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
               and switchyard._worker_live(w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                                           function_states.heartbeat_window_seconds))::int
      from switchyard.worker_functions f
     where p_function_name is null or f.function_name = p_function_name
     order by f.function_name;
end
$$;

-- Heartbeat; tells the worker whether it must stop: 'ok', 'deprecated', 'paused' or 'disabled'.
create or replace function switchyard.heartbeat(worker_id uuid)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  w switchyard.workers;
  fn switchyard.worker_functions;
begin
  update switchyard.workers x set last_heartbeat_at = now()
   where x.worker_id = heartbeat.worker_id
  returning * into w;
  if not found then
    return 'deprecated';
  end if;
  select * into fn from switchyard.worker_functions f where f.function_name = w.function_name;
  if w.deprecated_at is not null or w.stopped_at is not null then
    return 'deprecated';
  elsif fn.paused_at is not null then
    return 'paused';
  elsif not fn.enabled then
    return 'disabled';
  end if;
  return 'ok';
end
$$;

create or replace function switchyard.worker_stopped(worker_id uuid, reason text default null)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update switchyard.workers w
     set stopped_at = coalesce(w.stopped_at, now()), stop_reason = coalesce(w.stop_reason, reason)
   where w.worker_id = worker_stopped.worker_id;
$$;

-- Asks every worker of a queue function that has not stopped yet to stop.
create or replace function switchyard.deprecate_workers(function_name text)
returns int
language sql
volatile
security definer
set search_path = ''
as $$
  with d as (
    update switchyard.workers w
       set deprecated_at = coalesce(w.deprecated_at, now())
     where w.function_name = deprecate_workers.function_name and w.stopped_at is null
    returning 1
  )
  select count(*)::int from d;
$$;

create or replace function switchyard.pause_function(function_name text, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if coalesce(trim(reason), '') = '' then
    raise exception using errcode = '22023', message = 'pause_function: a reason is required',
      detail = jsonb_build_object(
        'rule', 'reason_missing', 'argument', 'reason', 'value', left(reason, 200))::text;
  end if;
  update switchyard.worker_functions f
     set paused_at = now(), pause_reason = reason
   where f.function_name = pause_function.function_name and f.paused_at is null;
  if found then
    return true;
  end if;
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = pause_function.function_name) then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', coalesce(to_json(pause_function.function_name)::text, 'null')),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(pause_function.function_name, 200)))::text;
  end if;
  return false;      -- already paused: the first reason is kept
end
$$;

-- The only way back from a pause.
create or replace function switchyard.resume_function(function_name text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = resume_function.function_name) then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', coalesce(to_json(resume_function.function_name)::text, 'null')),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(resume_function.function_name, 200)))::text;
  end if;
  update switchyard.worker_functions f
     set paused_at = null, pause_reason = null, pause_detail = null
   where f.function_name = resume_function.function_name and f.paused_at is not null;
  return found;
end
$$;

-- Registers (or updates the queue of) a queue function without starting a worker; the
-- scaffold's migration calls this. Never re-enables or unpauses an existing row.
create or replace function switchyard.register_function(function_name text, queue_name text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    raise exception using errcode = '22023', message = format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      coalesce(to_json(function_name)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'function_name_format', 'argument', 'function_name',
        'value', left(function_name, 200))::text;
  end if;
  perform switchyard.assert_queue_name(queue_name, false);
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_function.function_name, register_function.queue_name)
  on conflict on constraint worker_functions_pkey do update set queue_name = excluded.queue_name;
end
$$;

create or replace function switchyard.set_function_enabled(function_name text, enabled boolean)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous boolean;
begin
  select f.enabled into previous from switchyard.worker_functions f
   where f.function_name = set_function_enabled.function_name for update;
  if not found then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', coalesce(to_json(set_function_enabled.function_name)::text, 'null')),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(set_function_enabled.function_name, 200)))::text;
  end if;
  update switchyard.worker_functions f set enabled = set_function_enabled.enabled
   where f.function_name = set_function_enabled.function_name;
  return previous;
end
$$;
