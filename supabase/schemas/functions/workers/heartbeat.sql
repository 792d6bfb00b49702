-- Heartbeat; tells the worker whether it must stop: 'ok', 'deprecated', 'paused' or 'disabled'.
create or replace function switchyard.heartbeat(worker_id uuid)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  w switchyard.workers;
  fn switchyard.worker_functions;
begin
  update switchyard.workers x set last_heartbeat_at = switchyard.clock_now()
   where x.worker_id = heartbeat.worker_id
  returning * into w;
  if not found then
    return 'deprecated';
  end if;
  select * into fn from switchyard.worker_functions f where f.function_name = w.function_name;
  if w.deprecated_at is not null or w.stopped_at is not null then
    return 'deprecated';
  elsif fn.paused_at is not null then
    return 'paused';
  elsif not fn.enabled then
    return 'disabled';
  end if;
  return 'ok';
end
$$;
