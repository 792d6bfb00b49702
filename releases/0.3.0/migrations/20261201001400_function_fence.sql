-- The fenced rollout (docs/ARCHITECTURE.md §6): one fence around every affected queue function.
--
--   fence_begin(functions)  records each queue function's exact enabled value, disables
--                           it and deprecates its live workers;
--   fence_status()          per queue function: live workers and their started tasks
--                           (the fence is quiet when both are zero everywhere);
--   fence_end()             restores the recorded values: re-enables only the
--                           queue functions that were enabled before; closes the fence.
--
-- While the fence is open the operator deploys every replacement registry; the
-- disabled queue functions refuse to start. At most one fence is open at a time: fences
-- do not nest, and a second fence_begin is refused until fence_end. Pause flags
-- are never touched: a paused function stays paused through a fence.

create table switchyard.fences (
  fence_id bigint generated always as identity primary key,
  opened_at timestamptz not null default now(),
  closed_at timestamptz
);
-- At most one open fence.
create unique index fences_one_open on switchyard.fences ((true)) where closed_at is null;

create table switchyard.fence_members (
  fence_id bigint not null references switchyard.fences,
  function_name text not null references switchyard.worker_functions,
  was_enabled boolean not null,             -- the exact value before the fence
  deprecated_workers int not null,          -- unstopped workers asked to stop at fence_begin
  primary key (fence_id, function_name)
);

create or replace function switchyard._lock_fences()
returns void
language sql
volatile
set search_path = ''
as $$
  select pg_advisory_xact_lock(hashtextextended('switchyard.fence', 0))
$$;

-- Opens a fence over the named queue functions. Refuses (changing nothing) when a name
-- is missing, null or unknown, or when a fence is already open.
create or replace function switchyard.fence_begin(function_names text[])
returns table (fence_id bigint, function_name text, was_enabled boolean, deprecated_workers int)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  names text[];
  unknown text[];
  open_fence switchyard.fences;
  new_fence bigint;
  fn text;
  previous boolean;
  deprecated int;
begin
  if function_names is null or cardinality(function_names) = 0 then
    raise exception using errcode = '22023', message =
      'fence_begin: no functions given: list every queue function the rollout affects',
      detail = jsonb_build_object(
        'rule', 'function_names_missing', 'argument', 'function_names',
        'value', function_names::text)::text;
  end if;
  if array_position(function_names, null) is not null then
    raise exception using errcode = '22023', message =
      'fence_begin: a function name is null: list function names only',
      detail = jsonb_build_object(
        'rule', 'function_name_null', 'argument', 'function_names',
        'value', left(function_names::text, 200))::text;
  end if;
  perform switchyard._lock_fences();

  select * into open_fence from switchyard.fences f where f.closed_at is null;
  if found then
    raise exception using errcode = 'SY010', message = format(
      'fence_begin: fence %s is already open since %s over functions %s; fences do not nest',
      open_fence.fence_id, open_fence.opened_at,
      (select string_agg(to_json(m.function_name)::text, ', ' order by m.function_name)
         from switchyard.fence_members m where m.fence_id = open_fence.fence_id)),
      detail = jsonb_build_object('fence_id', open_fence.fence_id)::text,
      hint = 'finish that rollout with select * from switchyard.fence_end() first';
  end if;

  -- Sorted and distinct, so concurrent callers lock rows in one order.
  select array_agg(distinct n order by n) into names from unnest(function_names) n;
  select array_agg(n order by n) into unknown
    from unnest(names) n
   where not exists (select 1 from switchyard.worker_functions f where f.function_name = n);
  if unknown is not null then
    raise exception using errcode = 'SY003', message = format(
      'fence_begin: unknown function(s) %s: register a function with its scaffold migration '
      '(switchyard.register_function) or start its worker once',
      (select string_agg(to_json(u)::text, ', ') from unnest(unknown) u)),
      detail = jsonb_build_object(
        'function_names', (select jsonb_agg(left(u, 200) order by u) from unnest(unknown) u))::text;
  end if;

  insert into switchyard.fences as fe default values returning fe.fence_id into new_fence;
  foreach fn in array names loop
    -- The row lock waits for a worker registering right now (register_worker
    -- holds a share lock); that worker is then live and deprecated below.
    select f.enabled into previous from switchyard.worker_functions f
     where f.function_name = fn for update;
    update switchyard.worker_functions f set enabled = false where f.function_name = fn;
    deprecated := switchyard.deprecate_workers(fn);
    insert into switchyard.fence_members (fence_id, function_name, was_enabled, deprecated_workers)
    values (new_fence, fn, previous, deprecated);
  end loop;

  return query
    select m.fence_id, m.function_name, m.was_enabled, m.deprecated_workers
      from switchyard.fence_members m
     where m.fence_id = new_fence
     order by m.function_name;
end
$$;

-- The open fence, one row per member queue function; no rows when no fence is open.
-- live_workers: workers that still run (switchyard._worker_running: not stopped and
-- heart-beat within the window; the workers fence_begin deprecated count until they
-- stop, which is what the fence waits for). started_tasks: tasks those workers still run.
-- stalled_tasks: started tasks held by workers of the function that stopped or
-- went silent; they do not hold the fence, the next worker's stall recovery
-- requeues them. quiet: no live worker and no started task of one.
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
             switchyard._worker_running(w.stopped_at, w.last_heartbeat_at,
                                        fence_status.heartbeat_window_seconds) as live
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

-- Closes the open fence and sets every member's enabled flag back to the value
-- recorded at fence_begin: only queue functions that were enabled before are enabled.
create or replace function switchyard.fence_end()
returns table (fence_id bigint, function_name text, was_enabled boolean, enabled boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  open_id bigint;
begin
  perform switchyard._lock_fences();
  select f.fence_id into open_id from switchyard.fences f where f.closed_at is null for update;
  if not found then
    raise exception using errcode = 'SY011', message = 'fence_end: no fence is open',
      detail = jsonb_build_object()::text,
      hint = 'open one with select * from switchyard.fence_begin(array[''<function>'', ...])';
  end if;
  update switchyard.worker_functions f
     set enabled = m.was_enabled
    from switchyard.fence_members m
   where m.fence_id = open_id and f.function_name = m.function_name;
  update switchyard.fences f set closed_at = now() where f.fence_id = open_id;
  return query
    select m.fence_id, m.function_name, m.was_enabled, f.enabled
      from switchyard.fence_members m
      join switchyard.worker_functions f on f.function_name = m.function_name
     where m.fence_id = open_id
     order by m.function_name;
end
$$;

revoke all on switchyard.fences, switchyard.fence_members from public;
revoke execute on function
  switchyard._lock_fences(),
  switchyard.fence_begin(text[]),
  switchyard.fence_status(int),
  switchyard.fence_end()
from public;

do $$
begin
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant select on switchyard.fences, switchyard.fence_members to service_role;
    grant execute on function
      switchyard.fence_begin(text[]),
      switchyard.fence_status(int),
      switchyard.fence_end()
    to service_role;
  end if;
end
$$;
