-- Every spelling PGMQ knows for a canonical queue name (names differing only by case share one
-- table, so more than one spelling is ambiguous). Shared-queue workers and routed compilation
-- provision queues only through the catalog's functions, never a generic create-queue helper.
create or replace function switchyard._pgmq_spellings(canonical text)
returns text[]
language sql
stable
set search_path = ''
as $$
  select coalesce(array_agg(m.queue_name::text order by m.queue_name), '{}')
  from pgmq.meta m
  where lower(m.queue_name) = canonical
$$;
