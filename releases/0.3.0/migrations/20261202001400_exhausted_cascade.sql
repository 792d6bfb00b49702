-- whenExhausted 'skip-cascade' (docs/ARCHITECTURE.md §5.9): a task out of attempts skips its
-- step and, as whenUnmet 'skip-cascade' does, every step that depends on it, transitively; the
-- run goes on without them. ensure_flow (from 20261202000700) accepts the value, and
-- _exhaust_task (from 20261202000700) cascades; nothing else changes.

alter table switchyard.steps
  drop constraint steps_when_exhausted_check,
  add constraint steps_when_exhausted_check
    check (when_exhausted in ('fail', 'skip', 'skip-cascade'));

-- Compiles a flow's shape (20261202000700), with 'skip-cascade' among the whenExhausted values.
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
    -- A map step (docs/ARCHITECTURE.md §5.10) reads its array from the run input (no
    -- dependency) or from its one dependency.
    step_kind := coalesce(step ->> 'kind', 'single');
    if step_kind not in ('single', 'map') then
      raise exception using errcode = '22023', message = format(
        'flow %s step %s kind %s is invalid: use single or map',
        to_json(slug)::text, to_json(step_slug)::text, (step -> 'kind')::text),
        detail = jsonb_build_object(
          'rule', 'step_kind_invalid', 'argument', 'kind', 'value', left((step -> 'kind')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    if step_kind = 'map' and jsonb_array_length(coalesce(step -> 'dependsOn', '[]')) > 1 then
      raise exception using errcode = '22023', message = format(
        'flow %s map step %s depends on %s steps: a map reads one array, from the flow input '
        '(no dependency) or from one step', to_json(slug)::text, to_json(step_slug)::text,
        jsonb_array_length(step -> 'dependsOn')),
        detail = jsonb_build_object(
          'rule', 'map_dependencies', 'argument', 'dependsOn',
          'value', left((step -> 'dependsOn')::text, 200),
          'flow_slug', slug, 'step_slug', step_slug)::text;
    end if;
    insert into switchyard.steps (flow_slug, step_slug, step_index, queue_name, deps_count,
                                  step_type, max_attempts, base_delay, max_delay, timeout,
                                  start_delay, cond_if, cond_if_not, when_unmet, when_exhausted)
    values (slug, step_slug, i, step_queue, jsonb_array_length(coalesce(step -> 'dependsOn', '[]')),
      step_kind,
      switchyard._int_option(step -> 'options', 'maxAttempts', format('step %s option', to_json(step_slug)), 1, 1000, true),
      switchyard._int_option(step -> 'options', 'baseDelay', format('step %s option', to_json(step_slug)), 0, 86400, true),
      switchyard._int_option(step -> 'options', 'maxDelay', format('step %s option', to_json(step_slug)), 0, 604800, true),
      switchyard._int_option(step -> 'options', 'timeout', format('step %s option', to_json(step_slug)), 1, 86400, true),
      coalesce(switchyard._int_option(step -> 'options', 'startDelay', format('step %s option', to_json(step_slug)), 0, 86400, true), 0),
      -- Conditions are JSON patterns for @> (docs/ARCHITECTURE.md §5.9); JSON null means none.
      nullif(step -> 'options' -> 'if', 'null'::jsonb),
      nullif(step -> 'options' -> 'ifNot', 'null'::jsonb),
      switchyard._choice_option(step -> 'options', 'whenUnmet', format('step %s option', to_json(step_slug)),
                                array['skip', 'skip-cascade', 'fail'], 'skip'),
      switchyard._choice_option(step -> 'options', 'whenExhausted', format('step %s option', to_json(step_slug)),
                                array['fail', 'skip', 'skip-cascade'], 'fail'));

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

-- A task that used its last attempt (20261202000700): with the step's whenExhausted 'skip' or
-- 'skip-cascade' and the run still started, the task fails, the step is skipped (with
-- 'skip-cascade' its dependents too) and the run goes on without them ('skipped'); else the
-- run fails ('failed').
create or replace function switchyard._exhaust_task(task switchyard.step_tasks, error_text text)
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  exhausted text;
  run_status text;
  q record;
begin
  select st.when_exhausted into exhausted from switchyard.steps st
   where st.flow_slug = task.flow_slug and st.step_slug = task.step_slug;
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if exhausted in ('skip', 'skip-cascade') and run_status = 'started' then
    update switchyard.step_tasks t
       set status = 'failed', failed_at = now(), error = error_text
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    -- A map step's other elements are skipped with it: their messages are archived and a
    -- late answer from one still running is not accepted (its task is no longer started).
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from switchyard.step_tasks t
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.status in ('queued', 'started')
       group by t.queue_name order by t.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;
    update switchyard.step_tasks t
       set status = 'skipped'
     where t.run_id = task.run_id and t.step_slug = task.step_slug
       and t.status in ('queued', 'started');
    -- 'skip-cascade': every step that depends on it, transitively, is skipped too.
    perform switchyard._skip_step(task.run_id, task.flow_slug, task.step_slug, format(
      'whenExhausted %s: failed after %s attempt(s): %s', exhausted, task.attempts_count,
      error_text), exhausted = 'skip-cascade');
    perform switchyard._start_ready_steps(task.run_id);
    perform switchyard._complete_run_if_done(task.run_id);
    return 'skipped';
  end if;
  perform switchyard._fail_run(task, error_text);
  return 'failed';
end
$$;
