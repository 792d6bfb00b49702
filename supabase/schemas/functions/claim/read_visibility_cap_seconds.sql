-- The longest visibility read_visibility_seconds gives a read (unless the worker's own claim
-- window is longer): how long a batch stays hidden when its worker dies between read and claim.
create or replace function switchyard.read_visibility_cap_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 300 $$;
