-- Begins the delayed starts that are due (start_flow_at), then ends the wait and sleep steps
-- whose time is up (docs/design/waits.md), oldest first, at most max_steps of each: a
-- delayed run's ready steps start; a sleep completes, a wait times out as its onTimeout
-- says ('fail' fails the run, 'skip' skips the step), and the ready steps after them start.
-- The SQL core's own clock: keep_alive runs it on every tick (pg_cron, docs/design/versions.md), so
-- waits end
-- with no worker alive; call it from any scheduler, or a test. A run another transaction
-- holds (a signal being sent) is left for the next call. Each run is worked on in a
-- subtransaction of its own: an error no rule foresaw fails that run alone
-- (_fail_run_unforeseen) and the call goes on with the next; a deadlock or a cancel (40xxx,
-- 57xxx) leaves it for the next call. Returns the number of runs begun and steps ended.
create or replace function switchyard.expire_waits(max_steps int default 1000)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  delayed record;
  due record;
  ended int := 0;
  step_type text;
  err_state text;
  err_message text;
begin
  if max_steps is null or max_steps < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'max_steps', max_steps::text, format(
      'expire_waits: max_steps %s is invalid: use an integer of at least 1',
      coalesce(max_steps::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  -- Delayed starts that are due (start_flow_at): their first steps start now.
  for delayed in
    select d.run_id from switchyard.delayed_starts d
     where d.start_at <= switchyard.clock_now()
     order by d.start_at
     limit max_steps
  loop
    begin
      perform 1 from switchyard.runs r
       where r.run_id = delayed.run_id for update skip locked;
      continue when not found;
      delete from switchyard.delayed_starts d where d.run_id = delayed.run_id;
      continue when not found;
      if exists (select 1 from switchyard.runs r where r.run_id = delayed.run_id and r.status = 'started') then
        perform switchyard._start_ready_steps(delayed.run_id);
        ended := ended + 1;
      end if;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        continue;
      end if;
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        if switchyard._fail_run_unforeseen(delayed.run_id, 'its delayed start could not begin',
                                           err_state, err_message) then
          delete from switchyard.delayed_starts d where d.run_id = delayed.run_id;
          ended := ended + 1;
        end if;
      exception when others then
        raise warning 'switchyard.expire_waits: run %: % (%); left for the next tick',
          delayed.run_id, sqlerrm, sqlstate;
      end;
    end;
  end loop;
  for due in
    -- Of started runs only: a run another step failed keeps its waiting step 'started' (a
    -- retry goes on with it), and such steps must not fill the limit.
    select ss.run_id, ss.flow_slug, ss.step_slug
      from switchyard.step_states ss
      join switchyard.runs r on r.run_id = ss.run_id and r.status = 'started'
     where ss.status = 'started' and ss.wait_due is not null and ss.wait_due <= switchyard.clock_now()
     order by ss.wait_due
     limit max_steps
  loop
    begin
      perform 1 from switchyard.runs r
       where r.run_id = due.run_id and r.status = 'started'
         for update skip locked;
      continue when not found;
      -- Still due once the run is held: a signal may have ended it meanwhile.
      select st.step_type into step_type
        from switchyard.step_states ss
        join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
       where ss.run_id = due.run_id and ss.step_slug = due.step_slug and ss.status = 'started'
         and ss.wait_due <= switchyard.clock_now();
      continue when not found;
      perform switchyard._finish_wait(due.run_id, due.flow_slug, due.step_slug,
                                      case when step_type = 'sleep' then 'slept' else 'timed out' end);
      if exists (select 1 from switchyard.runs r where r.run_id = due.run_id and r.status = 'started') then
        perform switchyard._start_ready_steps(due.run_id);
        perform switchyard._complete_run_if_done(due.run_id);
      end if;
      ended := ended + 1;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        continue;
      end if;
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        if switchyard._fail_run_unforeseen(
             due.run_id, format('step %s could not end its wait or start what follows it',
                                to_json(due.step_slug)::text),
             err_state, err_message) then
          ended := ended + 1;
        end if;
      exception when others then
        raise warning 'switchyard.expire_waits: run %: % (%); left for the next tick',
          due.run_id, sqlerrm, sqlstate;
      end;
    end;
  end loop;
  return ended;
end
$$;
