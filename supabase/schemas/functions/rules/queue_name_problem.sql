-- Why a queue name breaks the naming rule (docs/design/overview.md#identity-rules), in words that
-- name the
-- value and the rule, or null when it is valid. `explicit`: a routed name, which must not
-- contain `__` (reserved for generated private names).
create or replace function switchyard.queue_name_problem(name text, explicit boolean)
returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when name is null then 'queue name is missing'
    when name !~ '^[a-z][a-z0-9_]*$' or length(name) > 47 then
      format('queue name %s is invalid: use lower-case letters, digits and single underscores '
        '(^[a-z][a-z0-9_]*$, at most 47 characters)', switchyard._clip(name))
    when explicit and position('__' in name) > 0 then
      format('queue name %s is invalid: explicit queue names must not contain "__" '
        '(reserved for generated private step queues)', switchyard._clip(name))
    else null
  end
$$;
