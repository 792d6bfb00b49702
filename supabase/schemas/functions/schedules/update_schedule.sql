-- Changes a schedule: every argument left null keeps its value. The next tick follows the new
-- cron from now on (ticks before now are not run again); `enabled` pauses or resumes it
-- (pause_schedule and resume_schedule call this). Refuses an unknown name
-- (22023 schedule_unknown) and bad fields as create_schedule does. Returns the schedule.
create or replace function switchyard.update_schedule(
  name text,
  alias text default null,
  cron text default null,
  input jsonb default null,
  time_zone text default null,
  overlap text default null,
  catch_up text default null,
  catch_up_limit int default null,
  enabled boolean default null
)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
begin
  select * into s from switchyard.schedules x where x.name = update_schedule.name for update;
  if not found then
    perform switchyard._refuse_unknown_schedule(name);
  end if;
  s.alias := coalesce(alias, s.alias);
  s.cron := coalesce(cron, s.cron);
  s.input := coalesce(input, s.input);
  s.time_zone := coalesce(time_zone, s.time_zone);
  s.overlap := coalesce(overlap, s.overlap);
  s.catch_up := coalesce(catch_up, s.catch_up);
  s.catch_up_limit := coalesce(catch_up_limit, s.catch_up_limit);
  -- Fields are checked when one is given: a pause or resume alone (enabled) is never refused,
  -- even when the alias no longer resolves.
  if num_nonnulls(alias, cron, input, time_zone, overlap, catch_up, catch_up_limit) > 0 then
    perform switchyard._schedule_problem(s.name, s.alias, s.cron, s.time_zone, s.input,
                                         s.overlap, s.catch_up, s.catch_up_limit);
  end if;
  update switchyard.schedules x
     set alias = s.alias, cron = s.cron, input = s.input, time_zone = s.time_zone,
         overlap = s.overlap, catch_up = s.catch_up, catch_up_limit = s.catch_up_limit,
         enabled = coalesce(update_schedule.enabled, x.enabled), updated_at = switchyard.clock_now(),
         -- A changed cron or zone applies from now; so does a resume (ticks while paused are
         -- not run later).
         checked_until = case when x.cron is distinct from s.cron
                                or x.time_zone is distinct from s.time_zone
                                or (not x.enabled and coalesce(update_schedule.enabled, false))
                              then greatest(x.checked_until, switchyard.clock_now()) else x.checked_until end
   where x.name = s.name;
  return switchyard._schedule_json(s.name);
end
$$;
