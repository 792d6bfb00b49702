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
declare
  job bigint;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    raise exception using errcode = 'SY020', message = format(
      'schedule_prune: pg_cron is not installed in database %s', to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in the '
             'database named by cron.database_name: there run select cron.schedule_in_database('
             '''switchyard_prune'', ''* * * * *'', <switchyard.prune_command()>, <this database>)';
  end if;
  if schedule is null or trim(schedule) = '' then
    raise exception using errcode = '22023', message =
      'schedule_prune: schedule is missing: use cron syntax such as ''* * * * *''',
      detail = jsonb_build_object(
        'rule', 'schedule_missing', 'argument', 'schedule', 'value', left(schedule, 200))::text;
  end if;
  -- pg_cron updates a job of the same name (and user) instead of adding another.
  execute 'select cron.schedule($1, $2, $3)' into job
    using 'switchyard_prune', schedule, switchyard.prune_command(older_than, batch_size);
  return job;
end
$$;
