-- Deletes the checkpoints of a run's tasks that no worker is running
-- (docs/design/worker.md#worker-states-and-parts,
-- "Checkpoints"): checkpoints survive failed attempts and retry_run on purpose (a task resumes
-- where it was), and this is the way to start them over, e.g. before retry_run when a saved
-- state is what made the run fail (retryRun(..., { resetCheckpoints: true }) does both in one
-- transaction). A started task keeps its checkpoint: its handler may still save one. Unknown
-- run: 22023 run_unknown. Returns the checkpoints deleted.
create or replace function switchyard.reset_checkpoints(run_id uuid)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  deleted int;
begin
  perform 1 from switchyard.runs r where r.run_id = reset_checkpoints.run_id;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', reset_checkpoints.run_id::text,
      format(
      'reset_checkpoints: run %s does not exist', coalesce(reset_checkpoints.run_id::text, 'null')));
  end if;
  delete from switchyard.task_checkpoints c
   using switchyard.step_tasks t
   where c.run_id = reset_checkpoints.run_id and t.run_id = c.run_id
     and t.step_slug = c.step_slug and t.task_index = c.task_index and t.status <> 'started';
  get diagnostics deleted = row_count;
  return deleted;
end
$$;
