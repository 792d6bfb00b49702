-- The dashboard's open batches section (docs/design/batching.md): per open batch the name its
-- events started (the alias or slug), its key, the run it becomes, its events so far and its
-- maxSize, when it opened, when it is due (close_at = opened_at + timeout: the tick closes it
-- then), whether it is overdue at `now_at` (the tick has not closed it yet; a test passes a time
-- ahead of the clock, as to close_batches) and the last error of a close that failed. The most
-- overdue first (the earliest due), then the oldest; at most 100 rows, read in the order of the
-- index batches_close_at, so a database with many open batches or none reads at most 100.
create or replace function switchyard.dashboard_batches(
  now_at timestamptz default switchyard.clock_now()
)
returns table (
  started_as text, batch_key text, run_id uuid, size int, max_size int, opened_at timestamptz,
  due_at timestamptz, overdue boolean, last_error text
)
language sql
stable
security definer
set search_path = ''
as $$
  select b.started_as, b.batch_key, b.run_id, b.size, b.max_size, b.opened_at, b.close_at,
         b.close_at <= coalesce(now_at, switchyard.clock_now()), b.last_error
    from switchyard.batches b
   order by b.close_at, b.opened_at, b.batch_id
   limit 100
$$;
