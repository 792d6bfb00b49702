-- A task's last checkpoint (ctx.resume()): {"state", "attempt" (the attempt that saved it),
-- "saved_at"}, or null when it has none.
create or replace function switchyard.task_checkpoint(run_id uuid, step_slug text, task_index int)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select jsonb_build_object('state', c.state, 'attempt', c.attempt, 'saved_at', c.saved_at)
    from switchyard.task_checkpoints c
   where c.run_id = task_checkpoint.run_id and c.step_slug = task_checkpoint.step_slug
     and c.task_index = task_checkpoint.task_index
$$;
