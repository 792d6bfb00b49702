-- Completes one task: a batch of one (see complete_tasks).
create or replace function switchyard.complete_task(
  run_id uuid, step_slug text, attempt int, output jsonb, task_index int default 0
)
returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  select c.ok from switchyard.complete_tasks(jsonb_build_array(jsonb_build_object(
    'run_id', complete_task.run_id, 'step_slug', complete_task.step_slug,
    'task_index', complete_task.task_index,
    'attempt', complete_task.attempt, 'output', coalesce(complete_task.output, 'null')))) c
$$;
