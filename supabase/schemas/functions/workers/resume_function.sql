-- Resumes a paused queue function: the only way back from a pause
-- (docs/design/worker.md#worker-states-and-parts).
create or replace function switchyard.resume_function(function_name text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = resume_function.function_name) then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', switchyard._clip(resume_function.function_name)),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(resume_function.function_name, 200)))::text;
  end if;
  update switchyard.worker_functions f
     set paused_at = null, pause_reason = null, pause_detail = null
   where f.function_name = resume_function.function_name and f.paused_at is not null;
  return found;
end
$$;
