-- One limit of switchyard.limits() by name: what every check of a limit reads, so an operator's
-- setting (set_setting) changes it everywhere at once. Refuses an unknown name.
create or replace function switchyard.limit_value(name text)
returns int
language plpgsql
stable
set search_path = ''
as $$
declare
  setting text;
begin
  case name
    when 'max_function_name_chars' then
      return 63;      -- a DNS label; the longest generated name (47 + '-worker') is 54
    when 'max_reason_chars' then
      return 1000;
    when 'max_input_bytes', 'max_output_bytes' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 1048576);
    -- A map step's outputs together (its aggregate, what its dependents get), 16 MiB.
    when 'max_map_output_bytes' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 16777216);
    -- New runs per signed-in user per minute (start_user_run).
    when 'user_runs_per_minute' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 60);
    -- What one level of run priority is worth in waiting time, in seconds
    -- (docs/design/flow-control.md#priority-and-keys-in-turn).
    when 'priority_ageing_seconds' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 60);
    -- A progress event's JSON text (ctx.progress, report_progress), 8 KiB.
    when 'max_progress_bytes' then
      return 8192;
    -- Progress events per task in any window of one second from its first (report_progress).
    when 'progress_per_second' then
      return 20;
    else
      perform switchyard._refuse('22023', 'limit_unknown', 'name', name, format(
        'limit %s is unknown: use max_input_bytes, max_output_bytes, max_map_output_bytes, '
        'user_runs_per_minute, priority_ageing_seconds, max_function_name_chars, max_reason_chars, '
        'max_progress_bytes or progress_per_second', switchyard._clip(name)));
  end case;
end
$$;
