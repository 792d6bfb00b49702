-- The `q` quantile, in seconds, of a histogram given as its count per bucket (`counts`, 17
-- elements in the order of switchyard.metric_bucket, not cumulative: a difference of two
-- samples, say), interpolated as Prometheus' histogram_quantile() does
-- (docs/design/observability.md#counters-histograms-and-levels): the first bucket whose cumulative
-- count reaches q times the total, linearly between
-- its bounds (0 below the first); the last finite bound (3600) when that is the +Inf bucket;
-- null when the histogram counted nothing. So the dashboard's p95 of a minute equals
-- histogram_quantile(0.95, ...) over the same bucket differences.
create or replace function switchyard.metric_quantile(q double precision, counts bigint[])
returns double precision
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
declare
  bounds double precision[] := switchyard.metric_bucket_bounds();
  total double precision;
  rank double precision;
  below double precision := 0;
  c double precision;
  lower_bound double precision;
begin
  if q is null or q < 0 or q > 1 or q = 'NaN'::double precision then
    perform switchyard._refuse('22023', 'quantile_range', 'q', q::text, format(
      'metric_quantile: q %s is invalid: use a number from 0 to 1', coalesce(q::text, 'null')),
      context => jsonb_build_object('min', 0, 'max', 1));
  end if;
  if counts is null or cardinality(counts) <> cardinality(bounds) + 1
     or array_position(counts, null) is not null
     or exists (select 1 from unnest(counts) x where x < 0) then
    perform switchyard._refuse('22023', 'bucket_counts', 'counts', counts::text, format(
      'metric_quantile: counts %s is invalid: use %s counts of at least 0, one per bucket of '
      'metric_bucket_bounds() and one past the last', coalesce(counts::text, 'null'),
      cardinality(bounds) + 1),
      context => jsonb_build_object('length', cardinality(bounds) + 1));
  end if;
  select sum(x) into total from unnest(counts) x;
  if total = 0 then
    return null;
  end if;
  rank := q * total;
  for i in 1 .. cardinality(counts) loop
    c := counts[i];
    if below + c >= rank then
      if i > cardinality(bounds) then
        return bounds[cardinality(bounds)];
      end if;
      lower_bound := case when i = 1 then 0 else bounds[i - 1] end;
      if c = 0 then
        return lower_bound;
      end if;
      return lower_bound + (bounds[i] - lower_bound) * ((rank - below) / c);
    end if;
    below := below + c;
  end loop;
  return bounds[cardinality(bounds)];
end
$$;
