-- Records that a worker stopped (its first reason kept), so liveness judges it stopped at once
-- instead of after its heartbeat window.
create or replace function switchyard.worker_stopped(worker_id uuid, reason text default null)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update switchyard.workers w
     set stopped_at = coalesce(w.stopped_at, switchyard.clock_now()), stop_reason = coalesce(w.stop_reason, reason)
   where w.worker_id = worker_stopped.worker_id;
$$;
