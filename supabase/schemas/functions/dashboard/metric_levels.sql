-- The levels of the metrics (docs/design/observability.md#counters-histograms-and-levels), gauges
-- of what is true now, one row
-- each (the view switchyard.metrics_gauges):
--
--   queue_depth                 {queue}            messages visible now
--   queue_hidden                {queue}            messages hidden now (claimed, or delayed)
--   queue_oldest_visible_age_seconds {queue}       how long the oldest visible message has been
--                                                  visible (0: none)
--   queue_oldest_age_seconds    {queue}            the oldest message's age, visible or not
--   workers_live                {queue, function}  the function's live workers
--   function_paused             {queue, function}  1 when the function is paused, else 0
--   runs_active                 {flow, version}    started runs
--   runs_waiting                {flow, version}    started runs with a wait, sleep or flow step
--                                                  waiting
--   waits_overdue               {flow, version}    waiting steps past their timeout (expire_waits
--                                                  has not ended them)
--
-- PGMQ's queue tables are read as dashboard_queues reads them (O(depth)); runs from the started
-- ones (runs_flow_started) and waits by deadline (step_states_wait_due): the cost follows
-- the work in flight, never the history.
create or replace function switchyard.metric_levels()
returns table (
  gauge text, queue_name text, function_name text, flow text, version text,
  value double precision
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  tbl text;
  depth bigint;
  hidden bigint;
  oldest_visible timestamptz;
  oldest timestamptz;
begin
  for q in select x.queue_name, x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    continue when to_regclass(format('pgmq.%I', tbl)) is null;
    execute format(
      'select count(*) filter (where vt <= switchyard.queue_now()),
              count(*) filter (where vt > switchyard.queue_now()),
              min(vt) filter (where vt <= switchyard.queue_now()), min(enqueued_at)
         from pgmq.%I', tbl)
      into depth, hidden, oldest_visible, oldest;
    return query values
      ('queue_depth', q.queue_name, '', '', '', depth::double precision),
      ('queue_hidden', q.queue_name, '', '', '', hidden::double precision),
      ('queue_oldest_visible_age_seconds', q.queue_name, '', '', '',
       coalesce(greatest(extract(epoch from switchyard.queue_now() - oldest_visible), 0), 0)::double precision),
      ('queue_oldest_age_seconds', q.queue_name, '', '', '',
       coalesce(greatest(extract(epoch from switchyard.queue_now() - oldest), 0), 0)::double precision);
  end loop;
  return query
    select 'workers_live', f.queue_name, f.function_name, '', '',
           (select count(*) from switchyard.workers w
             where w.function_name = f.function_name and w.queue_name = f.queue_name
               and w.stopped_at is null
               and switchyard._worker_live(w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                                           w.heartbeat_window_seconds))::double precision
      from switchyard.worker_functions f
    union all
    select 'function_paused', f.queue_name, f.function_name, '', '',
           (f.paused_at is not null)::int::double precision
      from switchyard.worker_functions f;
  return query
    select g.gauge, '', '', coalesce(am.alias, g.flow_slug), g.flow_slug, g.value
      from (select 'runs_active' as gauge, r.flow_slug, count(*)::double precision as value
              from switchyard.runs r where r.status = 'started' group by r.flow_slug
            union all
            -- One primary-key probe per (started run, waiting kind of step), as
            -- open_run_steps: no plan can join by scanning every state ever recorded.
            select 'runs_waiting', r.flow_slug, count(*)::double precision
              from switchyard.runs r
             where r.status = 'started'
               and exists (select 1 from switchyard.steps st
                            cross join lateral (select ss.status from switchyard.step_states ss
                                                 where ss.run_id = r.run_id
                                                   and ss.step_slug = st.step_slug
                                                 limit 1) ss
                            where st.flow_slug = r.flow_slug
                              and st.step_type in ('wait', 'sleep', 'flow')
                              and ss.status = 'started')
             group by r.flow_slug
            union all
            select 'waits_overdue', ss.flow_slug, count(*)::double precision
              from switchyard.step_states ss
             where ss.status = 'started' and ss.wait_due is not null
               and ss.wait_due < switchyard.clock_now()
             group by ss.flow_slug) g
      left join switchyard.alias_members am on am.flow_slug = g.flow_slug;
end
$$;
