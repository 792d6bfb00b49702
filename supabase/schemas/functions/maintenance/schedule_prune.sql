-- Creates or updates the pg_cron job 'switchyard_prune' in this database and returns its
-- job id. Each run removes one batch; the default (every minute, 1000 runs) keeps up with
-- up to 1.4 million finished runs a day.
create or replace function switchyard.schedule_prune(
  older_than interval default '7 days',
  schedule text default '* * * * *',
  batch_size int default 1000
)
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('schedule_prune', 'switchyard_prune', schedule,
    switchyard.prune_command(older_than, batch_size),
    way_out => 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in '
               'the database named by cron.database_name: there run select '
               'cron.schedule_in_database(''switchyard_prune'', ''* * * * *'', '
               '<switchyard.prune_command()>, <this database>)');
end
$$;
