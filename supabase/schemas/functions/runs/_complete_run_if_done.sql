-- Completes a started run none of whose steps is left (every one completed or skipped), with
-- its leaf outputs (complete_tasks completes the runs its batch finishes in its count-down).
create or replace function switchyard._complete_run_if_done(run uuid)
returns void
language sql
volatile
set search_path = ''
as $$
  update switchyard.runs r
     set status = 'completed', completed_at = switchyard.clock_now(),
         output = switchyard._run_output(r.run_id, r.flow_slug)
   where r.run_id = run and r.status = 'started' and r.remaining_steps = 0
$$;
