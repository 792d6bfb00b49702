-- Removes the retention job; false when there was none.
create or replace function switchyard.unschedule_prune()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('unschedule_prune', 'switchyard_prune') is not null;
end
$$;
