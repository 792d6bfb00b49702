-- Workers and the queue functions they run in: registration, heartbeats, the
-- persistent pause flag and the enabled flag (DESIGN.md §4, §6).

-- The function name rule: ^[a-z][a-z0-9_-]*$ and at most max_function_name_chars (63)
-- characters (docs/ARCHITECTURE.md §13). The message shows a long name cut, with its length.
create or replace function switchyard.assert_function_name(function_name text)
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_function_name_chars');
begin
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    raise exception using errcode = '22023', message = format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      switchyard._clip(function_name)),
      detail = jsonb_build_object(
        'rule', 'function_name', 'argument', 'function_name', 'value', left(function_name, 200))::text;
  end if;
  if char_length(function_name) > max_chars then
    raise exception using errcode = '22023', message = format(
      'function name %s is %s characters long, over the limit of %s characters',
      switchyard._clip(function_name), char_length(function_name), max_chars),
      detail = jsonb_build_object(
        'rule', 'max_function_name_chars', 'argument', 'function_name',
        'value', left(function_name, 200), 'size', char_length(function_name),
        'limit', max_chars)::text;
  end if;
  return function_name;
end
$$;

-- Registers a worker for one physical queue. Upserts its function's row but
-- never re-enables a disabled or paused function: those refuse to start. The
-- supported pairs are stored once, as a row set, for the claim path.
create or replace function switchyard.register_worker(
  worker_id uuid, queue_name text, function_name text, supported_pairs text[]
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
  if not exists (select 1 from switchyard.queues q where q.queue_name = queue) then
    raise exception using errcode = '22023', message = format(
      'queue %s is not registered: no compiled flow routes a step to it', to_json(queue)::text);
  end if;
  perform switchyard.assert_function_name(function_name);
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_worker.function_name, queue)
  on conflict do nothing;
  select * into fn from switchyard.worker_functions f
   where f.function_name = register_worker.function_name for share;
  if fn.queue_name <> queue then
    raise exception using errcode = '22023', message = format(
      'function %s is registered for queue %s, not %s',
      to_json(fn.function_name)::text, to_json(fn.queue_name)::text, to_json(queue)::text);
  end if;
  if fn.paused_at is not null then
    raise exception using errcode = 'SY001', message = format(
      'function %s is paused: %s', to_json(fn.function_name)::text, fn.pause_reason),
      hint = format('fix the registry, then select switchyard.resume_function(%L)', fn.function_name);
  end if;
  if not fn.enabled then
    raise exception using errcode = 'SY002', message = format(
      'function %s is disabled', to_json(fn.function_name)::text),
      hint = 'a fenced rollout disabled it; switchyard.fence_end() or set_function_enabled re-enables it';
  end if;
  insert into switchyard.workers (worker_id, queue_name, function_name, supported_pairs, pair_set)
  values (register_worker.worker_id, queue, register_worker.function_name,
          coalesce(supported_pairs, '{}'), switchyard.pair_set(supported_pairs));
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
     set stopped_at = coalesce(w.stopped_at, now()),
         stop_reason = coalesce(w.stop_reason, left(reason, 4000))
   where w.worker_id = worker_stopped.worker_id;
$$;

-- Asks every live worker of a function (or of all functions on a queue) to stop.
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
    raise exception using errcode = '22023', message = 'pause_function: a reason is required';
  end if;
  if char_length(reason) > switchyard.limit_value('max_reason_chars') then
    raise exception using errcode = '22023', message = format(
      'pause_function(%s): the reason is %s characters long, over the limit of %s characters; '
      'say why in fewer words and keep the details elsewhere',
      switchyard._clip(pause_function.function_name), char_length(reason),
      switchyard.limit_value('max_reason_chars')),
      detail = jsonb_build_object(
        'rule', 'max_reason_chars', 'argument', 'reason', 'value', left(reason, 200),
        'size', char_length(reason), 'limit', switchyard.limit_value('max_reason_chars'))::text;
  end if;
  update switchyard.worker_functions f
     set paused_at = now(), pause_reason = reason
   where f.function_name = pause_function.function_name and f.paused_at is null;
  if found then
    return true;
  end if;
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = pause_function.function_name) then
    raise exception using errcode = '22023', message = format(
      'unknown function %s', coalesce(to_json(pause_function.function_name)::text, 'null'));
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
    raise exception using errcode = '22023', message = format(
      'unknown function %s', coalesce(to_json(resume_function.function_name)::text, 'null'));
  end if;
  update switchyard.worker_functions f
     set paused_at = null, pause_reason = null
   where f.function_name = resume_function.function_name and f.paused_at is not null;
  return found;
end
$$;

-- Registers (or updates the queue of) a function without starting a worker; the
-- scaffold's migration calls this. Never re-enables or unpauses an existing row.
create or replace function switchyard.register_function(function_name text, queue_name text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform switchyard.assert_function_name(function_name);
  perform switchyard.assert_queue_name(queue_name, false);
  -- A function polls a queue of the catalog (docs/ARCHITECTURE.md §3): one a compiled flow
  -- routes to, or a shared queue provisioned ahead (the scaffold's migration does that).
  if not exists (select 1 from switchyard.queues q where q.queue_name = register_function.queue_name) then
    raise exception using errcode = '22023', message = format(
      'register_function(%s): queue %s is unknown: it is not in the queue catalog '
      '(switchyard.queues), so no compiled flow routes a step to it; provision a shared queue '
      'first with select switchyard.ensure_shared_queue(%L), or start a worker that routes to it',
      to_json(function_name)::text, to_json(queue_name)::text, queue_name),
      detail = jsonb_build_object(
        'rule', 'queue_unknown', 'argument', 'queue_name', 'value', queue_name,
        'function_name', function_name)::text;
  end if;
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
    raise exception using errcode = '22023', message = format(
      'unknown function %s', coalesce(to_json(set_function_enabled.function_name)::text, 'null'));
  end if;
  update switchyard.worker_functions f set enabled = set_function_enabled.enabled
   where f.function_name = set_function_enabled.function_name;
  return previous;
end
$$;
