-- Refuses a queue name that breaks the naming rule (docs/design/overview.md#identity-rules): the
-- third place
-- the rule is checked, after the literal types and the runtime check. Returns the name.
-- queue_name_problem words the rule; the detail names it (queue_name_missing, _format,
-- _reserved_separator).
create or replace function switchyard.assert_queue_name(name text, explicit boolean)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  problem text := switchyard.queue_name_problem(name, explicit);
begin
  if problem is not null then
    perform switchyard._refuse('22023',
      case when name is null then 'queue_name_missing'
           when name !~ '^[a-z][a-z0-9_]*$' or length(name) > 47 then 'queue_name_format'
           else 'queue_name_reserved_separator' end,
      'queue_name', name, problem,
      context => jsonb_build_object('explicit', explicit));
  end if;
  return name;
end
$$;
