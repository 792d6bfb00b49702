-- Starts the run of a schedule's tick with its derived id and records the tick (a queued
-- tick's record is updated). A failed start is recorded as 'failed' with its error, inside a
-- subtransaction, so one broken schedule never stops the others. `replaces` (overlap
-- 'cancel_previous') is the open run the tick replaces: it is cancelled in the same
-- subtransaction, first (a singleton start key of the alias is free then), so a start that
-- fails rolls the cancel back and the open run goes on. Returns whether it started.
create or replace function switchyard._start_schedule_run(
  schedule_name text, alias text, input jsonb, tick_at timestamptz, run uuid,
  replaces uuid default null
)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  message text;
begin
  begin
    if replaces is not null then
      perform switchyard.cancel_run(replaces,
        format('schedule %s: replaced by the tick of %s', schedule_name, tick_at));
    end if;
    perform switchyard.start_flow(alias, input, run);
  exception when others then
    get stacked diagnostics message = message_text;
    insert into switchyard.schedule_ticks (schedule_name, tick_at, run_id, outcome, error)
    values (schedule_name, tick_at, run, 'failed', left(message, 1000))
    on conflict on constraint schedule_ticks_pkey do update
      set outcome = 'failed', error = excluded.error, recorded_at = switchyard.clock_now();
    return false;
  end;
  insert into switchyard.schedule_ticks (schedule_name, tick_at, run_id, outcome)
  values (schedule_name, tick_at, run, 'started')
  on conflict on constraint schedule_ticks_pkey do update
    set outcome = 'started', recorded_at = switchyard.clock_now();
  update switchyard.schedules x set last_run_id = run where x.name = schedule_name;
  return true;
end
$$;
