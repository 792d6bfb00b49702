-- The histogram bucket of an observation of `seconds`
-- (docs/design/observability.md#counters-histograms-and-levels): 1 for the
-- first bound of switchyard.metric_bucket_bounds() at or above it (Prometheus' le is
-- inclusive), 17 past the last. width_bucket counts the bounds at or below its operand, so it
-- counts the negated bounds, reversed, at or below the negated observation: the bounds at or
-- above it. A negative duration (clocks of different machines) is the first bucket.
create or replace function switchyard.metric_bucket(seconds double precision)
returns smallint
language sql
immutable
parallel safe
as $$
  select (17 - width_bucket(-greatest(seconds, 0),
    '{-3600,-900,-300,-60,-30,-10,-5,-2.5,-1,-0.5,-0.25,-0.1,-0.05,-0.025,-0.01,-0.005}'::double precision[]))::smallint
$$;
