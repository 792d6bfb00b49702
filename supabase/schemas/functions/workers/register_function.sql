-- Records a queue function and its queue (a scaffold migration's step), so operators can pause,
-- fence and wake it before its first worker starts.
create or replace function switchyard.register_function(function_name text, queue_name text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    perform switchyard._refuse('22023', 'function_name_format', 'function_name', function_name,
      format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      switchyard._clip(function_name)));
  end if;
  perform switchyard.assert_queue_name(queue_name, false);
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_function.function_name, register_function.queue_name)
  on conflict on constraint worker_functions_pkey do update set queue_name = excluded.queue_name;
end
$$;
