-- The steps of `flow` that depend on any of `seeds`, transitively, with the seeds themselves
-- (those of the flow), in step order: what a rerun from a step runs again (rerun_run, fork_run).
create or replace function switchyard._downstream_steps(flow text, seeds text[])
returns text[]
language sql
stable
set search_path = ''
as $$
  with recursive down(step_slug) as (
    select st.step_slug from switchyard.steps st
     where st.flow_slug = flow and st.step_slug = any (seeds)
    union
    select d.step_slug from switchyard.deps d join down on d.dep_slug = down.step_slug
     where d.flow_slug = flow
  )
  select coalesce(array_agg(st.step_slug order by st.step_index), '{}')
    from switchyard.steps st
   where st.flow_slug = flow and st.step_slug in (select down.step_slug from down)
$$;
