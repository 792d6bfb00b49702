-- Queue and slug rules (docs/ARCHITECTURE.md §2), checked again in SQL so that no caller
-- can register a name the TypeScript layer would refuse.

-- Canonical queue name: ^[a-z][a-z0-9_]*$, at most 47 characters (PGMQ's limit:
-- its tables are q_<name>/a_<name> and index names add prefixes under 63 bytes).
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
        '(^[a-z][a-z0-9_]*$, at most 47 characters)', to_json(name)::text)
    when explicit and position('__' in name) > 0 then
      format('queue name %s is invalid: explicit queue names must not contain "__" '
        '(reserved for generated private step queues)', to_json(name)::text)
    else null
  end
$$;

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

-- Flow and step slugs: a letter first, then letters, digits and single underscores.
create or replace function switchyard.assert_slug(kind text, slug text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  if slug is null or slug !~ '^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$' or length(slug) > 47 then
    raise exception using errcode = '22023', message = format(
      '%s slug %s is invalid: start with a letter, then letters, digits and single underscores '
      '(at most 47 characters)', kind, coalesce(to_json(slug)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'slug_format',
        'argument', case kind when 'alias' then 'alias_name' else kind || '_slug' end,
        'value', left(slug, 200), 'kind', kind)::text;
  end if;
  if kind = 'step' and lower(slug) = 'run' then
    raise exception using errcode = '22023', message = format(
      'step slug %s is invalid: "run" is reserved', to_json(slug)::text),
      detail = jsonb_build_object(
        'rule', 'step_slug_reserved', 'argument', 'step_slug', 'value', left(slug, 200))::text;
  end if;
  return slug;
end
$$;

-- withStepQueues() placement: lower(flow__step) when it fits, else lower(flow__<index>).
create or replace function switchyard.step_queue_name(flow_slug text, step_slug text, step_index int)
returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  if length(flow_slug) + 2 + length(step_slug) <= 47 then
    return lower(flow_slug || '__' || step_slug);
  elsif length(flow_slug) + 2 + length(step_index::text) <= 47 then
    return lower(flow_slug || '__' || step_index::text);
  end if;
  raise exception using errcode = '22023', message = format(
    'no private queue name fits for step %s of flow %s: both %s and %s exceed 47 characters',
    to_json(step_slug)::text, to_json(flow_slug)::text,
    to_json(lower(flow_slug || '__' || step_slug))::text,
    to_json(lower(flow_slug || '__' || step_index::text))::text),
    detail = jsonb_build_object(
      'rule', 'private_queue_name_too_long', 'argument', 'step_slug',
      'value', left(step_slug, 200), 'flow_slug', left(flow_slug, 200),
      'step_index', step_index)::text;
end
$$;
