-- Opens the fenced rollout (docs/design/versions.md): records every given queue function's
-- enabled flag, disables them and deprecates their workers, so no old worker takes work while
-- the new version deploys. Fences do not nest (SY010); unknown functions are refused (SY003).
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
    perform switchyard._refuse('22023', 'function_names_missing', 'function_names',
      function_names::text,
      'fence_begin: no functions given: list every queue function the rollout affects');
  end if;
  if array_position(function_names, null) is not null then
    perform switchyard._refuse('22023', 'function_name_null', 'function_names',
      function_names::text,
      'fence_begin: a function name is null: list function names only');
  end if;
  perform switchyard._lock_fences();

  select * into open_fence from switchyard.fences f where f.closed_at is null;
  if found then
    raise exception using errcode = 'SY010', message = format(
      'fence_begin: fence %s is already open since %s over functions %s; fences do not nest',
      open_fence.fence_id, open_fence.opened_at,
      (select string_agg(switchyard._clip(m.function_name), ', ' order by m.function_name)
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
      (select string_agg(switchyard._clip(u), ', ') from unnest(unknown) u)),
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
