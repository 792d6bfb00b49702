-- A step changed status (or was inserted past 'created'). The run is locked before the event
-- gets its number (see the table); every writer of a run's steps holds that lock already
-- (complete_tasks, fail_task and stall recovery lock the run, cancel_run and retry_run lock
-- it first, a run being started is new), so this costs a lookup by key.
create or replace function switchyard._step_event()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  run_owner uuid;
begin
  -- A flow with events: false writes no row (and needs no lock for its number); the
  -- notification still wakes the client's waits.
  if not (select f.events from switchyard.flows f where f.flow_slug = new.flow_slug) then
    perform pg_notify('switchyard_run_events', new.run_id::text);
    return null;
  end if;
  select r.owner into run_owner from switchyard.runs r where r.run_id = new.run_id for update;
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
  values (new.run_id, run_owner, new.flow_slug, new.step_slug, new.status);
  perform pg_notify('switchyard_run_events', new.run_id::text);
  return null;
end
$$;
