-- Removes the keep-alive job; false when there was none.
create or replace function switchyard.unschedule_keep_alive()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  removed boolean := false;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    return false;
  end if;
  execute 'select exists (select 1 from cron.job where jobname = $1)' into removed
    using 'switchyard_keep_alive';
  if removed then
    execute 'select cron.unschedule($1)' using 'switchyard_keep_alive';
  end if;
  return removed;
end
$$;
