-- Starts the runs of a schedule's ticks from `from_at` to `to_at` (both included) on purpose,
-- at most 1000 ticks in at most 366 days per call, each with its tick's derived run id: a tick
-- that already ran is a no-op, so a backfill can be repeated. The overlap policy does not apply
-- (a backfill is an explicit catch-up). Its work is bounded before any run starts: the ticks
-- are found a week at a time and the search stops at the 1001st, so a refusal costs little and
-- the schedule's lock (which run_schedules skips, never waits for) is held briefly. A longer or
-- infinite range, or more ticks, is refused (22023 backfill_too_long) and starts nothing.
-- Returns the number of runs started.
create or replace function switchyard.backfill_schedule(
  name text, from_at timestamptz, to_at timestamptz
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
  t timestamptz;
  due timestamptz[] := '{}';
  window_from timestamptz;
  window_to timestamptz;
  started int := 0;
begin
  select * into s from switchyard.schedules x where x.name = backfill_schedule.name for update;
  if not found then
    perform switchyard._refuse_unknown_schedule(name);
  end if;
  if from_at is null or to_at is null or to_at < from_at then
    perform switchyard._refuse('22023', 'backfill_range', 'to_at', to_at::text, format(
      'backfill_schedule(%s): the range %s to %s is empty: from_at must be at most to_at',
      to_json(name)::text, coalesce(from_at::text, 'null'), coalesce(to_at::text, 'null')));
  end if;
  if not isfinite(from_at) or not isfinite(to_at)
     or extract(epoch from to_at) - extract(epoch from from_at) > 366 * 86400 then
    perform switchyard._refuse('22023', 'backfill_too_long', 'to_at', to_at::text, format(
      'backfill_schedule(%s): the range %s to %s is longer than 366 days: backfill at most 366 '
      'days per call', to_json(name)::text, from_at, to_at),
      context => jsonb_build_object('max_days', 366));
  end if;
  window_from := from_at - interval '1 microsecond';
  while window_from < to_at and cardinality(due) <= 1000 loop
    window_to := least(to_at, window_from + interval '7 days');
    due := due || array(select switchyard._cron_ticks(s.cron, s.time_zone, window_from,
                                                      window_to, 1001 - cardinality(due)));
    window_from := window_to;
  end loop;
  if cardinality(due) > 1000 then
    perform switchyard._refuse('22023', 'backfill_too_long', 'to_at', to_at::text, format(
      'backfill_schedule(%s): more than 1000 ticks from %s to %s: backfill a shorter range',
      to_json(name)::text, from_at, to_at));
  end if;
  foreach t in array due loop
    if not exists (select 1 from switchyard.schedule_ticks st
                    where st.schedule_name = s.name and st.tick_at = t and st.outcome = 'started')
       and switchyard._start_schedule_run(s.name, s.alias, s.input, t,
                                          switchyard._schedule_run_id(s.name, t)) then
      started := started + 1;
    end if;
  end loop;
  return started;
end
$$;
