-- A run's output: the outputs of its completed leaf steps (no step depends on them); a
-- skipped leaf is absent. The one definition: complete_tasks (a batch's runs), and
-- _complete_run_if_done (a run that ended by a skip or an empty map) call it. PL/pgSQL, so its
-- statement is planned once per session, not once per call as a SQL function's would be.
create or replace function switchyard._run_output(run uuid, flow text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  return (select coalesce(jsonb_object_agg(ss.step_slug, ss.output), '{}'::jsonb)
            from switchyard.step_states ss
           where ss.run_id = run and ss.status = 'completed'
             and not exists (select 1 from switchyard.deps d
                              where d.flow_slug = flow and d.dep_slug = ss.step_slug));
end
$$;
