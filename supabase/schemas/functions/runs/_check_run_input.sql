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
    perform switchyard._refuse('22023', 'max_input_bytes', 'input', problem ->> 'excerpt', format(
      'start_flow(%s): input is %s bytes of JSON, over the limit of %s bytes (setting max_input_bytes)',
      switchyard._clip(new.started_as), problem ->> 'size', problem ->> 'limit'),
      context => jsonb_build_object('size', (problem ->> 'size')::bigint,
        'limit', (problem ->> 'limit')::int),
      hint => 'send a smaller input (store large data elsewhere and pass a reference), or raise '
             'the limit: select switchyard.set_setting(''max_input_bytes'', ''<bytes>'')');
  end if;
  return new;
end
$$;
