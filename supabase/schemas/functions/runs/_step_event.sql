-- Steps were inserted past 'created' or changed status (a statement trigger, see _run_event).
-- The statement's runs are locked, in run order, before their events get numbers (see the
-- table); every writer of a run's steps holds those locks already (complete_tasks, fail_task
-- and stall recovery lock the run, cancel_run and retry_run lock it first, a run being started
-- is new), so this costs a lookup by key per run.
create or replace function switchyard._step_event()
returns trigger
language plpgsql
security definer
set search_path = ''
set enable_hashjoin = on
as $$
declare
  notified bigint;
begin
  -- A statement that wrote no row (the dependency count-down of a batch without successors):
  -- nothing to do, and one probe instead of the query below.
  perform from switchyard_new_steps limit 1;
  if not found then
    return null;
  end if;
  if tg_op = 'INSERT' then
    with t as (select n.run_id, n.flow_slug, n.step_slug, n.status as event,
                      row_number() over () as ord
                 from switchyard_new_steps n
                where n.status <> 'created'),
         -- A flow with events: false writes no row (and needs no lock for its number); the
         -- notification still wakes the client's waits.
         e as (select t.* from t left join switchyard.flows f on f.flow_slug = t.flow_slug
                where coalesce(f.events, true)),
         r as (select r.run_id, r.owner from switchyard.runs r
                where r.run_id in (select e.run_id from e)
                order by r.run_id for update),
         written as (
           insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
           select e.run_id, r.owner, e.flow_slug, e.step_slug, e.event
             from e join r on r.run_id = e.run_id
            order by e.ord)
    select count(pg_notify('switchyard_run_events', t.run_id::text)) into notified from t;
  else
    with t as (select n.run_id, n.flow_slug, n.step_slug, n.status as event, n.ord
                 from (select n.*, row_number() over () as ord from switchyard_new_steps n) n
                 join switchyard_old_steps o
                   on o.run_id = n.run_id and o.step_slug = n.step_slug
                where o.status is distinct from n.status and n.status <> 'created'),
         e as (select t.* from t left join switchyard.flows f on f.flow_slug = t.flow_slug
                where coalesce(f.events, true)),
         r as (select r.run_id, r.owner from switchyard.runs r
                where r.run_id in (select e.run_id from e)
                order by r.run_id for update),
         written as (
           insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
           select e.run_id, r.owner, e.flow_slug, e.step_slug, e.event
             from e join r on r.run_id = e.run_id
            order by e.ord)
    select count(pg_notify('switchyard_run_events', t.run_id::text)) into notified from t;
  end if;
  return null;
end
$$;
