-- Run events for signed-in users and Supabase Realtime (docs/design/client.md): the
-- policy where the auth schema exists, the publication where supabase_realtime exists. Safe to
-- run again; every migration ends with it.
select switchyard.expose_run_events();
