-- A user_signal_steps row's payload_schema must be one _payload_problem can check
-- (_payload_schema_problem): refused with the problem (22023 payload_schema_invalid), so a typo
-- in a keyword never leaves a step open to any payload while it looks checked.
create or replace function switchyard._check_user_signal_step()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem text;
begin
  if new.payload_schema is not null then
    problem := switchyard._payload_schema_problem(new.payload_schema);
    if problem is not null then
      perform switchyard._refuse('22023', 'payload_schema_invalid', 'payload_schema',
        new.payload_schema::text, format(
        'user_signal_steps (%s, %s): the payload schema is invalid: %s',
        to_json(new.alias)::text, to_json(new.step_slug)::text, problem),
        context => jsonb_build_object('problem', problem));
    end if;
  end if;
  return new;
end
$$;
