create or replace function switchyard._lock_fences()
returns void
language sql
volatile
set search_path = ''
as $$
  select pg_advisory_xact_lock(hashtextextended('switchyard.fence', 0))
$$;
