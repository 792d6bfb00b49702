-- The upper bounds, in seconds, of every histogram bucket of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels): Prometheus' default buckets (5 ms
-- to 10 s) and five more for long tasks, waits and
-- runs (30 s to 1 h). A bucket past the last one counts the rest (le="+Inf").
create or replace function switchyard.metric_bucket_bounds()
returns double precision[]
language sql
immutable
parallel safe
as $$
  select '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,300,900,3600}'::double precision[]
$$;
