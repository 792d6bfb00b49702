-- The most elements one map step may fan out to (docs/design/runs.md#map-steps): a longer array
-- fails the run with the count and this limit.
create or replace function switchyard.max_map_elements()
returns int
language sql
immutable
set search_path = ''
as $$ select 10000 $$;
