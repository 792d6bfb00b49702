-- Creates or updates the pg_cron job 'switchyard_keep_alive' in this database and
-- returns its job id. pg_cron accepts cron syntax ('* * * * *', every minute) and,
-- from pg_cron 1.5, intervals such as '30 seconds'.
create or replace function switchyard.schedule_keep_alive(
  schedule text default '* * * * *',
  base_url text default null,
  debounce_seconds int default 30
)
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
      'schedule_keep_alive: pg_cron is not installed in database %s', to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in the '
             'database named by cron.database_name: there run select cron.schedule_in_database('
             '''switchyard_keep_alive'', ''* * * * *'', <switchyard.keep_alive_command()>, <this database>)';
  end if;
  if schedule is null or trim(schedule) = '' then
    raise exception using errcode = '22023', message =
      'schedule_keep_alive: schedule is missing: use cron syntax such as ''* * * * *''',
      detail = jsonb_build_object(
        'rule', 'schedule_missing', 'argument', 'schedule', 'value', left(schedule, 200))::text;
  end if;
  -- pg_cron updates a job of the same name (and user) instead of adding another.
  execute 'select cron.schedule($1, $2, $3)' into job
    using 'switchyard_keep_alive', schedule, switchyard.keep_alive_command(base_url, debounce_seconds);
  return job;
end
$$;
