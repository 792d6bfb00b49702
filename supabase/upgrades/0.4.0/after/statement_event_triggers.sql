-- Run and step events from statement triggers with transition tables (issue 27): one call and
-- one insert per statement instead of a function call and an insert per row. _run_event and
-- _step_event were redefined for them before this step, so the row triggers go and the
-- statement triggers come in the same migration (docs/ARCHITECTURE.md §14).
drop trigger runs_event_insert on switchyard.runs;
drop trigger runs_event_status on switchyard.runs;
drop trigger step_states_event_insert on switchyard.step_states;
drop trigger step_states_event_status on switchyard.step_states;

create trigger runs_event_insert after insert on switchyard.runs
  referencing new table as switchyard_new_runs
  for each statement execute function switchyard._run_event();

create trigger runs_event_status after update on switchyard.runs
  referencing old table as switchyard_old_runs new table as switchyard_new_runs
  for each statement execute function switchyard._run_event();

create trigger step_states_event_insert after insert on switchyard.step_states
  referencing new table as switchyard_new_steps
  for each statement execute function switchyard._step_event();

create trigger step_states_event_status after update on switchyard.step_states
  referencing old table as switchyard_old_steps new table as switchyard_new_steps
  for each statement execute function switchyard._step_event();
