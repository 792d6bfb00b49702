-- Cancels the started runs whose deadline passed (docs/design/client.md, "Deadlines"), at
-- most max_runs, soonest deadline first, through cancel_run with the reason 'deadline' (so the
-- run's error reads "cancelled: deadline", its queued tasks are archived and its running
-- handlers hear of it at their next heartbeat). Runs from every stall sweep, every keep-alive
-- tick and by hand, so deadlines hold with no worker alive. A run another transaction holds is
-- left for the next call. Returns the number cancelled.
create or replace function switchyard.cancel_overdue_runs(
  now_at timestamptz default switchyard.clock_now(), max_runs int default 1000
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  overdue uuid;
  n int := 0;
  err_state text;
  err_message text;
begin
  for overdue in
    select r.run_id from switchyard.runs r
     where r.status = 'started' and r.deadline_at is not null and r.deadline_at <= now_at
     order by r.deadline_at
     limit greatest(coalesce(max_runs, 1000), 1)
  loop
    -- Its family's rows in cancel_run's order (child runs first), none waited for: a run or
    -- child another transaction holds is left for the next call.
    -- An error no rule foresaw fails that run alone (_fail_run_unforeseen), so one run can
    -- never keep every other deadline from holding.
    begin
      perform switchyard._lock_run_family(overdue, true);
      continue when not exists (select 1 from switchyard.runs r
                                 where r.run_id = overdue and r.status = 'started');
      perform switchyard.cancel_run(overdue, 'deadline');
      n := n + 1;
    exception when others then
      if sqlstate = '55P03' or sqlstate like '40%' or sqlstate like '57%' then
        continue;
      end if;
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        perform switchyard._fail_run_unforeseen(overdue, 'its deadline passed and it could not be cancelled',
                                                err_state, err_message);
      exception when others then
        raise warning 'switchyard.cancel_overdue_runs: run %: % (%); left for the next tick',
          overdue, sqlerrm, sqlstate;
      end;
    end;
  end loop;
  return n;
end
$$;
