-- Steps routed to a queue that started runs may still reach: the step has not finished in
-- that run yet (startup coverage, docs/design/worker.md#worker-start-up step 5, and drain,
-- docs/design/versions.md). Driven from
-- the started runs (runs_flow_started), with one primary-key probe per (run, step) (a
-- LATERAL ... LIMIT 1, so no plan can join by scanning every state ever recorded): the cost
-- follows the open runs, never the history.
create or replace view switchyard.open_run_steps as
  select r.run_id, st.queue_name, st.flow_slug, st.step_slug
    from switchyard.runs r
    join switchyard.steps st on st.flow_slug = r.flow_slug
    cross join lateral (select ss.status from switchyard.step_states ss
                         where ss.run_id = r.run_id and ss.step_slug = st.step_slug
                         limit 1) ss
   where r.status = 'started' and ss.status in ('created', 'started');

-- The metrics as rows (docs/design/observability.md#counters-histograms-and-levels), for
-- Prometheus' text (prometheusText reads
-- them through switchyard.metric_snapshot) and for Grafana's PostgreSQL data source: the same
-- figures either way. A flow's label is its alias (alias_members), else its slug; its version
-- the concrete slug.
--
-- metrics_counters: every counter and histogram summed over its shards (and buckets): `n` how
-- many were counted, `total` the sum of a histogram's observations in seconds. The refusals of
-- queue functions (switchyard.refusals, a count per function and kind already) are the
-- counter 'refused_starts', the kind its outcome; 'runs_started' is derived (below).
create or replace view switchyard.metrics_counters as
  select c.metric, c.queue_name, ''::text as function_name, coalesce(am.alias, c.flow_slug) as flow,
         c.flow_slug as version, c.step_slug as step, c.outcome, sum(c.n)::bigint as n,
         sum(c.total)::double precision as total
    from switchyard.metric_counters c
    left join switchyard.alias_members am on am.flow_slug = c.flow_slug
   group by c.metric, c.queue_name, c.flow_slug, am.alias, c.step_slug, c.outcome
  union all
  -- Runs started, with no write when a run starts: every run started is ended now, or started
  -- again after ending (a retry), or still started, so started = ended - retried + started now.
  -- Each term only grows or moves into another (prune deletes ended runs, never a counter).
  select 'runs_started', '', '', coalesce(am.alias, x.flow_slug), x.flow_slug, '', '',
         sum(x.n)::bigint, 0
    from (select c.flow_slug, case when c.metric = 'run_duration' then c.n else -c.n end as n
            from switchyard.metric_counters c
           where c.metric in ('run_duration', 'runs_retried')
          union all
          select r.flow_slug, count(*) from switchyard.runs r
           where r.status = 'started' group by r.flow_slug) x
    left join switchyard.alias_members am on am.flow_slug = x.flow_slug
   group by x.flow_slug, am.alias
  union all
  select 'refused_starts', coalesce(f.queue_name, ''), r.function_name, '', '', '', r.refusal,
         r.count, 0
    from switchyard.refusals r
    left join switchyard.worker_functions f on f.function_name = r.function_name;

-- metrics_histograms: each histogram's buckets, cumulative as Prometheus' le buckets are: for
-- every label set with an observation, every bound of metric_bucket_bounds() and 'Infinity'.
create or replace view switchyard.metrics_histograms as
  with b as (
    select c.metric, c.queue_name, c.flow_slug, c.step_slug, c.outcome, c.bucket, sum(c.n) as n
      from switchyard.metric_counters c
     where c.bucket > 0
     group by c.metric, c.queue_name, c.flow_slug, c.step_slug, c.outcome, c.bucket
  ),
  sets as (select distinct b.metric, b.queue_name, b.flow_slug, b.step_slug, b.outcome from b)
  select s.metric, s.queue_name, coalesce(am.alias, s.flow_slug) as flow, s.flow_slug as version,
         s.step_slug as step, s.outcome, i.bucket,
         coalesce((switchyard.metric_bucket_bounds())[i.bucket], 'Infinity')::double precision as le,
         (sum(coalesce(b.n, 0)) over (partition by s.metric, s.queue_name, s.flow_slug,
                                                   s.step_slug, s.outcome
                                      order by i.bucket))::bigint as count
    from sets s
    cross join generate_series(1, 17) as i(bucket)
    left join b on b.metric = s.metric and b.queue_name = s.queue_name
               and b.flow_slug = s.flow_slug and b.step_slug = s.step_slug
               and b.outcome = s.outcome and b.bucket = i.bucket
    left join switchyard.alias_members am on am.flow_slug = s.flow_slug;

-- metrics_gauges: the levels (switchyard.metric_levels).
create or replace view switchyard.metrics_gauges as
  select l.gauge, l.queue_name, l.function_name, l.flow, l.version, l.value
    from switchyard.metric_levels() l;

-- metrics_minutes: the dashboard's charts per queue and minute of the last hour
-- (dashboard_metrics_history), a time series for a Grafana panel.
create or replace view switchyard.metrics_minutes as
  select h.queue_name, h.minute, h.lag_seconds, h.p95_ms, h.failures, h.completions
    from switchyard.dashboard_metrics_history(60) h;
