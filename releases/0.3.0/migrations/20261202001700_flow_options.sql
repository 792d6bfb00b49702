-- Upgrades keep existing flows (docs/ARCHITECTURE.md §8.3):
--
-- 1. Shapes compare in their canonical form: every key at its value, a key a release did not
--    know at its default (0.1.0 runtimes send no step kind, conditions, whenUnmet or
--    whenExhausted; a 0.2.0 database holds such shapes). A new release never makes an existing
--    flow's shape differ.
-- 2. Runtime options (maxAttempts, baseDelay, maxDelay, timeout, startDelay) are not shape: a
--    change of options only is applied to the flow and its steps (tasks created afterwards use
--    it; tasks keep the options they were created with) and recorded in
--    switchyard.flow_option_changes. Structure (steps, order, dependencies, kinds, conditions,
--    whenUnmet, whenExhausted, queues, placement) stays strict: SY004.
-- 3. switchyard.core_version(): the release of the SQL core, which a runtime checks at start so
--    that a runtime deployed before its migrations refuses with "apply the migrations".
--
-- Safe under load: it creates one table and replaces functions; the only rows it writes are the
-- stored shapes of switchyard.flows (no lock a worker's claim or completion takes).

-- The release of this database's SQL core. A runtime refuses a database older than it needs.
create or replace function switchyard.core_version()
returns text
language sql
immutable
set search_path = ''
as $$
  select '0.3.0'::text
$$;

-- Every option a shape can carry, with the value an absent key means.
create or replace function switchyard._canonical_shape(shape jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select case
    when jsonb_typeof(shape) is distinct from 'object'
      or jsonb_typeof(shape -> 'steps') is distinct from 'array'
      or jsonb_typeof(coalesce(shape -> 'options', '{}')) <> 'object' then shape
    else shape || jsonb_build_object(
      'options', '{"maxAttempts": 3, "baseDelay": 1, "maxDelay": 86400, "timeout": 60}'::jsonb
                 || coalesce(shape -> 'options', '{}'),
      'steps', coalesce((
        select jsonb_agg(case
                 when jsonb_typeof(s) = 'object'
                  and jsonb_typeof(coalesce(s -> 'options', '{}')) = 'object' then
                   '{"kind": "single", "dependsOn": []}'::jsonb || s || jsonb_build_object(
                     'options',
                     '{"maxAttempts": null, "baseDelay": null, "maxDelay": null, "timeout": null,
                       "startDelay": 0, "if": null, "ifNot": null, "whenUnmet": "skip",
                       "whenExhausted": "fail"}'::jsonb || coalesce(s -> 'options', '{}'))
                 else s end
               order by o)
          from jsonb_array_elements(shape -> 'steps') with ordinality as e(s, o)), '[]'))
  end
$$;

-- The runtime options of a canonical shape: {"flow": {...}, "steps": {"<slug>": {...}}}.
create or replace function switchyard._shape_options(canonical jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select jsonb_build_object(
    'flow', (select coalesce(jsonb_object_agg(k, canonical -> 'options' -> k), '{}')
               from unnest(array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout']) as k
              where canonical -> 'options' ? k),
    'steps', coalesce((
      select jsonb_object_agg(s ->> 'slug', (
               select coalesce(jsonb_object_agg(k, s -> 'options' -> k), '{}')
                 from unnest(array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout',
                                   'startDelay']) as k
                where s -> 'options' ? k))
        from jsonb_array_elements(canonical -> 'steps') as e(s)
       where jsonb_typeof(s) = 'object'), '{}'))
$$;

-- A canonical shape without its runtime options: what must never change under one slug.
create or replace function switchyard._shape_structure(canonical jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select canonical || jsonb_build_object(
    'options', coalesce(canonical -> 'options', '{}')
               - array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout'],
    'steps', coalesce((
      select jsonb_agg(case when jsonb_typeof(s) = 'object' then
                 s || jsonb_build_object('options', coalesce(s -> 'options', '{}')
                   - array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout', 'startDelay'])
               else s end order by o)
        from jsonb_array_elements(canonical -> 'steps') with ordinality as e(s, o)), '[]'))
$$;

-- Sets a compiled flow's runtime options (flows and steps rows) from a canonical shape, with
-- the ranges ensure_flow has always checked. Tasks created afterwards copy them.
create or replace function switchyard._apply_flow_options(slug text, canonical jsonb)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  what text := format('flow %s option', to_json(slug));
  step jsonb;
  step_what text;
begin
  update switchyard.flows f
     set max_attempts = switchyard._int_option(canonical -> 'options', 'maxAttempts', what, 1, 1000, false),
         base_delay = switchyard._int_option(canonical -> 'options', 'baseDelay', what, 0, 86400, false),
         max_delay = coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', what, 0, 604800, true), 86400),
         timeout = switchyard._int_option(canonical -> 'options', 'timeout', what, 1, 86400, false)
   where f.flow_slug = slug;
  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    step_what := format('step %s option', to_json(step ->> 'slug'));
    update switchyard.steps st
       set max_attempts = switchyard._int_option(step -> 'options', 'maxAttempts', step_what, 1, 1000, true),
           base_delay = switchyard._int_option(step -> 'options', 'baseDelay', step_what, 0, 86400, true),
           max_delay = switchyard._int_option(step -> 'options', 'maxDelay', step_what, 0, 604800, true),
           timeout = switchyard._int_option(step -> 'options', 'timeout', step_what, 1, 86400, true),
           start_delay = coalesce(switchyard._int_option(step -> 'options', 'startDelay', step_what, 0, 86400, true), 0)
     where st.flow_slug = slug and st.step_slug = step ->> 'slug';
  end loop;
end
$$;

-- Every change of a flow's runtime options: who (session user and application name), when,
-- the options before and after, and the differences in words.
create table switchyard.flow_option_changes (
  change_id bigint generated always as identity primary key,
  flow_slug text not null references switchyard.flows on delete cascade,
  changed_at timestamptz not null default now(),
  changed_by text not null,
  application_name text,
  old_options jsonb not null,
  new_options jsonb not null,
  differences text[] not null
);
create index flow_option_changes_flow on switchyard.flow_option_changes (flow_slug, change_id);

-- The recorded option changes, newest first; of one flow when of_flow is given.
create or replace function switchyard.flow_option_history(of_flow text default null, max_rows int default 100)
returns table (
  change_id bigint, flow_slug text, changed_at timestamptz, changed_by text,
  application_name text, old_options jsonb, new_options jsonb, differences text[]
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if max_rows is null or max_rows < 1 or max_rows > 10000 then
    raise exception using errcode = '22023', message = format(
      'flow_option_history max_rows %s is invalid: use an integer from 1 to 10000',
      coalesce(max_rows::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_range', 'argument', 'max_rows', 'value', max_rows,
        'min', 1, 'max', 10000)::text;
  end if;
  return query
    select c.change_id, c.flow_slug, c.changed_at, c.changed_by, c.application_name,
           c.old_options, c.new_options, c.differences
      from switchyard.flow_option_changes c
     where of_flow is null or c.flow_slug = of_flow
     order by c.change_id desc
     limit max_rows;
end
$$;

-- Compiles or verifies a flow's shape (from 20261202001400): shapes compare canonically; a
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
  if jsonb_typeof(coalesce(shape -> 'options', '{}')) <> 'object' then
    raise exception using errcode = '22023', message = format(
      'flow %s options must be a JSON object', to_json(slug)::text),
      detail = jsonb_build_object(
        'rule', 'options_not_object', 'argument', 'options',
        'value', left((shape -> 'options')::text, 200), 'flow_slug', slug)::text;
  end if;
  if jsonb_typeof(shape -> 'steps') is distinct from 'array' or jsonb_array_length(shape -> 'steps') = 0 then
    raise exception using errcode = '22023', message = format(
      'flow %s has no steps: add at least one step', to_json(slug)::text),
      detail = jsonb_build_object(
        'rule', 'steps_missing', 'argument', 'steps',
        'value', left((shape -> 'steps')::text, 200), 'flow_slug', slug)::text;
  end if;
  canonical := switchyard._canonical_shape(shape);

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
        to_json(slug)::text, array_to_string(diffs, '; '), to_json(slug || 'V2')::text),
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

  insert into switchyard.flows (flow_slug, placement, max_attempts, base_delay, max_delay, timeout, shape)
  values (slug, placement,
    switchyard._int_option(canonical -> 'options', 'maxAttempts', format('flow %s option', to_json(slug)), 1, 1000, false),
    switchyard._int_option(canonical -> 'options', 'baseDelay', format('flow %s option', to_json(slug)), 0, 86400, false),
    coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', format('flow %s option', to_json(slug)), 0, 604800, true), 86400),
    switchyard._int_option(canonical -> 'options', 'timeout', format('flow %s option', to_json(slug)), 1, 86400, false),
    canonical);

  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    if jsonb_typeof(step) <> 'object' then
      raise exception using errcode = '22023', message = format(
        'flow %s step #%s must be a JSON object', to_json(slug)::text, i),
        detail = jsonb_build_object(
          'rule', 'step_not_object', 'argument', 'steps', 'value', left(step::text, 200),
          'flow_slug', slug)::text;
    end if;
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

    if jsonb_typeof(step -> 'dependsOn') <> 'array' then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s: dependsOn must be an array of step slugs', to_json(slug)::text, to_json(step_slug)::text),
        detail = jsonb_build_object(
          'rule', 'depends_on_not_array', 'argument', 'dependsOn',
          'value', left((step -> 'dependsOn')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    if jsonb_typeof(step -> 'options') <> 'object' then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s: options must be a JSON object', to_json(slug)::text, to_json(step_slug)::text),
        detail = jsonb_build_object(
          'rule', 'options_not_object', 'argument', 'options',
          'value', left((step -> 'options')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    -- A map step (docs/ARCHITECTURE.md §5.10) reads its array from the run input (no
    -- dependency) or from its one dependency.
    step_kind := step ->> 'kind';
    if step_kind is null or step_kind not in ('single', 'map') then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s kind %s is invalid: use single or map',
        to_json(slug)::text, to_json(step_slug)::text, (step -> 'kind')::text),
        detail = jsonb_build_object(
          'rule', 'step_kind_invalid', 'argument', 'kind', 'value', left((step -> 'kind')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    if step_kind = 'map' and jsonb_array_length(step -> 'dependsOn') > 1 then
      raise exception using errcode = '22023', message = format(
        'flow %s map step %s depends on %s steps: a map reads one array, from the flow input '
        '(no dependency) or from one step', to_json(slug)::text, to_json(step_slug)::text,
        jsonb_array_length(step -> 'dependsOn')),
        detail = jsonb_build_object(
          'rule', 'map_dependencies', 'argument', 'dependsOn',
          'value', left((step -> 'dependsOn')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    -- Runtime options are set below by _apply_flow_options, with their ranges.
    insert into switchyard.steps (flow_slug, step_slug, step_index, queue_name, deps_count,
                                  step_type, cond_if, cond_if_not, when_unmet, when_exhausted)
    values (slug, step_slug, i, step_queue, jsonb_array_length(step -> 'dependsOn'),
      step_kind,
      -- Conditions are JSON patterns for @> (docs/ARCHITECTURE.md §5.9); JSON null means none.
      nullif(step -> 'options' -> 'if', 'null'::jsonb),
      nullif(step -> 'options' -> 'ifNot', 'null'::jsonb),
      switchyard._choice_option(step -> 'options', 'whenUnmet', format('step %s option', to_json(step_slug)),
                                array['skip', 'skip-cascade', 'fail'], 'skip'),
      switchyard._choice_option(step -> 'options', 'whenExhausted', format('step %s option', to_json(step_slug)),
                                array['fail', 'skip', 'skip-cascade'], 'fail'));

    deps_seen := '{}';
    for dep in select value from jsonb_array_elements(step -> 'dependsOn') loop
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
  perform switchyard._apply_flow_options(slug, canonical);
  return 'created';
end
$$;

-- Stored shapes in their canonical form (shapes compiled by a 0.1.0 runtime lack the keys
-- 0.2.0 added). Only rows that differ are written.
update switchyard.flows f
   set shape = switchyard._canonical_shape(f.shape)
 where f.shape is distinct from switchyard._canonical_shape(f.shape);

-- Privileges as in the grants migration: nothing for PUBLIC, anon or authenticated; the service
-- role may read the core version and the option history.
revoke all on switchyard.flow_option_changes from public;
revoke execute on function
  switchyard.core_version(),
  switchyard._canonical_shape(jsonb),
  switchyard._shape_options(jsonb),
  switchyard._shape_structure(jsonb),
  switchyard._apply_flow_options(text, jsonb),
  switchyard.flow_option_history(text, int)
from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke all on switchyard.flow_option_changes from %I', role_name);
      execute format('revoke execute on function switchyard.core_version(), '
                     'switchyard.flow_option_history(text, int) from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant select on switchyard.flow_option_changes to service_role;
    grant execute on function switchyard.core_version(), switchyard.flow_option_history(text, int)
      to service_role;
  end if;
end
$$;
