-- The open batches (docs/design/batching.md), for the dashboard, `doctor` and operators: per
-- batch the name its events started, its key, the run it becomes, its events and bytes so far,
-- its maxSize, when it opened and when the tick closes it, and the last error of a close that
-- failed. Oldest first, at most `max_rows`.
create or replace function switchyard.list_batches(max_rows int default 100)
returns table (
  started_as text, batch_key text, run_id uuid, size int, max_size int, bytes bigint,
  opened_at timestamptz, close_at timestamptz, last_error text
)
language sql
stable
security definer
set search_path = ''
as $$
  select b.started_as, b.batch_key, b.run_id, b.size, b.max_size, b.bytes, b.opened_at,
         b.close_at, b.last_error
    from switchyard.batches b
   order by b.opened_at, b.batch_id
   limit greatest(coalesce(max_rows, 100), 0)
$$;
