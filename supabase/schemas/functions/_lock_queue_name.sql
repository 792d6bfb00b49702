create or replace function switchyard._lock_queue_name(canonical text)
returns void
language sql
volatile
set search_path = ''
as $$
  select pg_advisory_xact_lock(hashtextextended('switchyard.queue:' || canonical, 0))
$$;
