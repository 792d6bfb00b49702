-- Row triggers whose WHEN condition is a status change: the many updates that change no
-- status (a run's or step's counters) never call a function. A transaction's notifications
-- are delivered at commit and identical ones are folded, so each run touched is notified once.

-- A run was inserted ('started') or changed status ('retried' when a failed run starts again).
create or replace function switchyard._run_event()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  -- A flow with events: false writes no row; the notification still wakes the client's waits.
  if not (select f.events from switchyard.flows f where f.flow_slug = new.flow_slug) then
    perform pg_notify('switchyard_run_events', new.run_id::text);
    return null;
  end if;
  insert into switchyard.run_events (run_id, owner, flow_slug, event)
  values (new.run_id, new.owner, new.flow_slug,
          case when tg_op = 'UPDATE' and old.status = 'failed' and new.status = 'started'
               then 'retried' else new.status end);
  perform pg_notify('switchyard_run_events', new.run_id::text);
  return null;
end
$$;
