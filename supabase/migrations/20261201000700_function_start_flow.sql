-- Starting runs and sending ready steps to their queues.

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

-- Archives every queued message of a run, one pgmq.archive per queue: their tasks then
-- classify as stale (the run is no longer started).
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
    select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
      from switchyard.step_tasks t
     where t.run_id = run and t.status = 'queued'
     group by t.queue_name order by t.queue_name
  loop
    perform pgmq.archive(q.queue_name, q.ids);
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

-- Starts a run of a concrete flow or of an alias's active version.
--
-- `run_id` (optional) makes the start idempotent: the caller chooses the id, and a second
-- start with the same id returns the existing run and starts nothing. The same id with
-- another input, or naming another flow, is refused (23505). Two concurrent starts with one
-- id create one run: the second insert waits for the first on the primary key and then
-- finds its row (docs/ARCHITECTURE.md §5.8).
--
-- `owner` (optional) records who the run is for (runs.owner, copied to its events for
-- row-level security, docs/ARCHITECTURE.md §14); a repeated start for another owner is
-- refused first, so it learns nothing of the run.
create or replace function switchyard.start_flow(
  flow_or_alias text, input jsonb, run_id uuid default null, owner uuid default null
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
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner)
  select coalesce(start_flow.run_id, gen_random_uuid()), concrete, flow_or_alias, input, count(*),
         start_flow.owner
    from switchyard.steps st where st.flow_slug = concrete
  on conflict on constraint runs_pkey do nothing
  returning runs.run_id into new_run;
  if new_run is null then
    -- The id exists (committed, or committed while this insert waited for it): the same
    -- start again returns it; anything else under that id is refused.
    select r.flow_slug, r.started_as, r.input, r.owner into existing
      from switchyard.runs r where r.run_id = start_flow.run_id;
    if existing.owner is distinct from start_flow.owner then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started for another owner: '
        'a run id names one start; use a new id for another owner',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_owner', 'argument', 'owner', 'value', start_flow.owner::text,
          'run_id', start_flow.run_id)::text;
    end if;
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
