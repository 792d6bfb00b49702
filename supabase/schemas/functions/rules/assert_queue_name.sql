-- Refuses a queue name that breaks the naming rule (docs/ARCHITECTURE.md §2): the third place
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
    raise exception using errcode = '22023', message = problem,
      detail = jsonb_build_object(
        'rule', case when name is null then 'queue_name_missing'
                     when name !~ '^[a-z][a-z0-9_]*$' or length(name) > 47 then 'queue_name_format'
                     else 'queue_name_reserved_separator' end,
        'argument', 'queue_name', 'value', left(name, 200), 'explicit', explicit)::text;
  end if;
  return name;
end
$$;
