-- Compile an absent flow from its shape, or verify that an existing flow has
-- exactly that shape. Routing is immutable for one concrete slug: any difference
-- is an error that lists it; nothing is recompiled and no data is lost.

create or replace function switchyard._int_option(
  obj jsonb, key text, what text, min_value int, max_value int, nullable boolean
)
returns int
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    if nullable then
      return null;
    end if;
    raise exception using errcode = '22023', message = format('%s %s is missing', what, key),
      detail = jsonb_build_object(
        'rule', 'option_missing', 'argument', key, 'value', null, 'context', what)::text;
  end if;
  if jsonb_typeof(v) <> 'number' or (v::text)::numeric <> trunc((v::text)::numeric)
     or (v::text)::numeric < min_value or (v::text)::numeric > max_value then
    raise exception using errcode = '22023', message = format(
      '%s %s %s is invalid: use an integer from %s to %s', what, key, v::text, min_value, max_value),
      detail = jsonb_build_object(
        'rule', 'integer_range', 'argument', key, 'value', left(v::text, 200),
        'min', min_value, 'max', max_value, 'context', what)::text;
  end if;
  return (v::text)::int;
end
$$;

-- Readable differences between a compiled shape and a requested one.
create or replace function switchyard._shape_diff(old_shape jsonb, new_shape jsonb)
returns text[]
language plpgsql
immutable
set search_path = ''
as $$
declare
  diffs text[] := '{}';
  i int;
  o jsonb;
  n jsonb;
  k text;
  old_count int := jsonb_array_length(old_shape -> 'steps');
  new_count int := jsonb_array_length(new_shape -> 'steps');
begin
  if old_shape -> 'placement' is distinct from new_shape -> 'placement' then
    diffs := diffs || format('placement %s -> %s', old_shape -> 'placement', new_shape -> 'placement');
  end if;
  for k in select jsonb_object_keys(coalesce(old_shape -> 'options', '{}') || coalesce(new_shape -> 'options', '{}')) loop
    if old_shape -> 'options' -> k is distinct from new_shape -> 'options' -> k then
      diffs := diffs || format('flow option %s %s -> %s', k,
        coalesce((old_shape -> 'options' -> k)::text, 'absent'), coalesce((new_shape -> 'options' -> k)::text, 'absent'));
    end if;
  end loop;
  if old_count <> new_count then
    diffs := diffs || format('step count %s -> %s', old_count, new_count);
  end if;
  for i in 0 .. greatest(old_count, new_count) - 1 loop
    o := old_shape -> 'steps' -> i;
    n := new_shape -> 'steps' -> i;
    if o is null then
      diffs := diffs || format('step %s added', n -> 'slug');
    elsif n is null then
      diffs := diffs || format('step %s removed', o -> 'slug');
    elsif o -> 'slug' is distinct from n -> 'slug' then
      diffs := diffs || format('step #%s %s -> %s', i, o -> 'slug', n -> 'slug');
    else
      if o -> 'queue' is distinct from n -> 'queue' then
        diffs := diffs || format('step %s queue %s -> %s', o -> 'slug', o -> 'queue', n -> 'queue');
      end if;
      if o -> 'dependsOn' is distinct from n -> 'dependsOn' then
        diffs := diffs || format('step %s dependsOn %s -> %s', o -> 'slug', o -> 'dependsOn', n -> 'dependsOn');
      end if;
      for k in select jsonb_object_keys(coalesce(o -> 'options', '{}') || coalesce(n -> 'options', '{}')) loop
        if o -> 'options' -> k is distinct from n -> 'options' -> k then
          diffs := diffs || format('step %s option %s %s -> %s', o -> 'slug', k,
            coalesce((o -> 'options' -> k)::text, 'absent'), coalesce((n -> 'options' -> k)::text, 'absent'));
        end if;
      end loop;
    end if;
  end loop;
  if cardinality(diffs) = 0 and old_shape is distinct from new_shape then
    diffs := diffs || 'shape documents differ'::text;
  end if;
  return diffs;
end
$$;

create or replace function switchyard.ensure_flow(shape jsonb)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  slug text;
  placement text;
  existing switchyard.flows;
  flow_max_attempts int;
  flow_base_delay int;
  flow_max_delay int;
  flow_timeout int;
  step jsonb;
  step_slug text;
  step_queue text;
  expected_queue text;
  dep jsonb;
  seen_steps text[] := '{}';
  deps_seen text[];
  diffs text[];
  i int := 0;
begin
  if shape is null or jsonb_typeof(shape) <> 'object' then
    raise exception using errcode = '22023', message = 'flow shape must be a JSON object',
      detail = jsonb_build_object(
        'rule', 'shape_not_object', 'argument', 'shape', 'value', left(shape::text, 200))::text;
  end if;
  slug := switchyard.assert_slug('flow', shape ->> 'slug');
  placement := shape ->> 'placement';
  if placement is null or placement not in ('plain', 'step_queues', 'routed') then
    raise exception using errcode = '22023', message = format(
      'flow %s placement %s is invalid: use plain, step_queues or routed',
      to_json(slug)::text, coalesce(shape -> 'placement', 'null'::jsonb)::text),
      detail = jsonb_build_object(
        'rule', 'placement_invalid', 'argument', 'placement',
        'value', left(shape ->> 'placement', 200), 'flow_slug', slug)::text;
  end if;

  -- Concurrent workers compiling the same flow serialize here.
  perform pg_advisory_xact_lock(hashtextextended('switchyard.flow:' || lower(slug), 0));

  select * into existing from switchyard.flows f where lower(f.flow_slug) = lower(slug);
  if found then
    if existing.flow_slug <> slug then
      raise exception using errcode = '23505', message = format(
        'flow slug %s collides with compiled flow %s: slugs are unique case-insensitively',
        to_json(slug)::text, to_json(existing.flow_slug)::text),
        detail = jsonb_build_object(
          'rule', 'flow_slug_case_collision', 'argument', 'flow_slug', 'value', slug,
          'existing_flow_slug', existing.flow_slug)::text;
    end if;
    if existing.shape = shape then
      return 'verified';
    end if;
    diffs := switchyard._shape_diff(existing.shape, shape);
    raise exception using errcode = 'SY004', message = format(
      'flow %s is already compiled with a different shape (%s); a concrete flow never changes: '
      'deploy the change under a new slug (for example %s)',
      to_json(slug)::text, array_to_string(diffs, '; '), to_json(slug || 'V2')::text),
      detail = jsonb_build_object(
        'flow_slug', slug,
        'differences', (select jsonb_agg(left(d, 200) order by o)
                          from unnest(diffs) with ordinality as x(d, o)))::text;
  end if;

  flow_max_attempts := switchyard._int_option(shape -> 'options', 'maxAttempts', format('flow %s option', to_json(slug)), 1, 1000, false);
  flow_base_delay := switchyard._int_option(shape -> 'options', 'baseDelay', format('flow %s option', to_json(slug)), 0, 86400, false);
  -- maxDelay caps the retry delay (fail_task); a shape written without it gets 86400 s.
  flow_max_delay := coalesce(switchyard._int_option(shape -> 'options', 'maxDelay', format('flow %s option', to_json(slug)), 0, 604800, true), 86400);
  flow_timeout := switchyard._int_option(shape -> 'options', 'timeout', format('flow %s option', to_json(slug)), 1, 86400, false);
  if jsonb_typeof(shape -> 'steps') is distinct from 'array' or jsonb_array_length(shape -> 'steps') = 0 then
    raise exception using errcode = '22023', message = format(
      'flow %s has no steps: add at least one step', to_json(slug)::text),
      detail = jsonb_build_object(
        'rule', 'steps_missing', 'argument', 'steps',
        'value', left((shape -> 'steps')::text, 200), 'flow_slug', slug)::text;
  end if;

  insert into switchyard.flows (flow_slug, placement, max_attempts, base_delay, max_delay, timeout, shape)
  values (slug, placement, flow_max_attempts, flow_base_delay, flow_max_delay, flow_timeout, shape);

  for step in select value from jsonb_array_elements(shape -> 'steps') loop
    step_slug := switchyard.assert_slug('step', step ->> 'slug');
    if lower(step_slug) = any (select lower(s) from unnest(seen_steps) s) then
      raise exception using errcode = '22023', message = format(
        'flow %s lists step %s twice: step slugs are unique case-insensitively',
        to_json(slug)::text, to_json(step_slug)::text),
        detail = jsonb_build_object(
          'rule', 'step_slug_duplicate', 'argument', 'step_slug', 'value', step_slug,
          'flow_slug', slug)::text;
    end if;
    if (step -> 'index') is distinct from to_jsonb(i) then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s has index %s: steps must be listed in index order from 0',
        to_json(slug)::text, to_json(step_slug)::text, coalesce(step -> 'index', 'null'::jsonb)),
        detail = jsonb_build_object(
          'rule', 'step_index_order', 'argument', 'index',
          'value', left((step -> 'index')::text, 200), 'expected', i,
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    step_queue := step ->> 'queue';
    if placement = 'plain' then
      expected_queue := lower(slug);
    elsif placement = 'step_queues' then
      expected_queue := switchyard.step_queue_name(slug, step_slug, i);
    else
      expected_queue := null;
    end if;
    if expected_queue is not null and step_queue is distinct from expected_queue then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s: a %s flow must use queue %s, not %s',
        to_json(slug)::text, to_json(step_slug)::text, placement, to_json(expected_queue)::text,
        coalesce(to_json(step_queue)::text, 'null')),
        detail = jsonb_build_object(
          'rule', 'placement_queue', 'argument', 'queue', 'value', left(step_queue, 200),
          'expected', expected_queue, 'placement', placement,
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    if placement = 'routed' then
      perform switchyard.ensure_shared_queue(step_queue);
    else
      perform switchyard._ensure_private_queue(step_queue, slug);
    end if;

    if jsonb_typeof(coalesce(step -> 'dependsOn', '[]')) <> 'array' then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s: dependsOn must be an array of step slugs', to_json(slug)::text, to_json(step_slug)::text),
        detail = jsonb_build_object(
          'rule', 'depends_on_not_array', 'argument', 'dependsOn',
          'value', left((step -> 'dependsOn')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    insert into switchyard.steps (flow_slug, step_slug, step_index, queue_name, deps_count,
                                  max_attempts, base_delay, max_delay, timeout, start_delay)
    values (slug, step_slug, i, step_queue, jsonb_array_length(coalesce(step -> 'dependsOn', '[]')),
      switchyard._int_option(step -> 'options', 'maxAttempts', format('step %s option', to_json(step_slug)), 1, 1000, true),
      switchyard._int_option(step -> 'options', 'baseDelay', format('step %s option', to_json(step_slug)), 0, 86400, true),
      switchyard._int_option(step -> 'options', 'maxDelay', format('step %s option', to_json(step_slug)), 0, 604800, true),
      switchyard._int_option(step -> 'options', 'timeout', format('step %s option', to_json(step_slug)), 1, 86400, true),
      coalesce(switchyard._int_option(step -> 'options', 'startDelay', format('step %s option', to_json(step_slug)), 0, 86400, true), 0));

    deps_seen := '{}';
    for dep in select value from jsonb_array_elements(coalesce(step -> 'dependsOn', '[]')) loop
      if jsonb_typeof(dep) <> 'string' or not ((dep #>> '{}') = any (seen_steps)) then
        raise exception using errcode = '22023', message = format(
          'flow %s step %s depends on %s, which is not an earlier step of the flow',
          to_json(slug)::text, to_json(step_slug)::text, dep::text),
          detail = jsonb_build_object(
            'rule', 'dependency_not_earlier_step', 'argument', 'dependsOn',
            'value', left(coalesce(dep #>> '{}', dep::text), 200),
            'flow_slug', slug, 'step_slug', step_slug)::text;
      end if;
      if (dep #>> '{}') = any (deps_seen) then
        raise exception using errcode = '22023', message = format(
          'flow %s step %s lists dependency %s twice', to_json(slug)::text, to_json(step_slug)::text, dep::text),
          detail = jsonb_build_object(
            'rule', 'dependency_duplicate', 'argument', 'dependsOn',
            'value', left(dep #>> '{}', 200), 'flow_slug', slug, 'step_slug', step_slug)::text;
      end if;
      deps_seen := deps_seen || (dep #>> '{}');
      insert into switchyard.deps (flow_slug, dep_slug, step_slug) values (slug, dep #>> '{}', step_slug);
    end loop;
    seen_steps := seen_steps || step_slug;
    i := i + 1;
  end loop;
  return 'created';
end
$$;
