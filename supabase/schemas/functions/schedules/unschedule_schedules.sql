-- Removes the pg_cron job 'switchyard_schedules'; returns whether there was one.
create or replace function switchyard.unschedule_schedules()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('unschedule_schedules', 'switchyard_schedules') is not null;
end
$$;
