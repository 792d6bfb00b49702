-- Ends a started wait or sleep step (docs/design/waits.md) without starting anything:
--   - 'signalled': its kept signal is marked delivered and its payload becomes the output;
--   - 'slept': a sleep's time is up, its output is null;
--   - 'timed out': a wait's timeout, as its on_timeout says: 'skip' skips the step (its
--     dependents run without its output), 'fail' fails the step and the run.
-- The caller holds the run's row lock, and starts the ready steps after (_start_ready_steps
-- when it is not that function itself) and completes the run when none is left.
create or replace function switchyard._finish_wait(run uuid, flow text, step text, outcome text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  st switchyard.steps;
  signal_payload jsonb;
begin
  select * into st from switchyard.steps s where s.flow_slug = flow and s.step_slug = step;
  if outcome = 'signalled' then
    update switchyard.run_signals rs set delivered_at = switchyard.clock_now()
     where rs.run_id = run and rs.step_slug = step
    returning rs.payload into signal_payload;
    perform switchyard._wait_event(run, flow, step, 'signalled');
    perform switchyard._complete_without_tasks(run, flow, step, signal_payload);
  elsif outcome = 'slept' then
    perform switchyard._complete_without_tasks(run, flow, step, 'null');
  elsif st.on_timeout = 'skip' then
    perform switchyard._wait_event(run, flow, step, 'timed out');
    perform switchyard._skip_step(run, flow, step, format(
      'wait timed out: no signal within %s seconds (onTimeout skip)', st.wait_timeout), false);
  else
    perform switchyard._wait_event(run, flow, step, 'timed out');
    perform switchyard._fail_run_step(run, step, format(
      'wait step %s timed out: no signal within %s seconds (onTimeout fail); signal it with '
      'switchyard.signal_run before its timeout, or give it onTimeout ''skip''',
      to_json(step)::text, st.wait_timeout));
  end if;
end
$$;
