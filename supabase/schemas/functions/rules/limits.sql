-- Every limit of the SQL core with its value (docs/design/limits.md): the default, or the
-- operator's setting from switchyard.settings where one is set.
create or replace function switchyard.limits()
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'max_input_bytes', switchyard.limit_value('max_input_bytes'),
    'max_output_bytes', switchyard.limit_value('max_output_bytes'),
    'max_map_output_bytes', switchyard.limit_value('max_map_output_bytes'),
    'user_runs_per_minute', switchyard.limit_value('user_runs_per_minute'),
    'max_function_name_chars', switchyard.limit_value('max_function_name_chars'),
    'max_reason_chars', switchyard.limit_value('max_reason_chars'),
    'max_progress_bytes', switchyard.limit_value('max_progress_bytes'),
    'progress_per_second', switchyard.limit_value('progress_per_second'))
$$;
