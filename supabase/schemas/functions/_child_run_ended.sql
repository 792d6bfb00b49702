-- A run ended (trigger on runs): when it is the child run of a 'flow' step (child_runs), that
-- step ends with it (docs/ARCHITECTURE.md §5.11), holding the parent's row lock (taken after
-- the child's, which the ending transaction holds): completed, the step completes with the
-- child's output and the parent goes on; failed, the step and the parent fail naming the
-- child's error; cancelled, the parent is cancelled too. A parent that is not started, or a
-- step no longer waiting (a retry moved it), is left alone.
create or replace function switchyard._child_run_ended()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  link switchyard.child_runs;
  parent switchyard.runs;
  state switchyard.step_states;
begin
  select * into link from switchyard.child_runs c where c.run_id = new.run_id;
  if not found then
    return null;
  end if;
  select * into parent from switchyard.runs r where r.run_id = link.parent_run_id for update;
  select * into state from switchyard.step_states ss
   where ss.run_id = link.parent_run_id and ss.step_slug = link.parent_step;
  if parent.status <> 'started' or state.status <> 'started' then
    return null;
  end if;
  if new.status = 'completed' then
    perform switchyard._complete_without_tasks(parent.run_id, parent.flow_slug, link.parent_step,
                                               new.output);
    perform switchyard._start_ready_steps(parent.run_id);
    perform switchyard._complete_run_if_done(parent.run_id);
  elsif new.status = 'failed' then
    perform switchyard._fail_run_step(parent.run_id, link.parent_step, format(
      'flow step %s: its child run %s failed: %s', to_json(link.parent_step)::text, new.run_id,
      new.error));
  else
    perform switchyard.cancel_run(parent.run_id, format(
      'its child run %s (step %s) was cancelled', new.run_id, to_json(link.parent_step)::text));
  end if;
  return null;
end
$$;
