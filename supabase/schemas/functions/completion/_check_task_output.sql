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
    perform switchyard._refuse('22023', 'max_output_bytes', 'output', problem ->> 'excerpt', format(
      'complete_tasks: the output of step %s of run %s is %s bytes of JSON, over the limit of %s '
      'bytes (setting max_output_bytes)',
      to_json(new.step_slug)::text, new.run_id, problem ->> 'size', problem ->> 'limit'),
      context => jsonb_build_object('size', (problem ->> 'size')::bigint,
        'limit', (problem ->> 'limit')::int, 'run_id', new.run_id, 'step_slug', new.step_slug),
      hint => 'return a smaller value (store large data elsewhere and return a reference), or '
             'raise the limit: select switchyard.set_setting(''max_output_bytes'', ''<bytes>'')');
  end if;
  return new;
end
$$;
