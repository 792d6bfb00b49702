-- Runs' outputs, one row per run given: the outputs of its completed leaf steps (no step
-- depends on them), '{}' when there is none; a skipped leaf is absent. The one definition:
-- complete_tasks asks it for each run its count-down completes, _run_output for one run. A SQL
-- function without SET or SECURITY DEFINER, so PostgreSQL inlines it into the caller's query
-- (planned once per session with that query): complete_tasks evaluates it only for the runs
-- that complete, inside the count-down's update, with no function call of its own.
create or replace function switchyard._run_outputs(runs uuid[])
returns table (run_id uuid, output jsonb)
rows 10
language sql
stable
as $$
  select r.run_id,
         coalesce((select jsonb_object_agg(ss.step_slug, ss.output)
                     from switchyard.step_states ss
                    where ss.run_id = r.run_id and ss.status = 'completed'
                      and not exists (select 1 from switchyard.deps d
                                       where d.flow_slug = r.flow_slug
                                         and d.dep_slug = ss.step_slug)),
                  '{}'::jsonb)
    from switchyard.runs r
   where r.run_id = any (runs)
$$;
