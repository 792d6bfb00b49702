-- Installs the scheduler's own pg_cron job 'switchyard_schedules' in this database (every minute
-- by default: select switchyard.run_schedules()) and returns its job id. Without it the
-- keep-alive's job ticks the scheduler too; both may run, a tick is never started twice.
create or replace function switchyard.schedule_schedules(cron_schedule text default '* * * * *')
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform switchyard._cron_parse(cron_schedule);
  return switchyard._cron_job('schedule_schedules', 'switchyard_schedules', cron_schedule,
    'select switchyard.run_schedules()',
    way_out => 'on Supabase enable pg_cron (Database > Extensions); or call '
               'select switchyard.run_schedules() every minute from elsewhere');
end
$$;
