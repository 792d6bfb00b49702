-- Creates a schedule (docs/design/schedules.md): from now on every tick of `cron` in
-- `time_zone` starts `alias` with `input`, exactly once. Refuses bad fields with their rule
-- (see _schedule_problem) and an existing name (23505 schedule_exists). Returns the schedule.
create or replace function switchyard.create_schedule(
  name text,
  alias text,
  cron text,
  input jsonb default '{}',
  time_zone text default 'UTC',
  overlap text default 'skip',
  catch_up text default 'latest',
  catch_up_limit int default 10,
  enabled boolean default true
)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
begin
  perform switchyard._schedule_problem(name, alias, cron, time_zone, input, overlap, catch_up,
                                       catch_up_limit);
  insert into switchyard.schedules (name, alias, cron, time_zone, input, overlap, catch_up,
                                    catch_up_limit, enabled, checked_until)
  values (name, alias, cron, time_zone, input, overlap, catch_up, catch_up_limit,
          coalesce(enabled, true), switchyard.clock_now())
  on conflict do nothing;
  if not found then
    perform switchyard._refuse('23505', 'schedule_exists', 'name', name, format(
      'schedule %s exists: change it with update_schedule', to_json(name)::text));
  end if;
  return switchyard._schedule_json(name);
end
$$;
