-- Serializes fence_begin and fence_end (a transaction-level advisory lock), so two rollouts
-- cannot both find no fence open and open one each.
create or replace function switchyard._lock_fences()
returns void
language sql
volatile
set search_path = ''
as $$
  select pg_advisory_xact_lock(hashtextextended('switchyard.fence', 0))
$$;
