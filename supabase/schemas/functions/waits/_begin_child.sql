-- A 'flow' step just moved to started (docs/design/waits.md): starts its child run, a run
-- of the active version of the step's alias whose input is the step's input (the run input for
-- a root step, else its dependencies' outputs) and whose owner is the parent's. The child's id
-- is derived from the parent's run and step (_child_run_id, never a shape a signed-in user may
-- choose), and the link is kept in child_runs, so a retry of
-- the parent finds the same child instead of starting a second: a failed child is retried, a
-- completed one gives its output again. Returns true when the step is done already (the child
-- completed at once, or the step failed with the run: a child that could not start, one that
-- ended failed or cancelled); else the step waits for the child (_child_run_ended ends it).
create or replace function switchyard._begin_child(run uuid, flow text, step text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  st switchyard.steps;
  parent switchyard.runs;
  child uuid;
  child_run switchyard.runs;
  step_input jsonb;
begin
  select * into st from switchyard.steps s where s.flow_slug = flow and s.step_slug = step;
  select * into parent from switchyard.runs r where r.run_id = run;
  select c.run_id into child from switchyard.child_runs c
   where c.parent_run_id = run and c.parent_step = step;
  if child is null then
    if st.deps_count = 0 then
      step_input := parent.input;
    else
      step_input := switchyard._dependency_outputs(run, flow, step);
    end if;
    begin
      -- The child runs at its parent's priority
      -- (docs/design/flow-control.md#priority-and-keys-in-turn), in its trace under the parent
      -- run's
      -- span (docs/design/observability.md#metrics-traces-and-charts).
      child := switchyard.start_flow(st.child_alias, step_input,
                                     switchyard._child_run_id(run, step), parent.owner,
                                     priority => parent.priority,
                                     trace_context => switchyard.run_span_context(
                                       parent.run_id, parent.trace_context));
    exception when others then
      -- A deadlock, a serialization failure or a cancel is the caller's to repeat, not a refusal.
      if sqlstate like '40%' or sqlstate like '57%' then
        raise;
      end if;
      perform switchyard._fail_run_step(run, step, format(
        'flow step %s could not start a run of alias %s: %s', to_json(step)::text,
        to_json(st.child_alias)::text, sqlerrm));
      return true;
    end;
    insert into switchyard.child_runs (run_id, parent_run_id, parent_step) values (child, run, step);
  end if;
  select * into child_run from switchyard.runs r where r.run_id = child for update;
  if child_run.status = 'failed' then
    perform switchyard.retry_run(child);
    child_run.status := 'started';
  end if;
  if child_run.status = 'completed' then
    perform switchyard._complete_without_tasks(run, flow, step, child_run.output);
    return true;
  end if;
  if child_run.status = 'cancelled' then
    perform switchyard._fail_run_step(run, step, format(
      'flow step %s: its child run %s was cancelled (%s)', to_json(step)::text, child,
      child_run.error));
    return true;
  end if;
  perform switchyard._wait_event(run, flow, step, 'waiting');
  return false;
end
$$;
