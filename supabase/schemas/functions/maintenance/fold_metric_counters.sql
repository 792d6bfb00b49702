-- Folds the rows of switchyard.metric_counters
-- (docs/design/observability.md#counters-histograms-and-levels) that sessions wrote
-- into shard 0, one row per figure, label set and bucket, keeping every sum: a counter never
-- goes down and the table stays as small as the label sets times the sessions writing now.
-- A row a session holds (its transaction has not committed) is skipped, left for the next
-- fold; a session that writes a folded row again inserts it anew. Rows of shard 0 are written
-- in key order, so two folds at once queue, never deadlock. Called by prune; returns the rows
-- folded.
create or replace function switchyard.fold_metric_counters()
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  folded bigint;
begin
  with taken as (
    delete from switchyard.metric_counters c
     where c.ctid = any (array(select x.ctid from switchyard.metric_counters x
                                where x.shard <> 0
                                  for update skip locked))
    returning c.*
  ),
  summed as (
    select t.metric, t.queue_name, t.flow_slug, t.step_slug, t.outcome, t.bucket,
           sum(t.n) as n, sum(t.total) as total, count(*) as rows
      from taken t
     group by 1, 2, 3, 4, 5, 6
  ),
  added as (
    insert into switchyard.metric_counters as c
           (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
    select s.metric, s.queue_name, s.flow_slug, s.step_slug, s.outcome, s.bucket, 0, s.n, s.total
      from summed s
     order by 1, 2, 3, 4, 5, 6
    on conflict (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard) do update
       set n = c.n + excluded.n, total = c.total + excluded.total
  )
  select coalesce(sum(s.rows), 0) into folded from summed s;
  return folded;
end
$$;
