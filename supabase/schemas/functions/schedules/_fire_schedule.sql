-- Fires one tick of a locked schedule: records it and, as the overlap policy says, starts its
-- run (id derived from the schedule and the tick), queues it behind the open run ('queue'),
-- skips it ('skip') or cancels the open run as it starts the new one ('cancel_previous'). A
-- tick already recorded is a no-op. A start that fails (the alias was deleted, the input no
-- longer fits) is recorded as 'failed' with its error and ends nothing else: the open run a
-- 'cancel_previous' tick would replace is cancelled only when its successor starts
-- (_start_schedule_run). Returns whether a run started.
create or replace function switchyard._fire_schedule(s switchyard.schedules, tick_at timestamptz)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  run uuid := switchyard._schedule_run_id(s.name, tick_at);
  open_run boolean;
begin
  if exists (select 1 from switchyard.schedule_ticks st
              where st.schedule_name = s.name and st.tick_at = _fire_schedule.tick_at) then
    return false;
  end if;
  open_run := exists (select 1 from switchyard.runs r
                       where r.run_id = s.last_run_id and r.status = 'started');
  if open_run and s.overlap = 'skip' then
    insert into switchyard.schedule_ticks (schedule_name, tick_at, run_id, outcome)
    values (s.name, tick_at, run, 'skipped');
    update switchyard.schedules x set skipped_ticks = x.skipped_ticks + 1 where x.name = s.name;
    return false;
  end if;
  if (open_run or exists (select 1 from switchyard.schedule_ticks st
                           where st.schedule_name = s.name and st.outcome = 'queued'))
     and s.overlap = 'queue' then
    insert into switchyard.schedule_ticks (schedule_name, tick_at, run_id, outcome)
    values (s.name, tick_at, run, 'queued');
    return false;
  end if;
  return switchyard._start_schedule_run(s.name, s.alias, s.input, tick_at, run,
    case when open_run and s.overlap = 'cancel_previous' then s.last_run_id end);
end
$$;
