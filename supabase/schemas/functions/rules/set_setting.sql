-- Sets (or, with null, clears) an operator setting: a limit of switchyard.limits() (input and
-- output sizes, user runs per minute, priority ageing) or a keep-alive setting (base URL, bearer,
-- hosts), each value checked against its rule before it is stored.
create or replace function switchyard.set_setting(name text, value text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  problem text;
begin
  if name is null
     or name not in ('functions_base_url', 'functions_bearer', 'functions_hosts', 'max_input_bytes',
                     'max_output_bytes', 'max_map_output_bytes', 'user_runs_per_minute',
                     'priority_ageing_seconds') then
    perform switchyard._refuse('22023', 'setting_unknown', 'name', name, format(
      'setting %s is unknown: use functions_base_url, functions_bearer, functions_hosts, '
      'max_input_bytes, max_output_bytes, max_map_output_bytes, user_runs_per_minute or '
      'priority_ageing_seconds',
      switchyard._clip(name)));
  end if;
  if value is not null then
    if name = 'functions_base_url' then
      problem := switchyard.base_url_problem(value);
    elsif name = 'functions_bearer' and value ~ '[[:space:][:cntrl:]]' then
      problem := 'a bearer contains no whitespace or control characters';
    elsif name = 'functions_bearer' and char_length(value) > 8192 then
      problem := format('it is %s characters long; the limit is 8192', char_length(value));
    elsif name in ('max_input_bytes', 'max_output_bytes')
          and (case when value ~ '^[0-9]{1,9}$' then value::int not between 65536 and 104857600
                    else true end) then
      problem := 'use a number of bytes from 65536 (64 KiB) to 104857600 (100 MiB)';
    elsif name = 'max_map_output_bytes'
          and (case when value ~ '^[0-9]{1,9}$' then value::int not between 65536 and 209715200
                    else true end) then
      -- jsonb holds at most 255 MB; an aggregate near that fails in PostgreSQL itself.
      problem := 'use a number of bytes from 65536 (64 KiB) to 209715200 (200 MiB)';
    elsif name = 'user_runs_per_minute'
          and (case when value ~ '^[0-9]{1,7}$' then value::int not between 1 and 1000000
                    else true end) then
      problem := 'use a number of runs from 1 to 1000000 (revoke start_user_run to allow none)';
    elsif name = 'priority_ageing_seconds'
          and (case when value ~ '^[0-9]{1,6}$' then value::int not between 1 and 86400
                    else true end) then
      problem := 'use a number of seconds from 1 to 86400 (what one priority level is worth)';
    elsif name = 'functions_hosts' then
      problem := switchyard._hosts_problem(value);
    end if;
    if problem is not null then
      perform switchyard._refuse('22023',
        case when name = 'functions_base_url' then 'url_format' else 'setting_value' end, 'value',
        case when name = 'functions_bearer' then null else value end, format(
        'setting %s %s is invalid: %s', name,
        case when name = 'functions_bearer' then '(value not shown)' else switchyard._clip(value) end,
        problem),
        context => jsonb_build_object('setting', name, 'problem', problem));
    end if;
  end if;
  if value is null then
    delete from switchyard.settings s where s.name = set_setting.name;
  else
    insert into switchyard.settings as s (name, value) values (set_setting.name, set_setting.value)
    on conflict on constraint settings_pkey do update set value = excluded.value, updated_at = switchyard.clock_now();
  end if;
end
$$;
