-- Settings the hardening added (issue 21): functions_hosts, max_map_output_bytes and
-- user_runs_per_minute; and priority_ageing_seconds (issue 23).
alter table switchyard.settings drop constraint settings_name_check;

alter table switchyard.settings add constraint settings_name_check
  check (name in ('functions_base_url', 'functions_bearer', 'functions_hosts', 'max_input_bytes',
                  'max_output_bytes', 'max_map_output_bytes', 'user_runs_per_minute',
                  'priority_ageing_seconds'));
