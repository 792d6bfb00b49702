-- The counters start from the history (issue 42,
-- docs/design/observability.md#counters-histograms-and-levels): a database upgraded
-- from 0.4.0 counts on from what its rows still hold (what prune has not deleted), not from zero.
-- One pass over the tasks, the failed attempts and the ended runs, in the migration:
--   claims            every attempt a task used (attempts_count); retries those after its first
--   task_duration     each completed task, claim of its last attempt to completion
--   queue_wait        each task claimed once, from its message becoming visible to the claim (a
--                     retried task's first wait is not kept)
--   failed_attempts   the rows of failed_attempts
--   run_duration      each ended run, by outcome (so runs_started, derived, is every run held)
-- Throttled claims, retried runs and signals were never recorded: they start at zero. A claim a
-- 0.4.0 worker commits while the migration runs may be counted by neither. Then the sample of
-- the oldest minute the charts reach is taken, so the charts' first difference starts from these
-- counters instead of from zero (the history shows as no spike).
insert into switchyard.metric_counters as c
       (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
select x.metric, x.queue_name, x.flow_slug, x.step_slug, x.outcome, x.bucket, 0,
       sum(x.n)::bigint, coalesce(sum(x.total), 0)
  from (
    select m.metric, t.queue_name, t.flow_slug, t.step_slug, ''::text as outcome,
           0::smallint as bucket,
           case when m.metric = 'claims' then t.attempts_count
                else t.attempts_count - 1 end as n,
           0::double precision as total
      from switchyard.step_tasks t
     cross join (values ('claims'), ('retries')) as m(metric)
     where t.attempts_count > case when m.metric = 'claims' then 0 else 1 end
    union all
    select 'task_duration', t.queue_name, t.flow_slug, t.step_slug, '',
           switchyard.metric_bucket(extract(epoch from t.completed_at - t.started_at)), 1,
           greatest(extract(epoch from t.completed_at - t.started_at), 0)
      from switchyard.step_tasks t
     where t.status = 'completed' and t.started_at is not null and t.completed_at is not null
    union all
    select 'queue_wait', t.queue_name, t.flow_slug, t.step_slug, '',
           switchyard.metric_bucket(extract(epoch from t.started_at - t.queued_at) - st.start_delay),
           1, greatest(extract(epoch from t.started_at - t.queued_at) - st.start_delay, 0)
      from switchyard.step_tasks t
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
     where t.attempts_count = 1 and t.started_at is not null
    union all
    select 'failed_attempts', f.queue_name, f.flow_slug, f.step_slug, '', 0, 1, 0
      from switchyard.failed_attempts f
    union all
    select 'run_duration', '', r.flow_slug, '', r.status,
           switchyard.metric_bucket(extract(epoch from coalesce(r.completed_at, r.failed_at,
                                                                r.cancelled_at) - r.started_at)),
           1, greatest(extract(epoch from coalesce(r.completed_at, r.failed_at, r.cancelled_at)
                                          - r.started_at), 0)
      from switchyard.runs r
     where r.status in ('completed', 'failed', 'cancelled')
  ) x
 group by x.metric, x.queue_name, x.flow_slug, x.step_slug, x.outcome, x.bucket
 order by 1, 2, 3, 4, 5, 6
on conflict (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard) do update
   set n = c.n + excluded.n, total = c.total + excluded.total;

select switchyard.sample_metrics(switchyard.clock_now() - interval '1440 minutes');
