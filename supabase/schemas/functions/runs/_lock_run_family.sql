-- Takes the row locks of a run's family in the one order every writer of two runs of it
-- follows (docs/design/waits.md): bottom-up, deepest first (then by run id), the run's
-- ancestors last. A child run's end holds the child's row (its writer took it) and the trigger
-- runs_child_ended then takes its parent's; so cancel_run, which goes on to its children, takes
-- them all here first instead of parent before child, and neither can wait for the other in a
-- cycle. The family is the root ancestor (followed up child_runs) and its started descendants,
-- and always the run and its ancestors (a cancelled child's trigger takes a parent of any
-- status). A child started between reading the family and holding the last lock (by a
-- transaction holding its parent) is found on a second read: the locks are let go (the
-- subtransaction rolled back) and taken again, at most five times. A run with no family costs
-- two index probes and its own lock. With no_wait, a row another transaction holds raises
-- 55P03 (lock_not_available) instead of waiting, holding none of them.
create or replace function switchyard._lock_run_family(run uuid, no_wait boolean default false)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  root uuid := run;
  up uuid;
  chain uuid[] := array[run];
  locked uuid[];
  tries int := 0;
  -- One statement for both ways of taking the locks: waiting, or nowait (55P03).
  wait_clause text := case when no_wait then ' nowait' else '' end;
begin
  loop
    select c.parent_run_id into up from switchyard.child_runs c where c.run_id = root;
    exit when not found;
    root := up;
    chain := chain || up;
  end loop;
  if root = run and not exists (select 1 from switchyard.child_runs c where c.parent_run_id = run) then
    execute 'select 1 from switchyard.runs r where r.run_id = $1 for update' || wait_clause
      using run;
    return;
  end if;
  loop
    tries := tries + 1;
    begin
      execute
        'select array_agg(x.run_id) from (
           with recursive family(run_id, depth) as (
             select $1, 0
             union all
             select c.run_id, f.depth + 1 from switchyard.child_runs c
               join family f on c.parent_run_id = f.run_id
           )
           select r.run_id from family f join switchyard.runs r on r.run_id = f.run_id
            where r.status = ''started'' or r.run_id = any ($2)
            order by f.depth desc, f.run_id
              for update of r' || wait_clause || ') x'
        into locked using root, chain;
      -- Every member held now was held before any lock of a parent: done.
      exit when tries >= 5 or not exists (
        with recursive family(run_id) as (
          select root
          union all
          select c.run_id from switchyard.child_runs c join family f on c.parent_run_id = f.run_id
        )
        select 1 from family f join switchyard.runs r on r.run_id = f.run_id
         where r.status = 'started' and not (r.run_id = any (coalesce(locked, '{}'))));
      -- Caught below, never seen by a caller: it rolls the locks back.
      raise exception using errcode = 'SY090', message = 'the run family grew: lock it again',
        detail = jsonb_build_object('rule', 'run_family_grew', 'run_id', run)::text;
    exception when sqlstate 'SY090' then
      null;
    end;
  end loop;
end
$$;
