-- Each failed attempt is a row of switchyard.failed_attempts (issue 36), as triggers.sql
-- creates it.
create trigger step_tasks_failed_attempt after update of last_failed_at on switchyard.step_tasks
  for each row when (old.status = 'started' and new.last_failed_at is not null
                     and new.last_failed_at is distinct from old.last_failed_at)
  execute function switchyard._record_failed_attempt();
