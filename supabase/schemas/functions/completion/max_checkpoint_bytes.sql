-- The most JSON text a checkpoint may hold: 256 KiB. A checkpoint is a handler's position in its
-- work (a cursor, counters), not its data.
create or replace function switchyard.max_checkpoint_bytes()
returns int
language sql
immutable
set search_path = ''
as $$
  select 262144
$$;
