-- A child run's end ends its parent's flow step (issue 22, docs/ARCHITECTURE.md §5.11): a
-- statement trigger with transition tables (issue 27), as triggers.sql creates it.
create trigger runs_child_ended after update on switchyard.runs
  referencing old table as switchyard_old_runs new table as switchyard_new_runs
  for each statement execute function switchyard._child_run_ended();
