-- What is wrong with a declared payload schema (user_signal_steps.payload_schema, its check
-- constraint), or null: the subset of JSON Schema that _payload_problem checks. A schema is an
-- object of the keywords type (object, array, string, number, integer, boolean, null, or an
-- array of them), enum (an array of values), properties (an object of schemas), required (an
-- array of names), additionalProperties (a boolean), items (a schema), maxLength and maxItems
-- (integers >= 0), minimum and maximum (numbers). Any other keyword is refused: a typo would
-- otherwise check nothing.
create or replace function switchyard._payload_schema_problem(
  schema jsonb, path text default 'schema'
)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  types constant text[] := array['object', 'array', 'string', 'number', 'integer', 'boolean',
                                 'null'];
  keyword text;
  sub record;
  problem text;
begin
  if jsonb_typeof(schema) is distinct from 'object' then
    return format('%s is a %s: a schema is a JSON object of keywords', path,
                  coalesce(jsonb_typeof(schema), 'SQL null'));
  end if;
  for keyword in select k from jsonb_object_keys(schema) k loop
    if keyword not in ('type', 'enum', 'properties', 'required', 'additionalProperties', 'items',
                       'maxLength', 'maxItems', 'minimum', 'maximum') then
      return format('%s has the keyword %s, which is not checked: use type, enum, properties, '
                    'required, additionalProperties, items, maxLength, maxItems, minimum or '
                    'maximum', path, to_json(keyword)::text);
    end if;
  end loop;
  if schema ? 'type' and not (
       (jsonb_typeof(schema -> 'type') = 'string' and schema ->> 'type' = any (types))
       or (jsonb_typeof(schema -> 'type') = 'array' and jsonb_array_length(schema -> 'type') > 0
           and not exists (select 1 from jsonb_array_elements(schema -> 'type') t
                            where jsonb_typeof(t.value) <> 'string'
                               or t.value #>> '{}' <> all (types)))) then
    return format('%s.type is invalid: use one of %s, or an array of them', path,
                  array_to_string(types, ', '));
  end if;
  if schema ? 'enum' and jsonb_typeof(schema -> 'enum') <> 'array' then
    return format('%s.enum is invalid: use an array of the values allowed', path);
  end if;
  if schema ? 'required' and (jsonb_typeof(schema -> 'required') <> 'array'
       or exists (select 1 from jsonb_array_elements(schema -> 'required') r
                   where jsonb_typeof(r.value) <> 'string')) then
    return format('%s.required is invalid: use an array of property names', path);
  end if;
  if schema ? 'additionalProperties'
     and jsonb_typeof(schema -> 'additionalProperties') <> 'boolean' then
    return format('%s.additionalProperties is invalid: use true or false', path);
  end if;
  for keyword in select k from unnest(array['maxLength', 'maxItems']) k where schema ? k loop
    if jsonb_typeof(schema -> keyword) <> 'number' or (schema ->> keyword)::numeric < 0
       or (schema ->> keyword)::numeric <> trunc((schema ->> keyword)::numeric) then
      return format('%s.%s is invalid: use an integer >= 0', path, keyword);
    end if;
  end loop;
  for keyword in select k from unnest(array['minimum', 'maximum']) k where schema ? k loop
    if jsonb_typeof(schema -> keyword) <> 'number' then
      return format('%s.%s is invalid: use a number', path, keyword);
    end if;
  end loop;
  if schema ? 'properties' then
    if jsonb_typeof(schema -> 'properties') <> 'object' then
      return format('%s.properties is invalid: use an object of schemas by property name', path);
    end if;
    for sub in select p.key, p.value from jsonb_each(schema -> 'properties') p loop
      problem := switchyard._payload_schema_problem(sub.value,
                                                     format('%s.properties.%s', path, sub.key));
      if problem is not null then
        return problem;
      end if;
    end loop;
  end if;
  if schema ? 'items' then
    return switchyard._payload_schema_problem(schema -> 'items', path || '.items');
  end if;
  return null;
end
$$;
