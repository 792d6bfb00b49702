-- Runs ended (a statement trigger on runs with transition tables: one call per statement, one
-- join of its ended runs with child_runs by key). Each ended run that is the child run of a
-- 'flow' step (child_runs), in the statement's order, ends that step with it (docs/
-- docs/design/waits.md), holding the parent's row lock (taken after the child's, which the
-- ending transaction holds): completed, the step completes with the child's output and the
-- parent goes on; failed, the step and the parent fail naming the child's error; cancelled, the
-- parent is cancelled too. A parent that is not started, or a step no longer waiting (a retry
-- moved it), is left alone.
create or replace function switchyard._child_run_ended()
returns trigger
language plpgsql
security definer
set search_path = ''
set enable_hashjoin = on
as $$
declare
  ended record;
  parent switchyard.runs;
  state switchyard.step_states;
  err_state text;
  err_message text;
begin
  -- No child run at all (a project without flow steps): one probe of an empty table. A link
  -- is committed before its child run can end (the child's tasks appear with that commit).
  perform from switchyard.child_runs limit 1;
  if not found then
    return null;
  end if;
  for ended in
    select n.run_id, n.status, n.output, n.error, c.parent_run_id, c.parent_step
      from (select n.*, row_number() over () as ord from switchyard_new_runs n) n
      join switchyard_old_runs o on o.run_id = n.run_id
      join switchyard.child_runs c on c.run_id = n.run_id
     where o.status = 'started' and n.status in ('completed', 'failed', 'cancelled')
     order by n.ord
  loop
    select * into parent from switchyard.runs r where r.run_id = ended.parent_run_id for update;
    select * into state from switchyard.step_states ss
     where ss.run_id = ended.parent_run_id and ss.step_slug = ended.parent_step;
    if parent.status <> 'started' or state.status <> 'started' then
      continue;
    end if;
    if ended.status = 'completed' then
      perform switchyard._complete_without_tasks(parent.run_id, parent.flow_slug,
                                                 ended.parent_step, ended.output);
      -- The parent's next steps start in a subtransaction: an error no rule foresaw there
      -- fails the parent alone, never the child's ending (the completion of its last task).
      begin
        perform switchyard._start_ready_steps(parent.run_id);
        perform switchyard._complete_run_if_done(parent.run_id);
      exception when others then
        if sqlstate like '40%' or sqlstate like '57%' then
          raise;
        end if;
        get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
        perform switchyard._fail_run_unforeseen(
          parent.run_id, format('the steps ready after flow step %s could not start',
                                to_json(ended.parent_step)::text),
          err_state, err_message);
      end;
    elsif ended.status = 'failed' then
      perform switchyard._fail_run_step(parent.run_id, ended.parent_step, format(
        'flow step %s: its child run %s failed: %s', to_json(ended.parent_step)::text,
        ended.run_id, ended.error));
    else
      perform switchyard.cancel_run(parent.run_id, format(
        'its child run %s (step %s) was cancelled', ended.run_id,
        to_json(ended.parent_step)::text));
    end if;
  end loop;
  return null;
end
$$;
