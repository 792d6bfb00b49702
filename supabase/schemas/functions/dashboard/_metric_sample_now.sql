-- Every catalogued queue's sample of the metrics now
-- (docs/design/observability.md#counters-histograms-and-levels), the row
-- switchyard.sample_metrics stores per minute and the charts' current minute ends with: its
-- counters of switchyard.metric_counters summed over flows, steps and shards (completions are
-- task_duration's count), the histograms' counts per bucket, and the lag of
-- switchyard.metric_levels (the gauge switchyard_queue_lag_seconds) with the depth. One read of
-- the counters (they follow the label sets and sessions, never the history) and of PGMQ's queue
-- tables (O(depth)), as a scrape reads them.
create or replace function switchyard._metric_sample_now()
returns table (
  queue_name text, claims bigint, retries bigint, failed_attempts bigint, throttled bigint,
  completions bigint, task_duration bigint[], task_duration_seconds double precision,
  queue_wait bigint[], lag_seconds double precision, depth bigint
)
language plpgsql
stable
set search_path = ''
as $$
begin
  return query
    with c as materialized (
      select x.queue_name, x.metric, x.bucket, sum(x.n)::bigint as n, sum(x.total) as total
        from switchyard.metric_counters x
       where x.metric in ('claims', 'retries', 'failed_attempts', 'throttled', 'task_duration',
                          'queue_wait')
       group by x.queue_name, x.metric, x.bucket
    ),
    levels as materialized (
      select l.queue_name, l.gauge, l.value from switchyard.metric_levels() l
       where l.gauge in ('queue_oldest_visible_age_seconds', 'queue_depth')
    )
    select q.queue_name,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'claims'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'retries'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'failed_attempts'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'throttled'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'task_duration'), 0)::bigint,
           array(select coalesce(c.n, 0) from generate_series(1, 17) b(i)
                   left join c on c.queue_name = q.queue_name and c.metric = 'task_duration'
                              and c.bucket = b.i
                  order by b.i),
           coalesce((select sum(c.total) from c where c.queue_name = q.queue_name
                                                  and c.metric = 'task_duration'), 0)::double precision,
           array(select coalesce(c.n, 0) from generate_series(1, 17) b(i)
                   left join c on c.queue_name = q.queue_name and c.metric = 'queue_wait'
                              and c.bucket = b.i
                  order by b.i),
           coalesce((select l.value from levels l where l.queue_name = q.queue_name
                                                    and l.gauge = 'queue_oldest_visible_age_seconds'), 0),
           coalesce((select l.value from levels l where l.queue_name = q.queue_name
                                                    and l.gauge = 'queue_depth'), 0)::bigint
      from switchyard.queues q
     order by q.queue_name;
end
$$;
