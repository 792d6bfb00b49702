-- Counts figures of the metrics (docs/design/observability.md#counters-histograms-and-levels) for a
-- statement's rows, given as
-- parallel arrays (one element per row; an array shorter than the rest, or null, is '' for a
-- label and no observation for `seconds`; `metric_names` of one element names every row's
-- figure): one upsert of switchyard.metric_counters per label
-- set (and bucket), in key order, into the rows of this backend's shard (its process id), which
-- no other transaction writes. With `seconds`, each row is an observation of a histogram: its
-- bucket (switchyard.metric_bucket) counts it and `total` adds it up. Called by the claim, the
-- completion, the failed-attempt and run-event triggers, and signal_run: one call per statement.
create or replace function switchyard._count_metrics(
  metric_names text[], queue_names text[], flow_slugs text[], step_slugs text[],
  outcomes text[] default null, seconds double precision[] default null
)
returns void
language plpgsql
set search_path = ''
as $$
begin
  insert into switchyard.metric_counters as c
         (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
  select coalesce(x.m, metric_names[1]), coalesce(x.q, ''), coalesce(x.f, ''), coalesce(x.s, ''),
         coalesce(x.o, ''),
         case when x.secs is null then 0 else switchyard.metric_bucket(x.secs) end,
         pg_catalog.pg_backend_pid(),
         count(*), coalesce(sum(greatest(x.secs, 0)), 0)
    from unnest(metric_names, queue_names, flow_slugs, step_slugs, outcomes, seconds)
           as x(m, q, f, s, o, secs)
   group by 1, 2, 3, 4, 5, 6
   order by 1, 2, 3, 4, 5, 6
  on conflict (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard) do update
     set n = c.n + excluded.n, total = c.total + excluded.total;
end
$$;
