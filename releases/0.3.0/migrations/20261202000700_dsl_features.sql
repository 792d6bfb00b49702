-- Flow DSL features (issue 12; docs/ARCHITECTURE.md §5.8-5.10): idempotent starts, conditional
-- steps and map steps. A later migration than the released 0.1.0 files it changes, which stay
-- as released: the tables gain their columns here, and every function whose behaviour changes
-- is defined again here, whole (the hot-path versions of 20261202000500 included).
--
--   start_flow(flow_or_alias, input, run_id)  a caller-chosen run id makes a start idempotent
--   steps.cond_if / cond_if_not / when_unmet  a condition, evaluated in SQL when a step is ready
--   steps.when_exhausted                      what a task out of attempts does: fail or skip
--   step_states.status 'skipped'              a step that did not run; dependents go on
--   steps.step_type 'map'                     one task per element of an array
--   step_tasks.task_index                     task identity (run, step, task index)
--
-- Runs in flight when this is applied go on unchanged: their tasks get task index 0 and
-- their step states one remaining task, which is what an ordinary step has.

-- ---------------------------------------------------------------------------------------------
-- Tables

alter table switchyard.steps
  -- 'map' (docs/ARCHITECTURE.md §5.10): one task per element of an array, the run input (a
  -- root map) or the output of its one dependency.
  add column step_type text not null default 'single' check (step_type in ('single', 'map')),
  -- Condition (docs/ARCHITECTURE.md §5.9): the step runs when its input contains cond_if and
  -- does not contain cond_if_not (jsonb @>); null means no pattern.
  add column cond_if jsonb,
  add column cond_if_not jsonb,
  add column when_unmet text not null default 'skip'
    check (when_unmet in ('skip', 'skip-cascade', 'fail')),
  add column when_exhausted text not null default 'fail'
    check (when_exhausted in ('fail', 'skip'));

alter table switchyard.step_states
  drop constraint step_states_status_check,
  add constraint step_states_status_check
    check (status in ('created', 'started', 'completed', 'failed', 'skipped')),
  add column remaining_tasks int not null default 1,  -- a map step: its elements not yet completed
  add column skip_reason text,                        -- why a skipped step was skipped
  add column skipped_at timestamptz;

-- One task per (run, step, task index): index 0 for an ordinary step, one per element for a
-- map step. 'skipped': the other tasks of a map step skipped after one element exhausted its
-- attempts.
alter table switchyard.step_tasks
  add column task_index int not null default 0,
  drop constraint step_tasks_status_check,
  add constraint step_tasks_status_check
    check (status in ('queued', 'started', 'completed', 'failed', 'skipped')),
  drop constraint step_tasks_pkey,
  add constraint step_tasks_pkey primary key (run_id, step_slug, task_index);

-- A claimed row names its task's position in its step: a map element's index, else 0.
alter type switchyard.task_claim add attribute task_index int;

-- ---------------------------------------------------------------------------------------------
-- Compiling: kind and conditions are part of the shape (docs/ARCHITECTURE.md §2)

-- A text option that must be one of `choices`; absent or null gives `fallback`.
create or replace function switchyard._choice_option(
  obj jsonb, key text, what text, choices text[], fallback text
)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    return fallback;
  end if;
  if jsonb_typeof(v) <> 'string' or not ((v #>> '{}') = any (choices)) then
    raise exception using errcode = '22023', message = format(
      '%s %s %s is invalid: use one of %s', what, key, v::text, array_to_string(choices, ', ')),
      detail = jsonb_build_object(
        'rule', 'option_choice', 'argument', key, 'value', left(v::text, 200),
        'choices', to_jsonb(choices), 'context', what)::text;
  end if;
  return v #>> '{}';
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
      if o -> 'kind' is distinct from n -> 'kind' then
        diffs := diffs || format('step %s kind %s -> %s', o -> 'slug',
          coalesce((o -> 'kind')::text, 'absent'), coalesce((n -> 'kind')::text, 'absent'));
      end if;
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
                                array['fail', 'skip'], 'fail'));

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

-- ---------------------------------------------------------------------------------------------
-- Starting runs and ready steps: idempotent starts, conditions, skips, map fan-out

-- The input a dependent step's handler receives and its condition is evaluated over: the
-- outputs of its completed dependencies by slug; a skipped dependency is absent
-- (docs/ARCHITECTURE.md §5.9). start_tasks builds the same object inline for the claim.
create or replace function switchyard._dependency_outputs(run uuid, flow text, step text)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select coalesce(jsonb_object_agg(d.dep_slug, ds.output), '{}'::jsonb)
    from switchyard.deps d
    join switchyard.step_states ds on ds.run_id = run and ds.step_slug = d.dep_slug
   where d.flow_slug = flow and d.step_slug = step and ds.status = 'completed'
$$;

-- A run's output: the outputs of its completed leaf steps (no step depends on them); a
-- skipped leaf is absent.
create or replace function switchyard._run_output(run uuid, flow text)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select coalesce(jsonb_object_agg(ss.step_slug, ss.output), '{}'::jsonb)
    from switchyard.step_states ss
   where ss.run_id = run and ss.status = 'completed'
     and not exists (select 1 from switchyard.deps d
                      where d.flow_slug = flow and d.dep_slug = ss.step_slug)
$$;

-- Completes a started run none of whose steps is left (every one completed or skipped), with
-- its leaf outputs. complete_tasks does the same inline in its count-down.
create or replace function switchyard._complete_run_if_done(run uuid)
returns void
language sql
volatile
set search_path = ''
as $$
  update switchyard.runs r
     set status = 'completed', completed_at = now(),
         output = switchyard._run_output(r.run_id, r.flow_slug)
   where r.run_id = run and r.status = 'started' and r.remaining_steps = 0
$$;

-- Archives every queued message of a run, one pgmq.archive per queue (a map step may have
-- thousands): their tasks then classify as stale (the run is no longer started). The run's
-- tasks are read by key and filtered afterwards, as _fail_run does (docs/ARCHITECTURE.md §5.7:
-- a status condition in the query let the planner read every live task of every queue).
create or replace function switchyard._archive_queued(run uuid)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  q record;
begin
  for q in
    select t.queue_name,
           array_agg(t.message_id order by t.message_id) filter (where t.status = 'queued') as ids
      from switchyard.step_tasks t
     where t.run_id = run
     group by t.queue_name order by t.queue_name
  loop
    if q.ids is not null then
      perform pgmq.archive(q.queue_name, q.ids);
    end if;
  end loop;
end
$$;

-- Fails a step and its run without a task attempt (an unmet condition with whenUnmet
-- 'fail'); the run's queued messages are archived.
create or replace function switchyard._fail_run_step(run uuid, step text, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'failed', failed_at = now()
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.runs r
     set status = 'failed', failed_at = now(), error = error_text
   where r.run_id = run and r.status = 'started';
  perform switchyard._archive_queued(run);
end
$$;

-- Skips a step (docs/ARCHITECTURE.md §5.9): its state becomes 'skipped' with the reason; with
-- `cascading`, every step that depends on it, transitively, is skipped too. The run's step
-- count goes down by the number skipped, and the dependents of skipped steps that still wait
-- count one dependency down (they run without the skipped output). Returns how many were
-- skipped. The caller holds the run (a row lock, or the transaction that created it).
create or replace function switchyard._skip_step(
  run uuid, flow text, step text, reason text, cascading boolean
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  skipped text[];
begin
  with recursive closure(step_slug) as (
    select step
    union
    select d.step_slug from switchyard.deps d join closure c on d.dep_slug = c.step_slug
     where cascading and d.flow_slug = flow
  ),
  marked as (
    update switchyard.step_states ss
       set status = 'skipped', skipped_at = now(),
           skip_reason = case when ss.step_slug = step then reason
                              else format('skip-cascade: step %s was skipped', to_json(step)) end
      from closure c
     where ss.run_id = run and ss.step_slug = c.step_slug and ss.status in ('created', 'started')
    returning ss.step_slug
  )
  select coalesce(array_agg(m.step_slug), '{}') into skipped from marked m;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - x.n
    from (select d.step_slug, count(*)::int as n from switchyard.deps d
           where d.flow_slug = flow and d.dep_slug = any (skipped)
           group by d.step_slug) x
   where ss.run_id = run and ss.step_slug = x.step_slug and ss.status = 'created';
  update switchyard.runs r
     set remaining_steps = r.remaining_steps - cardinality(skipped)
   where r.run_id = run;
  return cardinality(skipped);
end
$$;

-- The most elements one map step may fan out to (docs/ARCHITECTURE.md §5.10): a longer array
-- fails the run with the count and this limit.
create or replace function switchyard.max_map_elements()
returns int
language sql
immutable
set search_path = ''
as $$ select 10000 $$;

-- A step that is done without a task (an empty map: output []): completes its state, counts
-- the run and its waiting dependents down.
create or replace function switchyard._complete_without_tasks(
  run uuid, flow text, step text, step_output jsonb
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'completed', completed_at = now(), output = step_output, remaining_tasks = 0
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - 1
    from switchyard.deps d
   where d.flow_slug = flow and d.dep_slug = step
     and ss.run_id = run and ss.step_slug = d.step_slug;
  update switchyard.runs r set remaining_steps = r.remaining_steps - 1 where r.run_id = run;
end
$$;

-- A step that is done without a task (an empty map: output []): completes its state, counts
-- the run and its waiting dependents down.
create or replace function switchyard._complete_without_tasks(
  run uuid, flow text, step text, step_output jsonb
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'completed', completed_at = now(), output = step_output, remaining_tasks = 0
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - 1
    from switchyard.deps d
   where d.flow_slug = flow and d.dep_slug = step
     and ss.run_id = run and ss.step_slug = d.step_slug;
  update switchyard.runs r set remaining_steps = r.remaining_steps - 1 where r.run_id = run;
end
$$;

-- Moves every created step of a run whose dependencies are done (completed or skipped) to
-- started, then per step, in index order:
--   - a condition (docs/ARCHITECTURE.md §5.9) is evaluated here, in SQL only, over the step's
--     input (the run input for a root step, else _dependency_outputs): met when the input
--     contains cond_if and does not contain cond_if_not (jsonb @>). Unmet: 'skip' skips the
--     step, 'skip-cascade' also every step depending on it, 'fail' fails the run;
--   - a map step (docs/ARCHITECTURE.md §5.10) reads its array (the run input, or its one
--     dependency's output): not an array fails the run naming the step and the value's type;
--     more than max_map_elements() elements fails it with the count and the limit; an empty
--     array completes the step with [] and no task; else one task per element, task_index
--     0..n-1, every message sent in one pgmq.send_batch;
--   - otherwise its task is created with the step's queue as an immutable snapshot and its
--     message sent to that queue (delayed by the step's startDelay).
-- A skip or an empty map can make dependents ready, so it repeats until nothing moves; a run
-- whose steps are then all completed or skipped completes here. Returns the number of tasks
-- created.
create or replace function switchyard._start_ready_steps(target_run uuid)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  ready record;
  msg_id bigint;
  started int := 0;
  step_input jsonb;
  elements jsonb;
  element_count int;
  source_slug text;
  moved_any boolean;
  skipped_any boolean := false;
begin
  loop
    moved_any := false;
    for ready in
      with moved as (
        update switchyard.step_states ss
           set status = 'started', started_at = now()
         where ss.run_id = target_run and ss.status = 'created' and ss.remaining_deps = 0
        returning ss.run_id, ss.flow_slug, ss.step_slug
      )
      select m.run_id, m.flow_slug, m.step_slug, st.queue_name, st.start_delay, st.deps_count,
             st.step_type, st.cond_if, st.cond_if_not, st.when_unmet,
             coalesce(st.max_attempts, f.max_attempts) as max_attempts,
             coalesce(st.base_delay, f.base_delay) as base_delay,
             coalesce(st.max_delay, f.max_delay) as max_delay,
             coalesce(st.timeout, f.timeout) as timeout
        from moved m
        join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug
        join switchyard.flows f on f.flow_slug = m.flow_slug
       order by st.step_index
    loop
      if ready.cond_if is not null or ready.cond_if_not is not null then
        if ready.deps_count = 0 then
          select r.input into step_input from switchyard.runs r where r.run_id = target_run;
        else
          step_input := switchyard._dependency_outputs(target_run, ready.flow_slug, ready.step_slug);
        end if;
        if not ((ready.cond_if is null or step_input @> ready.cond_if)
                and (ready.cond_if_not is null or not step_input @> ready.cond_if_not)) then
          if ready.when_unmet = 'fail' then
            perform switchyard._fail_run_step(target_run, ready.step_slug, format(
              'step %s condition is not met (if %s, ifNot %s) and whenUnmet is fail',
              to_json(ready.step_slug)::text, coalesce(ready.cond_if::text, 'none'),
              coalesce(ready.cond_if_not::text, 'none')));
            return started;
          end if;
          perform switchyard._skip_step(target_run, ready.flow_slug, ready.step_slug,
            format('condition not met (if %s, ifNot %s)', coalesce(ready.cond_if::text, 'none'),
                   coalesce(ready.cond_if_not::text, 'none')),
            ready.when_unmet = 'skip-cascade');
          moved_any := true;
          skipped_any := true;
          continue;
        end if;
      end if;
      if ready.step_type = 'map' then
        if ready.deps_count = 0 then
          select r.input into elements from switchyard.runs r where r.run_id = target_run;
          source_slug := null;
        else
          select d.dep_slug, ds.output into source_slug, elements
            from switchyard.deps d
            join switchyard.step_states ds on ds.run_id = target_run and ds.step_slug = d.dep_slug
           where d.flow_slug = ready.flow_slug and d.step_slug = ready.step_slug;
        end if;
        if elements is null or jsonb_typeof(elements) <> 'array' then
          perform switchyard._fail_run_step(target_run, ready.step_slug, format(
            'map step %s needs an array from %s, got %s', to_json(ready.step_slug)::text,
            case when source_slug is null then 'the flow input'
                 else format('step %s', to_json(source_slug)::text) end,
            coalesce(jsonb_typeof(elements), 'no value (the step was skipped)')));
          return started;
        end if;
        element_count := jsonb_array_length(elements);
        if element_count > switchyard.max_map_elements() then
          perform switchyard._fail_run_step(target_run, ready.step_slug, format(
            'map step %s refused %s elements from %s: at most %s elements per map',
            to_json(ready.step_slug)::text, element_count,
            case when source_slug is null then 'the flow input'
                 else format('step %s', to_json(source_slug)::text) end,
            switchyard.max_map_elements()));
          return started;
        end if;
        if element_count = 0 then
          perform switchyard._complete_without_tasks(target_run, ready.flow_slug, ready.step_slug, '[]');
          moved_any := true;
          skipped_any := true;
          continue;
        end if;
        -- One task per element; PGMQ numbers a batch's messages in the order given.
        insert into switchyard.step_tasks (run_id, step_slug, task_index, flow_slug, queue_name,
                                           message_id, max_attempts, base_delay, max_delay, timeout)
        select ready.run_id, ready.step_slug, (b.ord - 1)::int, ready.flow_slug, ready.queue_name,
               b.msg_id, ready.max_attempts, ready.base_delay, ready.max_delay, ready.timeout
          from (select m.msg_id, row_number() over (order by m.msg_id) as ord
                  from pgmq.send_batch(
                         ready.queue_name,
                         array(select jsonb_build_object(
                                        'run_id', ready.run_id, 'flow_slug', ready.flow_slug,
                                        'step_slug', ready.step_slug, 'task_index', g.i)
                                 from generate_series(0, element_count - 1) g(i) order by g.i),
                         ready.start_delay) as m(msg_id)) b;
        update switchyard.step_states ss set remaining_tasks = element_count
         where ss.run_id = target_run and ss.step_slug = ready.step_slug;
        started := started + element_count;
        continue;
      end if;
      -- The body is a hint for humans; claiming trusts only (queue_name, message_id).
      select s into msg_id from pgmq.send(
        ready.queue_name,
        jsonb_build_object('run_id', ready.run_id, 'flow_slug', ready.flow_slug, 'step_slug', ready.step_slug),
        ready.start_delay) s;
      insert into switchyard.step_tasks (run_id, step_slug, flow_slug, queue_name, message_id,
                                         max_attempts, base_delay, max_delay, timeout)
      values (ready.run_id, ready.step_slug, ready.flow_slug, ready.queue_name, msg_id,
              ready.max_attempts, ready.base_delay, ready.max_delay, ready.timeout);
      started := started + 1;
    end loop;
    exit when not moved_any;
  end loop;
  if skipped_any then  -- a skip or an empty map may have finished the run
    perform switchyard._complete_run_if_done(target_run);
  end if;
  return started;
end
$$;

-- The two-argument start_flow is replaced by the one with an optional run id.
drop function switchyard.start_flow(text, jsonb);

-- Starts a run of a concrete flow or of an alias's active version.
--
-- `run_id` (optional) makes the start idempotent: the caller chooses the id, and a second
-- start with the same id returns the existing run and starts nothing. The same id with
-- another input, or naming another flow, is refused (23505). Two concurrent starts with one
-- id create one run: the second insert waits for the first on the primary key and then
-- finds its row (docs/ARCHITECTURE.md §5.8).
create or replace function switchyard.start_flow(
  flow_or_alias text, input jsonb, run_id uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  concrete text;
  new_run uuid;
  existing record;
begin
  if input is null then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): input must be a JSON value, got SQL NULL (use ''null''::jsonb for JSON null)',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'input_sql_null', 'argument', 'input', 'value', null,
        'flow_or_alias', left(flow_or_alias, 200))::text;
  end if;
  concrete := switchyard.resolve_flow(flow_or_alias);
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps)
  select coalesce(start_flow.run_id, gen_random_uuid()), concrete, flow_or_alias, input, count(*)
    from switchyard.steps st where st.flow_slug = concrete
  on conflict on constraint runs_pkey do nothing
  returning runs.run_id into new_run;
  if new_run is null then
    -- The id exists (committed, or committed while this insert waited for it): the same
    -- start again returns it; anything else under that id is refused.
    select r.flow_slug, r.started_as, r.input into existing
      from switchyard.runs r where r.run_id = start_flow.run_id;
    if existing.flow_slug <> concrete and existing.started_as <> flow_or_alias then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s already belongs to a run of flow %s (started as %s): '
        'a run id names one start; use a new id for another flow',
        to_json(flow_or_alias)::text, start_flow.run_id, to_json(existing.flow_slug)::text,
        to_json(existing.started_as)::text),
        detail = jsonb_build_object(
          'rule', 'run_id_other_flow', 'argument', 'run_id', 'value', start_flow.run_id::text,
          'flow_or_alias', left(flow_or_alias, 200), 'existing_flow_slug', existing.flow_slug,
          'existing_started_as', existing.started_as)::text;
    end if;
    if existing.input <> input then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started with another input: '
        'a run id names one start; use a new id for another input',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_input', 'argument', 'input', 'value', left(input::text, 200),
          'run_id', start_flow.run_id, 'existing_input', left(existing.input::text, 200))::text;
    end if;
    return start_flow.run_id;
  end if;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select new_run, st.flow_slug, st.step_slug, st.deps_count
    from switchyard.steps st where st.flow_slug = concrete;
  perform switchyard._start_ready_steps(new_run);
  return new_run;
end
$$;

-- ---------------------------------------------------------------------------------------------
-- The claim: a map task's input is its element; 'skipped' tasks are stale

-- Classification of one batch (no side effects). Identity is (queue_name,
-- message_id) only: message bodies are never trusted. `pair_set` is a key from
-- switchyard.pair_set(); each message costs index lookups only, so the cost does
-- not grow with the size of the registry.
--   eligible    supported pair, task queued, run started
--   duplicate   supported pair, task started, run started (left to stall recovery)
--   stale       supported pair, task terminal (completed, failed, skipped) or run ended (archived)
--   unsupported no task for the message on this queue, or an unsupported pair
-- PL/pgSQL rather than SQL so that the plan is cached per session.
create or replace function switchyard.classify_batch(
  queue text, message_ids bigint[], pair_set text
)
returns table (message_id bigint, class text, flow_slug text, step_slug text)
language plpgsql
stable
set search_path = ''
as $$
begin
  return query
  select b.id,
         case
           when t.run_id is null or not t.supported then 'unsupported'
           when t.run_status <> 'started' or t.status in ('completed', 'failed', 'skipped') then 'stale'
           when t.status = 'started' then 'duplicate'
           else 'eligible'
         end,
         t.flow_slug,
         t.step_slug
    from (select distinct u.id from unnest(message_ids) as u(id)) b
    left join lateral (
      select x.run_id, x.flow_slug, x.step_slug, x.status,
             (select r.status from switchyard.runs r where r.run_id = x.run_id) as run_status,
             exists (select 1 from switchyard.pair_sets s
                      where s.pair_set = classify_batch.pair_set
                        and s.pair = x.flow_slug || '/' || x.step_slug) as supported
        from switchyard.step_tasks x
       where x.queue_name = queue and x.message_id = b.id
       limit 1  -- a probe per message, never a scan of the queue (see start_tasks)
    ) t on true
   order by b.id;
end
$$;

-- `supported_pairs` null means the exact set the worker registered (the worker's
-- normal call: the set is sent once, at registration).
--
-- Index probes only (enable_seqscan/hashjoin/mergejoin off for this call and the
-- SQL functions it calls): every statement here touches a batch of at most a few hundred
-- rows, found by key. PL/pgSQL caches a generic plan per statement after a few calls;
-- for the joins of the batch's arrays to the task table that plan (a hash join over a
-- scan of the table) was chosen while the tables were small, and in a worker's
-- long-lived session the claim then slowed down as the tables grew (in the bench, its
-- task update went from 0.4 to 3.1 ms per batch within 15,000 tasks, and a worker from
-- 1,700 to 700 tasks/s). Planning every call instead (plan_cache_mode =
-- force_custom_plan) was tried and measured worse: planning time on every call, and the
-- completion's first statement (a join of jsonb_array_elements to the task table) still
-- took 3 ms per batch instead of 0.3.
create or replace function switchyard.start_tasks(
  queue_name text, message_ids bigint[], worker_id uuid, supported_pairs text[] default null
)
returns setof switchyard.task_claim
language plpgsql
volatile
security definer
set search_path = ''
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  queue alias for queue_name;
  worker record;
  unsupported_ids bigint[];
  unsupported_pairs text[];
  stale_ids bigint[];
  eligible_ids bigint[];
  duplicate_ids bigint[];
  claimed_ids bigint[];
  claimed_secs int[];
  reason text;
  support text;
  task_ids bigint[];      -- the batch's tasks (parallel arrays, in message order)
  task_runs uuid[];
  task_steps text[];
  task_idxs int[];
begin
  if message_ids is null or cardinality(message_ids) = 0 then
    return;
  end if;
  select w.worker_id, w.queue_name, w.function_name, w.pair_set into worker
    from switchyard.workers w where w.worker_id = start_tasks.worker_id;
  if not found then
    raise exception using errcode = '22023', message = format(
      'start_tasks: worker %s is not registered', start_tasks.worker_id),
      detail = jsonb_build_object(
        'rule', 'worker_not_registered', 'argument', 'worker_id',
        'value', start_tasks.worker_id::text)::text;
  end if;
  if worker.queue_name <> queue then
    raise exception using errcode = '22023', message = format(
      'start_tasks: worker %s polls queue %s, not %s', worker.worker_id,
      to_json(worker.queue_name)::text, to_json(queue)::text),
      detail = jsonb_build_object(
        'rule', 'worker_queue_mismatch', 'argument', 'queue_name', 'value', left(queue, 200),
        'worker_id', worker.worker_id, 'worker_queue', worker.queue_name)::text;
  end if;
  support := case when supported_pairs is null then worker.pair_set
                  else switchyard.pair_set(supported_pairs) end;

  -- Lock every task of the batch, in message order, before deciding anything, so the
  -- classification holds until the claim commits. One unique-index probe per message:
  -- the LIMIT keeps the planner from replacing the probes with a scan of the whole queue
  -- when its statistics are stale (as they are right after a burst of new work), which
  -- would make every claim cost as much as the backlog.
  select coalesce(array_agg(b.id order by b.id), '{}'),
         coalesce(array_agg(l.run_id order by b.id), '{}'),
         coalesce(array_agg(l.step_slug order by b.id), '{}'),
         coalesce(array_agg(l.task_index order by b.id), '{}')
    into task_ids, task_runs, task_steps, task_idxs
    from (select distinct u.id from unnest(message_ids) as u(id) order by u.id) b
    cross join lateral (select t.run_id, t.step_slug, t.task_index from switchyard.step_tasks t
                         where t.queue_name = queue and t.message_id = b.id
                         limit 1 for update) l;

  select array_agg(c.message_id order by c.message_id) filter (where c.class = 'unsupported'),
         array_agg(distinct coalesce(c.flow_slug || '/' || c.step_slug, '(no task)'))
           filter (where c.class = 'unsupported'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'stale'),
         coalesce(array_agg(c.message_id) filter (where c.class = 'eligible'), '{}'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'duplicate')
    into unsupported_ids, unsupported_pairs, stale_ids, eligible_ids, duplicate_ids
    from switchyard.classify_batch(queue, message_ids, support) c;

  if unsupported_ids is not null then
    -- Refuse the whole batch: nothing claimed, no attempt consumed, nothing
    -- archived; every message visible again; the queue function pauses durably.
    perform switchyard._hide_messages(
      queue, message_ids, array_fill(0, array[cardinality(message_ids)]));
    reason := format(
      'unsupported work on queue %s at %s: message ids [%s]; unsupported flow/step pairs [%s]',
      queue, to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
      array_to_string(unsupported_ids, ', '), array_to_string(unsupported_pairs, ', '));
    update switchyard.worker_functions wf
       set paused_at = now(), pause_reason = reason,
           pause_detail = jsonb_build_object(
             'queue', queue,
             'message_ids', (select jsonb_agg(u.id::text order by u.id)
                               from unnest(unsupported_ids) u(id)),
             'pairs', to_jsonb(unsupported_pairs))
     where wf.function_name = worker.function_name and wf.paused_at is null;
    update switchyard.workers w
       set deprecated_at = coalesce(w.deprecated_at, now()), stop_reason = reason
     where w.worker_id = worker.worker_id;
    return query
      select 'unsupported'::text, c.message_id, queue, c.flow_slug, c.step_slug,
             null::uuid, null::int, null::int, null::jsonb, null::jsonb, null::int
        from switchyard.classify_batch(queue, message_ids, support) c
       where c.class = 'unsupported';
    return;
  end if;

  if stale_ids is not null then
    perform pgmq.archive(queue, stale_ids);
  end if;

  with claimed as (
    update switchyard.step_tasks t
       set status = 'started', attempts_count = t.attempts_count + 1, started_at = now(),
           worker_id = worker.worker_id
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
     where k.id = any (eligible_ids) and t.run_id = k.run_id and t.step_slug = k.step_slug
       and t.task_index = k.idx
    returning t.message_id, t.timeout
  )
  select coalesce(array_agg(c.message_id order by c.message_id), '{}'),
         coalesce(array_agg(c.timeout + switchyard.claim_margin_seconds() order by c.message_id), '{}')
    into claimed_ids, claimed_secs
    from claimed c;
  if cardinality(claimed_ids) > 0 then
    perform switchyard._hide_messages(queue, claimed_ids, claimed_secs);
  end if;

  return query
    select 'claimed'::text, t.message_id, t.queue_name, t.flow_slug, t.step_slug, t.run_id,
           t.attempts_count, t.timeout,
           case
             -- A map task: its element of the run input (root map) or of the one
             -- dependency's output (docs/ARCHITECTURE.md §5.10). Never SQL NULL (a JSON
             -- null element is 'null'), so the worker never mistakes it for a root step.
             when st.step_type = 'map' then
               case when st.deps_count = 0 then r.input
                    else (select ds.output from switchyard.deps d
                            join switchyard.step_states ds
                              on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                           where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug
                           limit 1)
               end -> t.task_index
             -- As switchyard._dependency_outputs, inline: a skipped dependency is absent.
             when st.deps_count > 0 then
               coalesce((select jsonb_object_agg(d.dep_slug, ds.output)
                           from switchyard.deps d
                           join switchyard.step_states ds
                             on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                          where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug
                            and ds.status = 'completed'), '{}'::jsonb)
           end,
           case when row_number() over (partition by t.run_id order by t.message_id) = 1
                then r.input end,
           t.task_index
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
      join switchyard.step_tasks t
        on t.run_id = k.run_id and t.step_slug = k.step_slug and t.task_index = k.idx
      join switchyard.runs r on r.run_id = t.run_id
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
     where k.id = any (claimed_ids)
    union all
    select 'duplicate'::text, k.id, queue, t.flow_slug, t.step_slug,
           null, null, null, null, null, t.task_index
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
      join switchyard.step_tasks t
        on t.run_id = k.run_id and t.step_slug = k.step_slug and t.task_index = k.idx
     where k.id = any (duplicate_ids)
    union all
    select 'stale'::text, s, queue, null, null, null, null, null, null, null, null
      from unnest(stale_ids) s;
end
$$;

-- ---------------------------------------------------------------------------------------------
-- Completion and failure by task (run, step, task index); a map step completes with its last
-- element; whenExhausted

-- Completes a batch of tasks in one call and one transaction: a busy worker sends
-- the tasks that finished while its previous write was in flight. Each item
-- {run_id, step_slug, task_index, attempt, output} (task_index absent: 0) is accepted
-- only from the attempt holding the task (status started); a task listed twice is
-- completed once. Returns one row per item, in the order given: whether it was accepted.
-- A step completes when its last task does: a map step (docs/ARCHITECTURE.md §5.10) when
-- every element's task has, with the outputs in element order.
--
-- Set-based, so the cost per task falls with the batch size. Tasks are locked in
-- (queue, message id) order, as start_tasks locks them, then their runs in run
-- order, so neither concurrent batches nor claims can deadlock with it.
-- Index probes only, as in start_tasks (see there): a cached generic plan of its array
-- joins degraded in a worker's long-lived session as the tables grew. The listed tasks are
-- found and locked by two unique-key probes per item (20261202000500, docs/ARCHITECTURE.md
-- §5.7).
create or replace function switchyard.complete_tasks(completions jsonb)
returns table (ok boolean)
language plpgsql
volatile
security definer
set search_path = ''
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  acc_ords bigint[];      -- accepted items (parallel arrays)
  acc_runs uuid[];
  acc_steps text[];
  acc_idxs int[];
  acc_flows text[];
  acc_outputs jsonb[];
  acc_queues text[];
  acc_messages bigint[];
  live_runs uuid[];       -- runs of accepted items that are still started
  done_runs uuid[];       -- steps completed by this call (parallel arrays)
  done_steps text[];
  done_flows text[];
  advancing uuid[];       -- runs that may have steps to start now
  q record;
  next_run uuid;
begin
  if completions is null or jsonb_typeof(completions) <> 'array' then
    raise exception using errcode = '22023', message =
      'complete_tasks: completions must be a JSON array of {run_id, step_slug, attempt, output}',
      detail = jsonb_build_object(
        'rule', 'completions_not_array', 'argument', 'completions',
        'value', left(completions::text, 200))::text;
  end if;

  -- Lock the listed tasks in (queue, message id) order; keep those the item's attempt holds.
  -- Two probes per item, each a LATERAL (... LIMIT 1) on a unique key: the task's message
  -- key by its primary key, then, in message order, the lock by that key. A join filtered on
  -- the status instead let the planner read every started task of every queue through the
  -- partial index step_tasks_worker (dead entries included), so the cost grew with the
  -- history (docs/ARCHITECTURE.md §5.7).
  select coalesce(array_agg(x.ord order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.run_id order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.step_slug order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.task_index order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.flow_slug order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.output order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.queue_name order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.message_id order by x.run_id, x.step_slug, x.task_index), '{}')
    into acc_ords, acc_runs, acc_steps, acc_idxs, acc_flows, acc_outputs, acc_queues, acc_messages
    from (
      select k.ord, l.run_id, l.step_slug, l.task_index, l.flow_slug, k.output, l.queue_name,
             l.message_id, l.status, l.attempts_count, k.attempt
        from (select i.ord, i.output, i.attempt, m.queue_name, m.message_id
                from (select distinct on (e.run_id, e.step_slug, e.task_index) e.*
                        from (select c.ord, (c.value ->> 'run_id')::uuid as run_id,
                                     c.value ->> 'step_slug' as step_slug,
                                     coalesce((c.value ->> 'task_index')::int, 0) as task_index,
                                     (c.value ->> 'attempt')::int as attempt,
                                     coalesce(c.value -> 'output', 'null') as output
                                from jsonb_array_elements(completions) with ordinality as c(value, ord)) e
                       order by e.run_id, e.step_slug, e.task_index, e.ord) i
                cross join lateral (select t.queue_name, t.message_id from switchyard.step_tasks t
                                     where t.run_id = i.run_id and t.step_slug = i.step_slug
                                       and t.task_index = i.task_index
                                     limit 1) m
               order by m.queue_name, m.message_id) k
        cross join lateral (select t.run_id, t.step_slug, t.task_index, t.flow_slug, t.queue_name,
                                   t.message_id, t.status, t.attempts_count
                              from switchyard.step_tasks t
                             where t.queue_name = k.queue_name and t.message_id = k.message_id
                             limit 1 for update) l
    ) x
   where x.status = 'started' and x.attempts_count = x.attempt;

  if cardinality(acc_ords) > 0 then
    select coalesce(array_agg(x.run_id) filter (where x.status = 'started'), '{}') into live_runs
      from (select r.run_id, r.status from switchyard.runs r
             where r.run_id = any (acc_runs) order by r.run_id for update) x;

    update switchyard.step_tasks t
       set status = 'completed', completed_at = now(), output = a.output
      from unnest(acc_runs, acc_steps, acc_idxs, acc_outputs) as a(run_id, step_slug, idx, output)
     where t.run_id = a.run_id and t.step_slug = a.step_slug and t.task_index = a.idx;
    for q in
      select a.queue_name, array_agg(a.message_id order by a.message_id) as ids
        from unnest(acc_queues, acc_messages) as a(queue_name, message_id)
       group by a.queue_name order by a.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;

    -- A run that ended meanwhile records the task and starts nothing. A step's state counts
    -- its tasks down (one for an ordinary step, one per element for a map) and completes
    -- with its last one: the output of an ordinary step's task, or a map's outputs in
    -- element order.
    with done as (
      update switchyard.step_states ss
         set remaining_tasks = ss.remaining_tasks - a.n,
             status = case when ss.remaining_tasks = a.n then 'completed' else ss.status end,
             completed_at = case when ss.remaining_tasks = a.n then now() end,
             output = case when ss.remaining_tasks = a.n then
                        case when a.step_type = 'map' then
                               (select jsonb_agg(t.output order by t.task_index)
                                  from switchyard.step_tasks t
                                 where t.run_id = ss.run_id and t.step_slug = ss.step_slug)
                             else a.output end
                      end
        from (select g.run_id, g.step_slug, count(*)::int as n, (array_agg(g.output))[1] as output,
                     min(st.step_type) as step_type
                from unnest(acc_runs, acc_steps, acc_flows, acc_outputs)
                       as g(run_id, step_slug, flow_slug, output)
                join switchyard.steps st on st.flow_slug = g.flow_slug and st.step_slug = g.step_slug
               where g.run_id = any (live_runs)
               group by g.run_id, g.step_slug) a
       where ss.run_id = a.run_id and ss.step_slug = a.step_slug and ss.status = 'started'
      returning ss.run_id, ss.step_slug, ss.flow_slug, ss.status
    )
    select coalesce(array_agg(d.run_id) filter (where d.status = 'completed'), '{}'),
           coalesce(array_agg(d.step_slug) filter (where d.status = 'completed'), '{}'),
           coalesce(array_agg(d.flow_slug) filter (where d.status = 'completed'), '{}')
      into done_runs, done_steps, done_flows
      from done d;
    update switchyard.step_states ss
       set remaining_deps = ss.remaining_deps - d.n
      from (select a.run_id, d.step_slug, count(*)::int as n
              from unnest(done_runs, done_steps, done_flows) as a(run_id, step_slug, flow_slug)
              join switchyard.deps d on d.flow_slug = a.flow_slug and d.dep_slug = a.step_slug
             group by a.run_id, d.step_slug) d
     where ss.run_id = d.run_id and ss.step_slug = d.step_slug;
    -- Count the steps down; a run whose last step completed here completes in the same
    -- update, with the outputs of its completed leaf steps (no step depends on them; a
    -- skipped leaf is absent) as its output.
    with counted as (
      update switchyard.runs r
         set remaining_steps = r.remaining_steps - c.n,
             status = case when r.remaining_steps = c.n then 'completed' else r.status end,
             completed_at = case when r.remaining_steps = c.n then now() end,
             output = case when r.remaining_steps = c.n then
                        switchyard._run_output(r.run_id, r.flow_slug)
                      end
        from (select a.run_id, count(*)::int as n from unnest(done_runs) as a(run_id)
               group by a.run_id) c
       where r.run_id = c.run_id
      returning r.run_id, r.remaining_steps
    )
    select coalesce(array_agg(c.run_id order by c.run_id) filter (where c.remaining_steps > 0), '{}')
      into advancing
      from counted c;
    foreach next_run in array advancing loop
      perform switchyard._start_ready_steps(next_run);
    end loop;
  end if;

  return query
    select c.ord = any (acc_ords)
      from jsonb_array_elements(completions) with ordinality as c(value, ord)
     order by c.ord;
end
$$;

-- complete_task and fail_task take the task index (default 0); the old signatures go, so a
-- call with four arguments is not ambiguous.
drop function switchyard.complete_task(uuid, text, int, jsonb);
drop function switchyard.fail_task(uuid, text, int, text);

-- Completes one task: a batch of one (see complete_tasks).
create or replace function switchyard.complete_task(
  run_id uuid, step_slug text, attempt int, output jsonb, task_index int default 0
)
returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  select c.ok from switchyard.complete_tasks(jsonb_build_array(jsonb_build_object(
    'run_id', complete_task.run_id, 'step_slug', complete_task.step_slug,
    'task_index', complete_task.task_index,
    'attempt', complete_task.attempt, 'output', coalesce(complete_task.output, 'null')))) c
$$;

-- Final failure: the task (by its index), its step and its run fail; the run is locked by its
-- key and its status tested in code (20261202000500), and the run's other queued messages are
-- archived by _archive_queued.
create or replace function switchyard._fail_run(task switchyard.step_tasks, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  run_status text;
begin
  update switchyard.step_tasks t
     set status = 'failed', failed_at = now(), error = error_text
   where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
  perform pgmq.archive(task.queue_name, task.message_id);
  update switchyard.step_states ss
     set status = 'failed', failed_at = now()
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug;
  -- The run by key (locked), then its status: a status condition in the update let a plan
  -- made with stale statistics read every started run through runs_flow_started
  -- (docs/ARCHITECTURE.md §5.7).
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if run_status = 'started' then
    update switchyard.runs r
       set status = 'failed', failed_at = now(),
           error = format('step %s failed after %s attempt(s): %s', task.step_slug, task.attempts_count, error_text)
     where r.run_id = task.run_id;
  end if;
  -- The run's other queued messages (a map step: its other elements), by key and filtered
  -- afterwards, one archive per queue (_archive_queued).
  perform switchyard._archive_queued(task.run_id);
end
$$;

-- A task that used its last attempt (fail_task, recover_stalled): with the step's
-- whenExhausted 'skip' and the run still started, the task fails, the step is skipped
-- (docs/ARCHITECTURE.md §5.9) and the run goes on without its output ('skipped'); else the
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
  if exhausted = 'skip' and run_status = 'started' then
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
    perform switchyard._skip_step(task.run_id, task.flow_slug, task.step_slug, format(
      'whenExhausted skip: failed after %s attempt(s): %s', task.attempts_count, error_text), false);
    perform switchyard._start_ready_steps(task.run_id);
    perform switchyard._complete_run_if_done(task.run_id);
    return 'skipped';
  end if;
  perform switchyard._fail_run(task, error_text);
  return 'failed';
end
$$;

-- A failed attempt: retried after min(base_delay * 2^(attempt - 1), max_delay) seconds
-- while attempts remain (the same message becomes visible again), else the run fails, or with
-- whenExhausted 'skip' the step is skipped (_exhaust_task).
-- The exponent stops at 40: base_delay <= 86400 < 2^17, so the product stays below 2^57
-- (no bigint overflow at any attempt), and 2^40 s is beyond every accepted max_delay
-- (at most 604800), so the cap is unchanged by it.
create or replace function switchyard.fail_task(
  run_id uuid, step_slug text, attempt int, error_message text, task_index int default 0
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  run_status text;
  delay_seconds int;
  error_text text := left(coalesce(error_message, 'unknown error'), 4000);
begin
  select * into task from switchyard.step_tasks t
   where t.run_id = fail_task.run_id and t.step_slug = fail_task.step_slug
     and t.task_index = fail_task.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    return 'ignored';
  end if;
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if task.attempts_count < task.max_attempts and run_status = 'started' then
    delay_seconds := least(task.base_delay::bigint * (1::bigint << least(task.attempts_count - 1, 40)),
                           task.max_delay)::int;
    update switchyard.step_tasks t
       set status = 'queued', error = error_text, worker_id = null
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.set_vt(task.queue_name, task.message_id, delay_seconds);
    return 'retrying';
  end if;
  return switchyard._exhaust_task(task, error_text);
end
$$;

-- Stall recovery (docs/ARCHITECTURE.md §5.6), as in 20261202000500 (the lost-message search
-- skips the tasks of ended runs), by task index; a stalled task out of attempts goes to
-- _exhaust_task (whenExhausted).
create or replace function switchyard.recover_stalled(queue_name text)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  task switchyard.step_tasks;
  recovered int := 0;
  grace int := switchyard.lost_message_grace_seconds();
  new_id bigint;
begin
  for task in
    select t.* from switchyard.step_tasks t
      left join switchyard.workers w on w.worker_id = t.worker_id
     where t.queue_name = queue and t.status = 'started'
       and (t.started_at + make_interval(secs => t.timeout + switchyard.claim_margin_seconds()) < now()
            or w.worker_id is null
            or not switchyard._worker_running(w.stopped_at, w.last_heartbeat_at,
                                              w.heartbeat_window_seconds))
     for update of t skip locked
  loop
    if task.attempts_count >= task.max_attempts then
      perform switchyard._exhaust_task(task, format('stalled on attempt %s (worker %s stopped or timed out)',
                                                    task.attempts_count, task.worker_id));
    else
      update switchyard.step_tasks t
         set status = 'queued', worker_id = null,
             error = format('stalled on attempt %s; recovered', task.attempts_count)
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform pgmq.set_vt(queue, task.message_id, 0);
    end if;
    recovered := recovered + 1;
  end loop;

  -- No key update: taking the row does not block the foreign-key checks of tasks being
  -- queued on this queue meanwhile.
  perform 1 from switchyard.queues q
   where q.queue_name = queue
     and (q.lost_checked_at is null or q.lost_checked_at <= now() - make_interval(secs => grace))
     for no key update skip locked;
  if found then
    update switchyard.queues q set lost_checked_at = now() where q.queue_name = queue;
    -- Only tasks of started runs: when a run fails, _fail_run archives its other queued tasks'
    -- messages and leaves the tasks queued, and a new message would be archived as stale and
    -- sent again every period. The run's status is read by its key (§5.7).
    for task in execute format(
      'select t.* from switchyard.step_tasks t
        where t.queue_name = $1 and t.status = ''queued''
          and greatest(t.queued_at, coalesce(t.started_at, t.queued_at))
                <= now() - make_interval(secs => $2)
          and (select r.status from switchyard.runs r where r.run_id = t.run_id) = ''started''
          and not exists (select 1 from pgmq.%I m where m.msg_id = t.message_id)
        order by t.message_id
          for update of t skip locked',
      pgmq.format_table_name(queue, 'q'))
      using queue, grace
    loop
      select s into new_id from pgmq.send(
        queue,
        jsonb_build_object('run_id', task.run_id, 'flow_slug', task.flow_slug,
                           'step_slug', task.step_slug)
          || case when task.task_index > 0 then jsonb_build_object('task_index', task.task_index)
                  else '{}'::jsonb end,
        0) s;
      update switchyard.step_tasks t set message_id = new_id
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      recovered := recovered + 1;
    end loop;
  end if;
  return recovered;
end
$$;

-- Shutdown: a stopping worker hands back the tasks it still holds (docs/ARCHITECTURE.md §9).
-- Each started task of the worker goes back to queued with the attempt refunded (the shutdown
-- is not the handler's failure) and its message becomes visible at once, in one statement per
-- queue. The worker is marked deprecated in the same transaction, so a worker released by
-- anyone else stops at its next heartbeat. The worker drops whatever its released handlers
-- return, so the refunded attempt number, claimed again by another worker, is never answered
-- twice. Locks in (queue, message id) order, as complete_tasks and start_tasks do.
-- Returns the tasks released.
create or replace function switchyard.release_tasks(worker_id uuid)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  q record;
  released int := 0;
begin
  if worker_id is null then
    raise exception using errcode = '22023',
      message = 'release_tasks: worker_id is null: pass the id of the stopping worker',
      detail = jsonb_build_object('rule', 'argument_missing', 'argument', 'worker_id',
                                  'value', null)::text;
  end if;
  update switchyard.workers w set deprecated_at = coalesce(w.deprecated_at, now())
   where w.worker_id = release_tasks.worker_id;
  for q in
    with held as (
      select t.run_id, t.step_slug, t.task_index from switchyard.step_tasks t
       where t.worker_id = release_tasks.worker_id and t.status = 'started'
       order by t.queue_name, t.message_id
         for update of t
    ),
    back as (
      update switchyard.step_tasks t
         set status = 'queued', attempts_count = t.attempts_count - 1, worker_id = null
        from held h
       where t.run_id = h.run_id and t.step_slug = h.step_slug and t.task_index = h.task_index
      returning t.queue_name, t.message_id
    )
    select b.queue_name, array_agg(b.message_id order by b.message_id) as ids
      from back b group by b.queue_name order by b.queue_name
  loop
    perform switchyard._hide_messages(q.queue_name, q.ids, array_fill(0, array[cardinality(q.ids)]));
    released := released + cardinality(q.ids);
  end loop;
  return released;
end
$$;

-- ---------------------------------------------------------------------------------------------
-- Reading a run: a map step's tasks summed up per step; skipped steps

create or replace function switchyard.run_status(run_id uuid)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'run_id', r.run_id, 'flow_slug', r.flow_slug, 'started_as', r.started_as,
    'status', r.status, 'output', r.output, 'error', r.error,
    'started_at', r.started_at, 'completed_at', r.completed_at, 'failed_at', r.failed_at,
    -- Per step: its queue snapshot and attempts (a map step: the most attempts any element
    -- used), its number of tasks (a map step's elements), the first error in element order,
    -- and why it was skipped.
    'steps', (select coalesce(jsonb_agg(jsonb_build_object(
                'step_slug', ss.step_slug, 'status', ss.status,
                'queue_name', t.queue_name, 'attempts', coalesce(t.attempts, 0),
                'tasks', coalesce(t.tasks, 0), 'error', t.error,
                'skip_reason', ss.skip_reason) order by st.step_index), '[]')
                from switchyard.step_states ss
                join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                left join lateral (
                  select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts,
                         count(*)::int as tasks,
                         (array_agg(x.error order by x.task_index) filter (where x.error is not null))[1] as error
                    from switchyard.step_tasks x
                   where x.run_id = ss.run_id and x.step_slug = ss.step_slug
                ) t on true
               where ss.run_id = r.run_id))
  from switchyard.runs r where r.run_id = run_status.run_id
$$;

-- Recent runs, newest first (at most 200), optionally of one status, of flows with a step on
-- one queue, or one run. Each with its duration (so far, for a started run), its error and
-- failing step, and its steps in step order with their task's queue snapshot, attempts and
-- times: queued (the step became ready), started (the latest attempt), finished. A map step
-- (docs/ARCHITECTURE.md §5.10) has one task per element: its row sums them up (the most
-- attempts any element used, the first error in element order, `tasks` the element count).
create or replace function switchyard.dashboard_runs(
  max_runs int default 25, run_status text default null, queue_name text default null,
  run_id uuid default null
)
returns table (
  run_id uuid, flow_slug text, started_as text, status text, started_at timestamptz,
  finished_at timestamptz, duration_ms bigint, error text, failed_step text, steps jsonb
)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.flow_slug, r.started_as, r.status, r.started_at,
         coalesce(r.completed_at, r.failed_at),
         (extract(epoch from coalesce(r.completed_at, r.failed_at, now()) - r.started_at)
           * 1000)::bigint,
         r.error,
         (select ss.step_slug from switchyard.step_states ss
           where ss.run_id = r.run_id and ss.status = 'failed'
           order by ss.failed_at nulls last, ss.step_slug limit 1),
         (select coalesce(jsonb_agg(jsonb_build_object(
                   'step_slug', ss.step_slug, 'step_index', st.step_index, 'status', ss.status,
                   'queue_name', coalesce(t.queue_name, st.queue_name),
                   'attempts', coalesce(t.attempts_count, 0),
                   'max_attempts', coalesce(t.max_attempts, st.max_attempts),
                   'queued_at', t.queued_at, 'started_at', t.started_at,
                   'finished_at', coalesce(ss.completed_at, ss.failed_at, ss.skipped_at,
                                           t.completed_at, t.failed_at),
                   'error', t.error, 'tasks', t.tasks) order by st.step_index), '[]'::jsonb)
            from switchyard.step_states ss
            join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
            left join lateral (
              select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts_count,
                     max(x.max_attempts) as max_attempts, min(x.queued_at) as queued_at,
                     max(x.started_at) as started_at, max(x.completed_at) as completed_at,
                     max(x.failed_at) as failed_at, count(*)::int as tasks,
                     (array_agg(x.error order by x.task_index)
                        filter (where x.error is not null))[1] as error
                from switchyard.step_tasks x
               where x.run_id = ss.run_id and x.step_slug = ss.step_slug
            ) t on true
           where ss.run_id = r.run_id)
    from switchyard.runs r
   where (dashboard_runs.run_id is null or r.run_id = dashboard_runs.run_id)
     and (dashboard_runs.run_status is null or r.status = dashboard_runs.run_status)
     and (dashboard_runs.queue_name is null or exists (
           select 1 from switchyard.steps st
            where st.flow_slug = r.flow_slug and st.queue_name = dashboard_runs.queue_name))
   order by r.started_at desc, r.run_id
   limit least(greatest(coalesce(dashboard_runs.max_runs, 25), 1), 200)
$$;

-- ---------------------------------------------------------------------------------------------
-- Privileges as in the grants migration: nothing for PUBLIC (or PostgREST's anon and
-- authenticated roles); the service role may call the API functions whose signature is new.
-- (Functions replaced above keep their privileges.)
revoke execute on function
  switchyard._choice_option(jsonb, text, text, text[], text),
  switchyard._dependency_outputs(uuid, text, text),
  switchyard._run_output(uuid, text),
  switchyard._complete_run_if_done(uuid),
  switchyard._archive_queued(uuid),
  switchyard._fail_run_step(uuid, text, text),
  switchyard._skip_step(uuid, text, text, text, boolean),
  switchyard.max_map_elements(),
  switchyard._complete_without_tasks(uuid, text, text, jsonb),
  switchyard.start_flow(text, jsonb, uuid),
  switchyard.complete_task(uuid, text, int, jsonb, int),
  switchyard._exhaust_task(switchyard.step_tasks, text),
  switchyard.fail_task(uuid, text, int, text, int)
from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke execute on function switchyard.start_flow(text, jsonb, uuid), '
                     'switchyard.complete_task(uuid, text, int, jsonb, int), '
                     'switchyard.fail_task(uuid, text, int, text, int), '
                     'switchyard.max_map_elements() from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant execute on function
      switchyard.start_flow(text, jsonb, uuid),
      switchyard.complete_task(uuid, text, int, jsonb, int),
      switchyard.fail_task(uuid, text, int, text, int),
      switchyard.max_map_elements()
    to service_role;
  end if;
end
$$;
