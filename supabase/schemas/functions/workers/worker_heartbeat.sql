-- The heartbeat of a 0.4.0 runtime (docs/design/worker.md#worker-states-and-parts, "Cancellation
-- reaches handlers"):
-- switchyard.heartbeat's state ('ok', 'deprecated', 'paused' or 'disabled'), and the runs of the
-- tasks this worker holds started that are no longer started (cancelled, or failed by another
-- task), each with its status and error, so the worker aborts those handlers' signals. One
-- probe of the worker's started tasks (index step_tasks_worker) per heartbeat: no extra round
-- trip per task. switchyard.heartbeat stays for older runtimes. The first heartbeat of a minute
-- also takes the minute's sample of the metrics (sample_metrics,
-- docs/design/observability.md#counters-histograms-and-levels),
-- in a subtransaction whose failure is a warning, never the heartbeat's; every other one makes
-- one key probe of metric_samples.
create or replace function switchyard.worker_heartbeat(worker_id uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  state text := switchyard.heartbeat(worker_heartbeat.worker_id);
begin
  if not exists (select 1 from switchyard.metric_samples s
                  where s.minute = date_trunc('minute', switchyard.clock_now())) then
    begin
      perform switchyard.sample_metrics();
    exception when others then
      raise warning 'switchyard.worker_heartbeat: sample_metrics failed: % (%)', sqlerrm, sqlstate;
    end;
  end if;
  return jsonb_build_object(
    'state', state,
    'ended_runs', coalesce((
      select jsonb_agg(jsonb_build_object('run_id', r.run_id, 'status', r.status,
                                          'reason', left(r.error, 1000))
                       order by r.run_id)
        from (select distinct t.run_id from switchyard.step_tasks t
               where t.worker_id = worker_heartbeat.worker_id and t.status = 'started') held
        join switchyard.runs r on r.run_id = held.run_id
       where r.status <> 'started'), '[]'::jsonb));
end
$$;
