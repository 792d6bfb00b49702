-- The input a dependent step's handler receives and its condition is evaluated over: the
-- outputs of its completed dependencies by slug; a skipped dependency is absent
-- (docs/design/runs.md#ready-steps-conditions-and-skips). start_tasks builds the same object inline
-- for the claim.
create or replace function switchyard._dependency_outputs(run uuid, flow text, step text)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select coalesce(jsonb_object_agg(d.dep_slug, ds.output), '{}'::jsonb)
    from switchyard.deps d
    join switchyard.step_states ds on ds.run_id = run and ds.step_slug = d.dep_slug
   where d.flow_slug = flow and d.step_slug = step and ds.status = 'completed'
$$;
