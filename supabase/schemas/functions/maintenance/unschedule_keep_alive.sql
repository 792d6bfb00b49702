-- Removes the keep-alive job; false when there was none.
create or replace function switchyard.unschedule_keep_alive()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('unschedule_keep_alive', 'switchyard_keep_alive') is not null;
end
$$;
