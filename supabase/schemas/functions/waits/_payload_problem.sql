-- Why a signal payload (val) does not match its declared schema (a _payload_schema_problem-valid
-- subset of JSON Schema), naming the path (payload.items[2].id) and the rule, or null when it
-- does: its type (integer: a number without a fraction), enum (equal to one of the values),
-- required properties, additionalProperties false (no property beyond properties), each
-- property's and each item's schema, maxLength (characters), maxItems, minimum and maximum.
create or replace function switchyard._payload_problem(val jsonb, schema jsonb, path text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  kind text := jsonb_typeof(val);
  allowed jsonb;
  sub record;
  problem text;
begin
  if schema ? 'type' then
    allowed := case jsonb_typeof(schema -> 'type') when 'array' then schema -> 'type'
                    else jsonb_build_array(schema -> 'type') end;
    if not (allowed ? kind
            or (kind = 'number' and allowed ? 'integer'
                and (val #>> '{}')::numeric = trunc((val #>> '{}')::numeric))) then
      return format('%s is a%s %s, not %s', path, case when kind in ('object', 'array') then 'n'
                                                       else '' end,
                    kind, (select string_agg(t.value #>> '{}', ' or ')
                             from jsonb_array_elements(allowed) t));
    end if;
  end if;
  if schema ? 'enum' and not exists (select 1 from jsonb_array_elements(schema -> 'enum') e
                                      where e.value = val) then
    return format('%s is not one of %s', path, left((schema -> 'enum')::text, 200));
  end if;
  if kind = 'object' then
    select format('%s lacks the required property %s', path, r.value::text) into problem
      from jsonb_array_elements(coalesce(schema -> 'required', '[]')) r
     where not val ? (r.value #>> '{}')
     limit 1;
    if problem is not null then
      return problem;
    end if;
    if schema -> 'additionalProperties' = 'false' then
      select format('%s has the property %s, which its schema does not list '
                    '(additionalProperties false)', path, switchyard._clip(k))
        into problem
        from jsonb_object_keys(val) k
       where not coalesce(schema -> 'properties', '{}') ? k
       limit 1;
      if problem is not null then
        return problem;
      end if;
    end if;
    for sub in select p.key, p.value from jsonb_each(coalesce(schema -> 'properties', '{}')) p
                where val ? p.key loop
      problem := switchyard._payload_problem(val -> sub.key, sub.value,
                   path || case when sub.key ~ '^[A-Za-z_][A-Za-z0-9_]*$' then '.' || sub.key
                                else format('[%s]', to_json(sub.key)::text) end);
      if problem is not null then
        return problem;
      end if;
    end loop;
  elsif kind = 'array' then
    if (schema ->> 'maxItems')::numeric < jsonb_array_length(val) then
      return format('%s has %s items, over its maxItems %s', path, jsonb_array_length(val),
                    schema ->> 'maxItems');
    end if;
    if schema ? 'items' then
      for sub in select e.value, e.n - 1 as i
                   from jsonb_array_elements(val) with ordinality e(value, n) loop
        problem := switchyard._payload_problem(sub.value, schema -> 'items',
                                               format('%s[%s]', path, sub.i));
        if problem is not null then
          return problem;
        end if;
      end loop;
    end if;
  elsif kind = 'string' then
    if (schema ->> 'maxLength')::numeric < char_length(val #>> '{}') then
      return format('%s is %s characters long, over its maxLength %s', path,
                    char_length(val #>> '{}'), schema ->> 'maxLength');
    end if;
  elsif kind = 'number' then
    if (val #>> '{}')::numeric < (schema ->> 'minimum')::numeric then
      return format('%s is %s, under its minimum %s', path, val #>> '{}', schema ->> 'minimum');
    end if;
    if (val #>> '{}')::numeric > (schema ->> 'maximum')::numeric then
      return format('%s is %s, over its maximum %s', path, val #>> '{}', schema ->> 'maximum');
    end if;
  end if;
  return null;
end
$$;
