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
declare
  job bigint;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    raise exception using errcode = 'SY020', message = format(
      'schedule_schedules: pg_cron is not installed in database %s',
      to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = 'on Supabase enable pg_cron (Database > Extensions); or call '
             'select switchyard.run_schedules() every minute from elsewhere';
  end if;
  perform switchyard._cron_parse(cron_schedule);
  execute 'select cron.schedule($1, $2, $3)' into job
    using 'switchyard_schedules', cron_schedule, 'select switchyard.run_schedules()';
  return job;
end
$$;
