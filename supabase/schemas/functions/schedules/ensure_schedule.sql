-- A schedule as declared (in a migration, so every environment gets it): created when missing,
-- updated when a field differs, else left alone. Returns 'created', 'updated' or 'unchanged'.
create or replace function switchyard.ensure_schedule(
  name text,
  alias text,
  cron text,
  input jsonb default '{}',
  time_zone text default 'UTC',
  overlap text default 'skip',
  catch_up text default 'latest',
  catch_up_limit int default 10
)
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
begin
  select * into s from switchyard.schedules x where x.name = ensure_schedule.name for update;
  if not found then
    perform switchyard.create_schedule(name, alias, cron, input, time_zone, overlap, catch_up,
                                       catch_up_limit);
    return 'created';
  end if;
  if (s.alias, s.cron, s.input, s.time_zone, s.overlap, s.catch_up, s.catch_up_limit)
     is not distinct from (alias, cron, input, time_zone, overlap, catch_up, catch_up_limit) then
    return 'unchanged';
  end if;
  perform switchyard.update_schedule(name, alias, cron, input, time_zone, overlap, catch_up,
                                     catch_up_limit);
  return 'updated';
end
$$;
