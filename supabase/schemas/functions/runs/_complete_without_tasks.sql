-- A step that is done without a task (an empty map: output []): completes its state, counts
-- the run and its waiting dependents down.
create or replace function switchyard._complete_without_tasks(
  run uuid, flow text, step text, step_output jsonb
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'completed', completed_at = switchyard.clock_now(), output = step_output, remaining_tasks = 0,
         wait_due = null
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - 1
    from switchyard.deps d
   where d.flow_slug = flow and d.dep_slug = step
     and ss.run_id = run and ss.step_slug = d.step_slug;
  update switchyard.runs r set remaining_steps = r.remaining_steps - 1 where r.run_id = run;
end
$$;
