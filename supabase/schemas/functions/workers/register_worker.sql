-- Registers a worker for one physical queue. Upserts its queue function's row but
-- never re-enables a disabled or paused queue function: those refuse to start. The
-- supported pairs are stored once, as a row set, for the claim path. The heartbeat
-- window is stored with the worker: stall recovery judges each worker by its own
-- (docs/design/claim.md#stall-recovery).
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
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'register_worker: heartbeat_window_seconds %s is invalid: use at least %s seconds '
      '(and at least 3 heartbeat intervals)',
      coalesce(heartbeat_window_seconds::text, 'null'), switchyard.heartbeat_window_floor_seconds()),
      context => jsonb_build_object('min', switchyard.heartbeat_window_floor_seconds()));
  end if;
  if not exists (select 1 from switchyard.queues q where q.queue_name = queue) then
    perform switchyard._refuse('22023', 'queue_unknown', 'queue_name', queue, format(
      'queue %s is not registered: no compiled flow routes a step to it', to_json(queue)::text));
  end if;
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    perform switchyard._refuse('22023', 'function_name_format', 'function_name', function_name,
      format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      coalesce(to_json(function_name)::text, 'null')));
  end if;
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_worker.function_name, queue)
  on conflict do nothing;
  select * into fn from switchyard.worker_functions f
   where f.function_name = register_worker.function_name for share;
  if fn.queue_name <> queue then
    perform switchyard._refuse('22023', 'function_queue_mismatch', 'queue_name', queue, format(
      'function %s is registered for queue %s, not %s',
      to_json(fn.function_name)::text, to_json(fn.queue_name)::text, to_json(queue)::text),
      context => jsonb_build_object('function_name', fn.function_name,
        'registered_queue', fn.queue_name));
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
