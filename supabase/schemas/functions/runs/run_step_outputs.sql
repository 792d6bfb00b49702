-- Every completed step's output of a run, by step slug (a map step's: its elements' outputs in
-- element order), whatever the run's status; skipped and unfinished steps are absent. Null when
-- there is no such run. The client's stepOutputs() (docs/design/client.md).
create or replace function switchyard.run_step_outputs(run_id uuid)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select case when exists (select 1 from switchyard.runs r where r.run_id = run_step_outputs.run_id)
              then coalesce((select jsonb_object_agg(ss.step_slug, ss.output)
                               from switchyard.step_states ss
                              where ss.run_id = run_step_outputs.run_id
                                and ss.status = 'completed'), '{}'::jsonb)
         end
$$;
