-- Starts the runs of a schedule's ticks from `from_at` to `to_at` (both included) on purpose,
-- at most 1000, each with its tick's derived run id: a tick that already ran is a no-op, so a
-- backfill can be repeated. The overlap policy does not apply (a backfill is an explicit
-- catch-up). Returns the number of runs started.
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
  started int := 0;
  ticks int := 0;
begin
  select * into s from switchyard.schedules x where x.name = backfill_schedule.name for update;
  if not found then
    perform switchyard._refuse_unknown_schedule(name);
  end if;
  if from_at is null or to_at is null or to_at < from_at then
    raise exception using errcode = '22023', message = format(
      'backfill_schedule(%s): the range %s to %s is empty: from_at must be at most to_at',
      to_json(name)::text, coalesce(from_at::text, 'null'), coalesce(to_at::text, 'null')),
      detail = jsonb_build_object('rule', 'backfill_range', 'argument', 'to_at',
                                  'value', to_at::text)::text;
  end if;
  for t in select switchyard._cron_ticks(s.cron, s.time_zone, from_at - interval '1 microsecond',
                                         to_at, 1001) loop
    ticks := ticks + 1;
    if ticks > 1000 then
      raise exception using errcode = '22023', message = format(
        'backfill_schedule(%s): more than 1000 ticks from %s to %s: backfill a shorter range',
        to_json(name)::text, from_at, to_at),
        detail = jsonb_build_object('rule', 'backfill_too_long', 'argument', 'to_at',
                                    'value', to_at::text)::text;
    end if;
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
