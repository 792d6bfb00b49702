-- Step states updated in place (issue 45), as supabase/schemas/tables/041_step_states.sql declares
-- them: the open waits' deadline in a column of its own (wait_due, cleared when the step ends)
-- and the index of the open waits on it, with a predicate that names no status, so that no
-- update of a step's status changes an indexed column; and room on each page for the rows' next
-- versions (fillfactor 80; pages written before keep theirs until rewritten).
alter table switchyard.step_states add column wait_due timestamptz;

-- The waits in progress now (found through the old index of started waits).
update switchyard.step_states set wait_due = wait_deadline
 where status = 'started' and wait_deadline is not null;

alter table switchyard.step_states
  add constraint step_states_wait_due_started check (wait_due is null or status = 'started');

drop index switchyard.step_states_wait_deadline;

create index step_states_wait_due on switchyard.step_states (wait_due) where wait_due is not null;

alter table switchyard.step_states set (fillfactor = 80);
