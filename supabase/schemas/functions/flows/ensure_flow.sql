-- Compiles or verifies a flow's shape
-- (docs/design/worker.md#compiling-at-deploy-and-in-local-development,
-- docs/design/testing.md#upgrades-with-work-in-flight): shapes compare canonically; a
-- change of runtime options only is applied and recorded ('updated'); any other change is
-- SY004. New flows store their canonical shape.
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
  canonical jsonb;
  existing_canonical jsonb;
  step jsonb;
  step_slug text;
  step_queue text;
  step_kind text;
  expected_queue text;
  sleep_until jsonb;
  dep jsonb;
  seen_steps text[] := '{}';
  deps_seen text[];
  diffs text[];
  i int := 0;
begin
  if shape is null or jsonb_typeof(shape) <> 'object' then
    perform switchyard._refuse('22023', 'shape_not_object', 'shape', shape::text,
      'flow shape must be a JSON object');
  end if;
  slug := switchyard.assert_slug('flow', shape ->> 'slug');
  placement := shape ->> 'placement';
  if placement is null or placement not in ('plain', 'step_queues', 'routed') then
    perform switchyard._refuse('22023', 'placement_invalid', 'placement', shape ->> 'placement',
      format(
      'flow %s placement %s is invalid: use plain, step_queues or routed',
      to_json(slug)::text, coalesce(shape -> 'placement', 'null'::jsonb)::text),
      context => jsonb_build_object('flow_slug', slug));
  end if;
  if jsonb_typeof(coalesce(shape -> 'options', '{}')) <> 'object' then
    perform switchyard._refuse('22023', 'options_not_object', 'options', (shape -> 'options')::text,
      format(
      'flow %s options must be a JSON object', to_json(slug)::text),
      context => jsonb_build_object('flow_slug', slug));
  end if;
  if jsonb_typeof(shape -> 'steps') is distinct from 'array' or jsonb_array_length(shape -> 'steps') = 0 then
    perform switchyard._refuse('22023', 'steps_missing', 'steps', (shape -> 'steps')::text, format(
      'flow %s has no steps: add at least one step', to_json(slug)::text),
      context => jsonb_build_object('flow_slug', slug));
  end if;
  canonical := switchyard._canonical_shape(shape);

  -- Concurrent workers compiling the same flow serialize here.
  perform pg_advisory_xact_lock(hashtextextended('switchyard.flow:' || lower(slug), 0));

  select * into existing from switchyard.flows f where lower(f.flow_slug) = lower(slug);
  if found then
    if existing.flow_slug <> slug then
      perform switchyard._refuse('23505', 'flow_slug_case_collision', 'flow_slug', slug, format(
        'flow slug %s collides with compiled flow %s: slugs are unique case-insensitively',
        to_json(slug)::text, to_json(existing.flow_slug)::text),
        context => jsonb_build_object('existing_flow_slug', existing.flow_slug));
    end if;
    existing_canonical := switchyard._canonical_shape(existing.shape);
    if existing_canonical = canonical then
      return 'verified';
    end if;
    if switchyard._shape_structure(existing_canonical) is distinct from switchyard._shape_structure(canonical) then
      diffs := switchyard._shape_diff(switchyard._shape_structure(existing_canonical),
                                      switchyard._shape_structure(canonical));
      raise exception using errcode = 'SY004', message = format(
        'flow %s is already compiled with a different shape (%s); the steps, dependencies, '
        'kinds, conditions and queues of a concrete flow never change (its runtime options '
        'may): deploy the change under a new slug (for example %s)',
        to_json(slug)::text, array_to_string(diffs, '; '), to_json(switchyard._next_flow_slug(slug))::text),
        detail = jsonb_build_object(
          'flow_slug', slug,
          'differences', (select jsonb_agg(left(d, 200) order by o)
                            from unnest(diffs) with ordinality as x(d, o)))::text;
    end if;
    -- Runtime options only: applied for tasks created from now on, and recorded.
    diffs := switchyard._shape_diff(existing_canonical, canonical);
    perform switchyard._apply_flow_options(slug, canonical);
    update switchyard.flows f set shape = canonical where f.flow_slug = slug;
    insert into switchyard.flow_option_changes
      (flow_slug, changed_by, application_name, old_options, new_options, differences)
    values (slug, session_user, nullif(current_setting('application_name', true), ''),
            switchyard._shape_options(existing_canonical), switchyard._shape_options(canonical),
            diffs);
    return 'updated';
  end if;

  insert into switchyard.flows (flow_slug, placement, max_attempts, base_delay, max_delay, timeout, shape,
                                run_timeout, events)
  values (slug, placement,
    switchyard._int_option(canonical -> 'options', 'maxAttempts', format('flow %s option', to_json(slug)), 1, 1000, false),
    switchyard._int_option(canonical -> 'options', 'baseDelay', format('flow %s option', to_json(slug)), 0, 86400, false),
    coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', format('flow %s option', to_json(slug)), 0, 604800, true), 86400),
    switchyard._int_option(canonical -> 'options', 'timeout', format('flow %s option', to_json(slug)), 1, 86400, false),
    canonical,
    switchyard._int_option(canonical -> 'options', 'runTimeout', format('flow %s option', to_json(slug)), 1, 31536000, true),
    switchyard._bool_option(canonical -> 'options', 'events', format('flow %s option', to_json(slug)), true));

  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    if jsonb_typeof(step) <> 'object' then
      perform switchyard._refuse('22023', 'step_not_object', 'steps', step::text, format(
        'flow %s step #%s must be a JSON object', to_json(slug)::text, i),
        context => jsonb_build_object('flow_slug', slug));
    end if;
    step_slug := switchyard.assert_slug('step', step ->> 'slug');
    if lower(step_slug) = any (select lower(s) from unnest(seen_steps) s) then
      perform switchyard._refuse('22023', 'step_slug_duplicate', 'step_slug', step_slug, format(
        'flow %s lists step %s twice: step slugs are unique case-insensitively',
        to_json(slug)::text, to_json(step_slug)::text),
        context => jsonb_build_object('flow_slug', slug));
    end if;
    if (step -> 'index') is distinct from to_jsonb(i) then
      perform switchyard._refuse('22023', 'step_index_order', 'index', (step -> 'index')::text,
        format(
        'flow %s step %s has index %s: steps must be listed in index order from 0',
        to_json(slug)::text, to_json(step_slug)::text, coalesce(step -> 'index', 'null'::jsonb)),
        context => jsonb_build_object('expected', i, 'flow_slug', slug, 'step_slug', step_slug));
    end if;
    step_queue := step ->> 'queue';
    step_kind := step ->> 'kind';
    if step_kind in ('wait', 'sleep', 'flow') then
      -- A wait, sleep or flow step (docs/design/waits.md) has no task, so no queue.
      if step_queue is not null then
        perform switchyard._refuse('22023', 'wait_queue', 'queue', step_queue, format(
          'flow %s step %s: a %s step uses no queue, not %s',
          to_json(slug)::text, to_json(step_slug)::text, step_kind, to_json(step_queue)::text),
          context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
      end if;
      expected_queue := null;
    elsif placement = 'plain' then
      expected_queue := lower(slug);
    elsif placement = 'step_queues' then
      expected_queue := switchyard.step_queue_name(slug, step_slug, i);
    else
      expected_queue := null;
    end if;
    if expected_queue is not null and step_queue is distinct from expected_queue then
      perform switchyard._refuse('22023', 'placement_queue', 'queue', step_queue, format(
        'flow %s step %s: a %s flow must use queue %s, not %s',
        to_json(slug)::text, to_json(step_slug)::text, placement, to_json(expected_queue)::text,
        coalesce(to_json(step_queue)::text, 'null')),
        context => jsonb_build_object('expected', expected_queue, 'placement', placement,
          'flow_slug', slug, 'step_slug', step_slug));
    end if;
    if step_kind in ('wait', 'sleep', 'flow') then
      null;
    elsif placement = 'routed' then
      perform switchyard.ensure_shared_queue(step_queue);
    else
      perform switchyard._ensure_private_queue(step_queue, slug);
    end if;

    if jsonb_typeof(step -> 'dependsOn') <> 'array' then
      perform switchyard._refuse('22023', 'depends_on_not_array', 'dependsOn',
        (step -> 'dependsOn')::text, format(
        'flow %s step %s: dependsOn must be an array of step slugs', to_json(slug)::text, to_json(step_slug)::text),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    if jsonb_typeof(step -> 'options') <> 'object' then
      perform switchyard._refuse('22023', 'options_not_object', 'options',
        (step -> 'options')::text, format(
        'flow %s step %s: options must be a JSON object', to_json(slug)::text, to_json(step_slug)::text),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    -- A map step (docs/design/runs.md#map-steps) reads its array from the run input (no
    -- dependency) or from its one dependency.
    if step_kind is null or step_kind not in ('single', 'map', 'wait', 'sleep', 'flow') then
      perform switchyard._refuse('22023', 'step_kind_invalid', 'kind', (step -> 'kind')::text,
        format(
        'flow %s step %s kind %s is invalid: use single, map, wait, sleep or flow',
        to_json(slug)::text, to_json(step_slug)::text, (step -> 'kind')::text),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    if step_kind = 'map' and jsonb_array_length(step -> 'dependsOn') > 1 then
      perform switchyard._refuse('22023', 'map_dependencies', 'dependsOn',
        (step -> 'dependsOn')::text, format(
        'flow %s map step %s depends on %s steps: a map reads one array, from the flow input '
        '(no dependency) or from one step', to_json(slug)::text, to_json(step_slug)::text,
        jsonb_array_length(step -> 'dependsOn')),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    -- A sleep until a time read from the input (docs/design/waits.md): a path of 1 to
    -- 8 keys and the input it is read from, instead of a length in seconds.
    sleep_until := nullif(step -> 'options' -> 'sleepUntil', 'null'::jsonb);
    if sleep_until is not null and (step_kind <> 'sleep' or jsonb_typeof(sleep_until) <> 'object'
        or jsonb_typeof(sleep_until -> 'key') is distinct from 'array'
        or jsonb_array_length(sleep_until -> 'key') not between 1 and 8
        or exists (select 1 from jsonb_array_elements(sleep_until -> 'key') k
                    where jsonb_typeof(k) <> 'string' or k #>> '{}' = '')
        or coalesce(sleep_until ->> 'input', 'run') not in ('run', 'step')
        or (sleep_until - array['key', 'input']) <> '{}'::jsonb
        or nullif(step -> 'options' -> 'waitTimeout', 'null'::jsonb) is not null) then
      perform switchyard._refuse('22023', 'sleep_until_invalid', 'sleepUntil', sleep_until::text,
        format(
        'flow %s step %s sleepUntil %s is invalid: a sleep step takes {"key": [1 to 8 keys], '
        '"input": "run" or "step"} instead of a waitTimeout (no other kind takes one)',
        to_json(slug)::text, to_json(step_slug)::text, left(sleep_until::text, 200)),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    -- Runtime options are set below by _apply_flow_options, with their ranges.
    insert into switchyard.steps (flow_slug, step_slug, step_index, queue_name, deps_count,
                                  step_type, cond_if, cond_if_not, when_unmet, when_exhausted,
                                  wait_timeout, on_timeout, child_alias, sleep_until,
                                  sleep_until_input)
    values (slug, step_slug, i, step_queue, jsonb_array_length(step -> 'dependsOn'),
      step_kind,
      -- Conditions are JSON patterns for @> (docs/design/runs.md#ready-steps-conditions-and-skips);
      -- JSON null means none.
      nullif(step -> 'options' -> 'if', 'null'::jsonb),
      nullif(step -> 'options' -> 'ifNot', 'null'::jsonb),
      switchyard._choice_option(step -> 'options', 'whenUnmet', format('step %s option', to_json(step_slug)),
                                array['skip', 'skip-cascade', 'fail'], 'skip'),
      switchyard._choice_option(step -> 'options', 'whenExhausted', format('step %s option', to_json(step_slug)),
                                array['fail', 'skip', 'skip-cascade', 'pause'], 'fail'),
      -- A wait's timeout (none: null) and what it does; a sleep's length, required unless it
      -- sleeps until a time.
      switchyard._int_option(step -> 'options', 'waitTimeout', format('step %s option', to_json(step_slug)),
                             1, 31536000, step_kind <> 'sleep' or sleep_until is not null),
      switchyard._choice_option(step -> 'options', 'onTimeout', format('step %s option', to_json(step_slug)),
                                array['fail', 'skip'], 'fail'),
      -- A flow step's alias (checked as an alias slug; it need not exist yet).
      case when step_kind = 'flow'
           then switchyard.assert_slug('alias', step -> 'options' ->> 'childAlias') end,
      case when sleep_until is not null then
        array(select k #>> '{}' from jsonb_array_elements(sleep_until -> 'key') with ordinality e(k, o)
               order by o) end,
      case when sleep_until is not null then coalesce(sleep_until ->> 'input', 'run') end);

    deps_seen := '{}';
    for dep in select value from jsonb_array_elements(step -> 'dependsOn') loop
      if jsonb_typeof(dep) <> 'string' or not ((dep #>> '{}') = any (seen_steps)) then
        perform switchyard._refuse('22023', 'dependency_not_earlier_step', 'dependsOn',
          coalesce(dep #>> '{}', dep::text), format(
          'flow %s step %s depends on %s, which is not an earlier step of the flow',
          to_json(slug)::text, to_json(step_slug)::text, dep::text),
          context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
      end if;
      if (dep #>> '{}') = any (deps_seen) then
        perform switchyard._refuse('22023', 'dependency_duplicate', 'dependsOn', dep #>> '{}',
          format(
          'flow %s step %s lists dependency %s twice', to_json(slug)::text, to_json(step_slug)::text, dep::text),
          context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
      end if;
      deps_seen := deps_seen || (dep #>> '{}');
      insert into switchyard.deps (flow_slug, dep_slug, step_slug) values (slug, dep #>> '{}', step_slug);
    end loop;
    seen_steps := seen_steps || step_slug;
    i := i + 1;
  end loop;
  perform switchyard._apply_flow_options(slug, canonical);
  return 'created';
end
$$;
