-- Limits (docs/ARCHITECTURE.md §13): flow input and step output in bytes of their JSON text
-- (settings max_input_bytes and max_output_bytes, 1 MiB by default), function names and
-- operators' pause reasons in characters. Each refusal names the value's size and the limit.
-- Input, output and function names are checked by triggers, so every path that writes them
-- (start_flow, complete_tasks and complete_task, register_function and register_worker) is
-- covered without a second copy of those SQL functions.

-- The settings table knows the two byte limits too.
alter table switchyard.settings drop constraint settings_name_check;
alter table switchyard.settings add constraint settings_name_check
  check (name in ('functions_base_url', 'functions_bearer', 'max_input_bytes', 'max_output_bytes'));

-- A text value for a message: JSON-quoted; a value longer than `n` characters is cut there and
-- followed by its length, so a refusal names the value without echoing a megabyte of it.
create or replace function switchyard._clip(value text, n int default 80)
returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when value is null then 'null'
    when char_length(value) <= n then to_json(value)::text
    else to_json(left(value, n))::text || format('... (%s characters)', char_length(value))
  end
$$;

-- One limit. Names and reasons are counted in characters and fixed; flow input and step
-- output are counted in bytes of their JSON text (jsonb's text form, UTF-8) and are settings
-- with a default of 1 MiB.
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
    else
      raise exception using errcode = '22023', message = format(
        'limit %s is unknown: use max_input_bytes, max_output_bytes, max_function_name_chars '
        'or max_reason_chars', switchyard._clip(name)),
        detail = jsonb_build_object(
          'rule', 'limit_unknown', 'argument', 'name', 'value', left(name, 200))::text;
  end case;
end
$$;

-- Every limit, as one document (the worker reads it at start-up).
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
    'max_function_name_chars', switchyard.limit_value('max_function_name_chars'),
    'max_reason_chars', switchyard.limit_value('max_reason_chars'))
$$;

-- The size of a JSON value against its limit, as a refusal: null when it fits.
create or replace function switchyard._json_size_problem(value jsonb, limit_name text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
declare
  size bigint := octet_length(value::text);
  max_size int := switchyard.limit_value(limit_name);
begin
  if size <= max_size then
    return null;
  end if;
  return jsonb_build_object('size', size, 'limit', max_size,
                            'excerpt', left(value::text, 200));
end
$$;

-- Flow input: refused at start_flow (the run's row), before anything is sent.
create or replace function switchyard._check_run_input()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem jsonb := switchyard._json_size_problem(new.input, 'max_input_bytes');
begin
  if problem is not null then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): input is %s bytes of JSON, over the limit of %s bytes (setting max_input_bytes)',
      switchyard._clip(new.started_as), problem ->> 'size', problem ->> 'limit'),
      detail = jsonb_build_object(
        'rule', 'max_input_bytes', 'argument', 'input', 'value', problem ->> 'excerpt',
        'size', (problem ->> 'size')::bigint, 'limit', (problem ->> 'limit')::int)::text,
      hint = 'send a smaller input (store large data elsewhere and pass a reference), or raise '
             'the limit: select switchyard.set_setting(''max_input_bytes'', ''<bytes>'')';
  end if;
  return new;
end
$$;
create trigger runs_input_limit before insert or update of input on switchyard.runs
  for each row execute function switchyard._check_run_input();

-- Step output: a completion over the limit is refused. The worker measures the same way before
-- it sends (jsonTextBytes) and fails the attempt instead, so it never gets here. JSON text is at
-- most six times its jsonb size and the limit is at least 64 KiB, so a smaller value needs no look.
create or replace function switchyard._check_task_output()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem jsonb := switchyard._json_size_problem(new.output, 'max_output_bytes');
begin
  if problem is not null then
    raise exception using errcode = '22023', message = format(
      'complete_tasks: the output of step %s of run %s is %s bytes of JSON, over the limit of %s '
      'bytes (setting max_output_bytes)',
      to_json(new.step_slug)::text, new.run_id, problem ->> 'size', problem ->> 'limit'),
      detail = jsonb_build_object(
        'rule', 'max_output_bytes', 'argument', 'output', 'value', problem ->> 'excerpt',
        'size', (problem ->> 'size')::bigint, 'limit', (problem ->> 'limit')::int,
        'run_id', new.run_id, 'step_slug', new.step_slug)::text,
      hint = 'return a smaller value (store large data elsewhere and return a reference), or '
             'raise the limit: select switchyard.set_setting(''max_output_bytes'', ''<bytes>'')';
  end if;
  return new;
end
$$;
create trigger step_tasks_output_limit before update of output on switchyard.step_tasks
  for each row when (pg_column_size(new.output) > 65536 / 6)
  execute function switchyard._check_task_output();

-- Function names (at most 63 characters) and their queue, which must be in the queue catalog
-- (docs/ARCHITECTURE.md §3): register_function no longer accepts a queue that exists nowhere
-- (the scaffold's migration provisions its shared queue first), register_worker already checks.
create or replace function switchyard._check_worker_function()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_function_name_chars');
begin
  if char_length(new.function_name) > max_chars then
    raise exception using errcode = '22023', message = format(
      'function name %s is %s characters long, over the limit of %s characters',
      switchyard._clip(new.function_name), char_length(new.function_name), max_chars),
      detail = jsonb_build_object(
        'rule', 'max_function_name_chars', 'argument', 'function_name',
        'value', left(new.function_name, 200), 'size', char_length(new.function_name),
        'limit', max_chars)::text;
  end if;
  if not exists (select 1 from switchyard.queues q where q.queue_name = new.queue_name) then
    raise exception using errcode = '22023', message = format(
      'function %s: queue %s is unknown: it is not in the queue catalog (switchyard.queues), so no '
      'compiled flow routes a step to it; provision a shared queue first with '
      'select switchyard.ensure_shared_queue(%L), or start a worker that routes to it',
      to_json(new.function_name)::text, switchyard._clip(new.queue_name), new.queue_name),
      detail = jsonb_build_object(
        'rule', 'queue_unknown', 'argument', 'queue_name', 'value', left(new.queue_name, 200),
        'function_name', left(new.function_name, 200))::text;
  end if;
  return new;
end
$$;
create trigger worker_functions_rules before insert or update of function_name, queue_name
  on switchyard.worker_functions
  for each row execute function switchyard._check_worker_function();

-- Operators' pause reasons: at most max_reason_chars (1000). The pause that unsupported work
-- sets (start_tasks) names every refused message id and is not limited.
create or replace function switchyard.pause_function(function_name text, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_reason_chars');
begin
  if coalesce(trim(reason), '') = '' then
    raise exception using errcode = '22023', message = 'pause_function: a reason is required',
      detail = jsonb_build_object(
        'rule', 'reason_missing', 'argument', 'reason', 'value', left(reason, 200))::text;
  end if;
  if char_length(reason) > max_chars then
    raise exception using errcode = '22023', message = format(
      'pause_function(%s): the reason is %s characters long, over the limit of %s characters; '
      'say why in fewer words and keep the details elsewhere',
      switchyard._clip(pause_function.function_name), char_length(reason), max_chars),
      detail = jsonb_build_object(
        'rule', 'max_reason_chars', 'argument', 'reason', 'value', left(reason, 200),
        'size', char_length(reason), 'limit', max_chars)::text;
  end if;
  update switchyard.worker_functions f
     set paused_at = now(), pause_reason = reason
   where f.function_name = pause_function.function_name and f.paused_at is null;
  if found then
    return true;
  end if;
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = pause_function.function_name) then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', coalesce(to_json(pause_function.function_name)::text, 'null')),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(pause_function.function_name, 200)))::text;
  end if;
  return false;      -- already paused: the first reason is kept
end
$$;

-- Privileges as in the grants migration: the service role reads the limits; the helpers and
-- trigger functions are for the SQL core only.
revoke execute on function
  switchyard._clip(text, int),
  switchyard.limit_value(text),
  switchyard.limits(),
  switchyard._json_size_problem(jsonb, text),
  switchyard._check_run_input(),
  switchyard._check_task_output(),
  switchyard._check_worker_function()
from public;
do $$
begin
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant execute on function switchyard.limits() to service_role;
  end if;
end
$$;
