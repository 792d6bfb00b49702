-- Skips a step (docs/design/runs.md#ready-steps-conditions-and-skips): its state becomes 'skipped'
-- with the reason; with
-- `cascading`, every step that depends on it, transitively, is skipped too. The run's step
-- count goes down by the number skipped, and the dependents of skipped steps that still wait
-- count one dependency down (they run without the skipped output). Returns how many were
-- skipped. The caller holds the run (a row lock, or the transaction that created it).
create or replace function switchyard._skip_step(
  run uuid, flow text, step text, reason text, cascading boolean
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  skipped text[];
begin
  with recursive closure(step_slug) as (
    select step
    union
    select d.step_slug from switchyard.deps d join closure c on d.dep_slug = c.step_slug
     where cascading and d.flow_slug = flow
  ),
  marked as (
    update switchyard.step_states ss
       set status = 'skipped', skipped_at = switchyard.clock_now(), wait_due = null,
           skip_reason = case when ss.step_slug = step then reason
                              else format('skip-cascade: step %s was skipped', to_json(step)) end
      from closure c
     where ss.run_id = run and ss.step_slug = c.step_slug and ss.status in ('created', 'started')
    returning ss.step_slug
  )
  select coalesce(array_agg(m.step_slug), '{}') into skipped from marked m;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - x.n
    from (select d.step_slug, count(*)::int as n from switchyard.deps d
           where d.flow_slug = flow and d.dep_slug = any (skipped)
           group by d.step_slug) x
   where ss.run_id = run and ss.step_slug = x.step_slug and ss.status = 'created';
  update switchyard.runs r
     set remaining_steps = r.remaining_steps - cardinality(skipped)
   where r.run_id = run;
  return cardinality(skipped);
end
$$;
