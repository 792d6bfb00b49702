-- The smallest heartbeat window a worker may register with (seconds). The worker's
-- settings check the window against its heartbeat interval (at least 3 intervals) before
-- it starts; this floor holds for every caller of register_worker.
create or replace function switchyard.heartbeat_window_floor_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 2 $$;
