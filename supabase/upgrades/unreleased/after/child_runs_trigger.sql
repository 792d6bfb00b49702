-- A child run's end ends its parent's flow step (issue 22, docs/ARCHITECTURE.md §5.11).
create trigger runs_child_ended after update of status on switchyard.runs
  for each row when (old.status = 'started' and new.status in ('completed', 'failed', 'cancelled'))
  execute function switchyard._child_run_ended();
