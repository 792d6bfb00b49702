-- A pruned event published to Supabase Realtime carries its event id alone, not its run id
-- (issue 36), as supabase/schemas/tables/40_runs.sql sets it.
create unique index run_events_event_id on switchyard.run_events (event_id);

alter table switchyard.run_events replica identity using index run_events_event_id;
