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
