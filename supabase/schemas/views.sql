-- Steps routed to a queue that started runs may still reach: the step has not finished in
-- that run yet (startup coverage, docs/ARCHITECTURE.md §4 step 5, and drain, §6). Driven from
-- the started runs (runs_flow_started), with one primary-key probe per (run, step) (a
-- LATERAL ... LIMIT 1, so no plan can join by scanning every state ever recorded): the cost
-- follows the open runs, never the history.
create or replace view switchyard.open_run_steps as
  select r.run_id, st.queue_name, st.flow_slug, st.step_slug
    from switchyard.runs r
    join switchyard.steps st on st.flow_slug = r.flow_slug
    cross join lateral (select ss.status from switchyard.step_states ss
                         where ss.run_id = r.run_id and ss.step_slug = st.step_slug
                         limit 1) ss
   where r.status = 'started' and ss.status in ('created', 'started');
