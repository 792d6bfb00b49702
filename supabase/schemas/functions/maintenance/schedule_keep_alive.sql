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
begin
  return switchyard._cron_job('schedule_keep_alive', 'switchyard_keep_alive', schedule,
    switchyard.keep_alive_command(base_url, debounce_seconds),
    way_out => 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in '
               'the database named by cron.database_name: there run select '
               'cron.schedule_in_database(''switchyard_keep_alive'', ''* * * * *'', '
               '<switchyard.keep_alive_command()>, <this database>)');
end
$$;
