-- The trigger step_tasks_failed_attempt: a started task's last_failed_at moved, so its attempt
-- failed (fail_task_with, recover_stalled, or any later path that sets it): one row of
-- switchyard.failed_attempts for the metrics' windows, and the counter of failed attempts
-- (docs/design/observability.md).
create or replace function switchyard._record_failed_attempt()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into switchyard.failed_attempts
    (run_id, step_slug, task_index, attempt, queue_name, flow_slug, failed_at)
  values (new.run_id, new.step_slug, new.task_index, new.attempts_count, new.queue_name,
          new.flow_slug, new.last_failed_at);
  -- The counter of failed attempts (docs/design/observability.md#counters-histograms-and-levels),
  -- which pruning the row above never lowers.
  perform switchyard._count_metrics(array['failed_attempts'], array[new.queue_name],
    array[new.flow_slug], array[new.step_slug]);
  return null;
end
$$;
