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
       set deprecated_at = coalesce(w.deprecated_at, switchyard.clock_now())
     where w.function_name = deprecate_workers.function_name and w.stopped_at is null
    returning 1
  )
  select count(*)::int from d;
$$;
