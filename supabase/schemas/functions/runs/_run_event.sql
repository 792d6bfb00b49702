-- Runs were inserted ('started') or changed status ('retried' when a failed run starts again):
-- a statement trigger with transition tables (triggers.sql), one call and one insert of events
-- per statement whatever the number of rows (docs/design/client.md). Rows whose status did
-- not change (a run's counters) write nothing. A run's own transitions update its row, so the
-- run is locked before its event is numbered; the events follow the statement's order of rows.
-- A transaction's notifications are delivered at commit and identical ones folded, so each run
-- touched is notified once.
create or replace function switchyard._run_event()
returns trigger
language plpgsql
security definer
set search_path = ''
set enable_hashjoin = on
as $$
declare
  notified bigint;
  ended_flows text[];     -- the runs that ended here: version, outcome, duration (counters)
  ended_outcomes text[];
  ended_secs double precision[];
  retried_flows text[];
begin
  -- A statement that wrote no row: nothing to do, and one probe instead of the query below.
  perform from switchyard_new_runs limit 1;
  if not found then
    return null;
  end if;
  if tg_op = 'INSERT' then
    -- A run with an origin (docs/design/origins.md) says so in its 'started' event's data.
    with t as (select n.run_id, n.owner, n.flow_slug, n.status as event,
                      case when n.origin is not null
                           then jsonb_build_object('origin', n.origin) end as data,
                      row_number() over () as ord
                 from switchyard_new_runs n),
         written as (
           -- A flow with events: false writes no row; the notification still wakes the
           -- client's waits.
           insert into switchyard.run_events (run_id, owner, flow_slug, event, data)
           select t.run_id, t.owner, t.flow_slug, t.event, t.data
             from t left join switchyard.flows f on f.flow_slug = t.flow_slug
            where coalesce(f.events, true)
            order by t.ord)
    select count(pg_notify('switchyard_run_events', t.run_id::text)) into notified
      from t;
  else
    -- One pass over the transition tables writes the events, notifies and collects the
    -- counters (docs/design/observability.md#counters-histograms-and-levels): a run that
    -- ended (completed, failed, cancelled) is an observation of the histogram of run
    -- durations, its end the outcome; a failed run started again is a retry. Rows whose
    -- status did not change (a run's count-down) are none of these.
    with t as (select n.run_id, n.owner, n.flow_slug, n.status,
                      case when o.status = 'failed' and n.status = 'started' then 'retried'
                           else n.status end as event,
                      extract(epoch from coalesce(n.completed_at, n.failed_at, n.cancelled_at)
                                         - n.started_at)::double precision as secs,
                      n.ord
                 from (select n.*, row_number() over () as ord from switchyard_new_runs n) n
                 join switchyard_old_runs o on o.run_id = n.run_id
                where o.status is distinct from n.status),
         written as (
           insert into switchyard.run_events (run_id, owner, flow_slug, event)
           select t.run_id, t.owner, t.flow_slug, t.event
             from t left join switchyard.flows f on f.flow_slug = t.flow_slug
            where coalesce(f.events, true)
            order by t.ord)
    select count(pg_notify('switchyard_run_events', t.run_id::text)),
           array_agg(t.flow_slug) filter (where t.status <> 'started'),
           array_agg(t.status) filter (where t.status <> 'started'),
           array_agg(t.secs) filter (where t.status <> 'started'),
           array_agg(t.flow_slug) filter (where t.status = 'started')
      into notified, ended_flows, ended_outcomes, ended_secs, retried_flows
      from t;
    if ended_flows is not null then
      perform switchyard._count_metrics(array['run_duration'], null, ended_flows, null,
        ended_outcomes, ended_secs);
    end if;
    if retried_flows is not null then
      perform switchyard._count_metrics(array['runs_retried'], null, retried_flows, null);
    end if;
  end if;
  return null;
end
$$;
