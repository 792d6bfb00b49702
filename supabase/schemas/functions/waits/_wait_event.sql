-- Records one of a wait step's own run events (docs/design/waits.md): 'waiting' (no
-- signal yet, the step waits), 'signalled' (its signal is delivered) or 'timed out', next to
-- the status events the triggers write. The caller holds the run's row lock. A flow with
-- events: false writes no row, and still notifies (docs/design/client.md).
create or replace function switchyard._wait_event(run uuid, flow text, step text, event text)
returns void
language sql
volatile
set search_path = ''
as $$
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
  select r.run_id, r.owner, flow, step, event from switchyard.runs r
   where r.run_id = run
     and coalesce((select f.events from switchyard.flows f where f.flow_slug = flow), true);
  select pg_notify('switchyard_run_events', run::text);
$$;
