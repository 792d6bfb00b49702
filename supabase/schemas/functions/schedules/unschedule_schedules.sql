-- Removes the pg_cron job 'switchyard_schedules'; returns whether there was one.
create or replace function switchyard.unschedule_schedules()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  removed boolean := false;
begin
  if exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    execute 'select exists (select 1 from cron.job where jobname = $1)' into removed
      using 'switchyard_schedules';
    if removed then
      execute 'select cron.unschedule($1)' using 'switchyard_schedules';
    end if;
  end if;
  return removed;
end
$$;
