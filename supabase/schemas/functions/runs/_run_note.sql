-- Records an operator's action on a run (docs/design/rerun.md): a 'rerun', 'forked',
-- 'moved', 'paused' or 'resumed' event with who did it and what in `data`, and the run's
-- notification, as _run_event writes the status events (a flow with events: false writes no row;
-- the notification still wakes waits). The caller holds the run's row lock, so the event's
-- number follows every event committed before it.
create or replace function switchyard._run_note(run uuid, event text, data jsonb)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  insert into switchyard.run_events (run_id, owner, flow_slug, event, data)
  select r.run_id, r.owner, r.flow_slug, _run_note.event, _run_note.data
    from switchyard.runs r
    left join switchyard.flows f on f.flow_slug = r.flow_slug
   where r.run_id = run and coalesce(f.events, true);
  perform pg_notify('switchyard_run_events', run::text);
end
$$;
