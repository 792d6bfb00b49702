-- The scheduler's tick (docs/design/schedules.md): for every enabled schedule, the ticks of its
-- cron after the last look and at most `now_at`, chosen by its catch-up policy, fire
-- (_fire_schedule); a queued tick starts when its schedule has no open run. Runs from a pg_cron
-- job (schedule_schedules), from every keep-alive tick, or by hand; `now_at` lets a test drive
-- the clock back, never ahead: at most 60 s past clock_now() (a caller's clock skew), else refused
-- (22023 now_at_range), as are null and infinities. Each schedule is locked while it is looked
-- at, so concurrent ticks start each tick's run once; a schedule another transaction holds (an
-- update, a backfill) is skipped, never waited for: the next tick looks at its due ticks (a
-- 'none' schedule's tick then counts as missed when it is over 60 s late). At most 31 days are
-- looked back; older ticks count as missed. Also removes tick records older than 30 days by the
-- clock that recorded them (clock_now(), whatever `now_at` says), at most 1000 per call. Returns the
-- number of runs started, those of the batches it closed too (close_batches, whose timeout
-- passed by `now_at`; docs/design/batching.md). Each schedule is isolated from the others (an error no rule foresaw
-- is a warning; the schedule is looked at again next tick).
create or replace function switchyard.run_schedules(now_at timestamptz default switchyard.clock_now())
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
  due timestamptz[];
  chosen timestamptz[];
  t timestamptz;
  q record;
  started int := 0;
  from_at timestamptz;
begin
  if now_at is null or not isfinite(now_at)
     or now_at > switchyard.clock_now() + interval '60 seconds' then
    perform switchyard._refuse('22023', 'now_at_range', 'now_at', now_at::text, format(
      'run_schedules: now_at %s is out of range: a test clock may go back, never more than 60 s '
      'ahead of the core''s clock (%s)', coalesce(now_at::text, 'null'), switchyard.clock_now()),
      context => jsonb_build_object('max', (switchyard.clock_now() + interval '60 seconds')::text));
  end if;
  for s in select * from switchyard.schedules x where x.enabled order by x.name
             for update skip locked loop
    -- Each schedule in a subtransaction of its own: an error no rule foresaw (a row that got
    -- past every check) is a warning naming the schedule, which is looked at again next tick;
    -- it never stops another schedule nor the rest of the tick (docs/design/waits.md).
    begin
      from_at := coalesce(s.checked_until, s.created_at);
      if from_at < now_at then
        due := array(select switchyard._cron_ticks(s.cron, s.time_zone,
                                                   greatest(from_at, now_at - interval '31 days'),
                                                   now_at, 100000));
        chosen := case s.catch_up
          when 'all' then due[greatest(1, cardinality(due) - s.catch_up_limit + 1):]
          when 'latest' then due[cardinality(due):]
          else case when cardinality(due) > 0 and now_at - due[cardinality(due)] < interval '60 seconds'
                    then due[cardinality(due):] else '{}' end
        end;
        foreach t in array chosen loop
          if switchyard._fire_schedule(s, t) then
            started := started + 1;
            select * into s from switchyard.schedules x where x.name = s.name;
          end if;
        end loop;
        update switchyard.schedules x
           set checked_until = now_at,
               missed_ticks = x.missed_ticks + cardinality(due) - cardinality(chosen)
         where x.name = s.name;
        select * into s from switchyard.schedules x where x.name = s.name;
      end if;
      -- A queued tick (overlap 'queue') starts once its schedule has no open run, oldest first.
      if not exists (select 1 from switchyard.runs r
                      where r.run_id = s.last_run_id and r.status = 'started') then
        select st.tick_at, st.run_id into q from switchyard.schedule_ticks st
         where st.schedule_name = s.name and st.outcome = 'queued'
         order by st.tick_at limit 1;
        if found and switchyard._start_schedule_run(s.name, s.alias, s.input, q.tick_at, q.run_id)
        then
          started := started + 1;
        end if;
      end if;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        raise;
      end if;
      raise warning 'switchyard.run_schedules: schedule %: % (SQLSTATE %); looked at again next tick',
        to_json(s.name)::text, sqlerrm, sqlstate;
    end;
  end loop;
  -- Batches whose timeout passed (docs/design/batching.md), in a subtransaction: a failure
  -- there never undoes the schedules' runs.
  begin
    started := started + switchyard.close_batches(now_at);
  exception when others then
    if sqlstate like '40%' or sqlstate like '57%' then
      raise;
    end if;
    raise warning 'switchyard.run_schedules: close_batches failed: % (SQLSTATE %)', sqlerrm,
      sqlstate;
  end;
  delete from switchyard.schedule_ticks st
   where (st.schedule_name, st.tick_at) in (
     select x.schedule_name, x.tick_at from switchyard.schedule_ticks x
      where x.recorded_at < switchyard.clock_now() - interval '30 days' and x.outcome <> 'queued'
      order by x.recorded_at limit 1000);
  return started;
end
$$;
