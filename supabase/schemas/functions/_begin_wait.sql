-- A wait or sleep step just moved to started (by _start_ready_steps; a 'flow' step goes to
-- _begin_child): a wait whose signal
-- arrived early gets it now (returns true: the step is done, its dependents may be ready);
-- else the step waits (returns false): its deadline is set from its timeout (a wait without
-- one waits until signalled or cancelled) and a 'waiting' event is recorded. No task, no
-- message: nothing runs while it waits (docs/ARCHITECTURE.md §5.11).
create or replace function switchyard._begin_wait(run uuid, flow text, step text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  st switchyard.steps;
begin
  select * into st from switchyard.steps s where s.flow_slug = flow and s.step_slug = step;
  if st.step_type = 'flow' then
    return switchyard._begin_child(run, flow, step);
  end if;
  if st.step_type = 'wait'
     and exists (select 1 from switchyard.run_signals rs where rs.run_id = run and rs.step_slug = step) then
    perform switchyard._finish_wait(run, flow, step, 'signalled');
    return true;
  end if;
  update switchyard.step_states ss
     set wait_deadline = now() + make_interval(secs => st.wait_timeout), remaining_tasks = 0
   where ss.run_id = run and ss.step_slug = step;
  perform switchyard._wait_event(run, flow, step, 'waiting');
  return false;
end
$$;
