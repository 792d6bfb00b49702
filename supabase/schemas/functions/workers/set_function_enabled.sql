-- Sets a queue function's enabled flag (the fenced rollout's switch, docs/design/versions.md): a
-- disabled function's new workers refuse to start and its live ones stop.
create or replace function switchyard.set_function_enabled(function_name text, enabled boolean)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous boolean;
begin
  select f.enabled into previous from switchyard.worker_functions f
   where f.function_name = set_function_enabled.function_name for update;
  if not found then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', switchyard._clip(set_function_enabled.function_name)),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(set_function_enabled.function_name, 200)))::text;
  end if;
  update switchyard.worker_functions f set enabled = set_function_enabled.enabled
   where f.function_name = set_function_enabled.function_name;
  return previous;
end
$$;
