-- Serializes every catalog operation on one canonical queue name (a transaction-level advisory
-- lock), so two flows or an adoption racing for a name cannot both create or claim it.
create or replace function switchyard._lock_queue_name(canonical text)
returns void
language sql
volatile
set search_path = ''
as $$
  select pg_advisory_xact_lock(hashtextextended('switchyard.queue:' || canonical, 0))
$$;
