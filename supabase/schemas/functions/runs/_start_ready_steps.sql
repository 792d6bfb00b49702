-- Moves every created step of a run whose dependencies are done (completed or skipped) to
-- started, then per step, in index order:
--   - a condition (docs/design/runs.md#ready-steps-conditions-and-skips) is evaluated here, in SQL
-- only, over the step's
--     input (the run input for a root step, else _dependency_outputs): met when the input
--     contains cond_if and does not contain cond_if_not (jsonb @>). Unmet: 'skip' skips the
--     step, 'skip-cascade' also every step depending on it, 'fail' fails the run;
--   - a map step (docs/design/runs.md#map-steps) reads its array (the run input, or its one
--     dependency's output): not an array fails the run naming the step and the value's type;
--     more than max_map_elements() elements fails it with the count and the limit; an empty
--     array completes the step with [] and no task; else one task per element, task_index
--     0..n-1, every message sent in one pgmq.send_batch;
--   - a wait, sleep or flow step (docs/design/waits.md) gets no task: _begin_wait
--     delivers a signal kept for it, else the step waits (until signal_run or expire_waits
--     ends it); a flow step starts its child run (_begin_child);
--   - otherwise (a plain step) its task is created by _queue_plain_tasks, the one path of plain
--     successor start that complete_tasks takes too: plain steps are queued together, in index
--     order, before each condition or map step and after the last step.
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
  started int := 0;
  step_input jsonb;
  elements jsonb;
  element_count int;
  source_slug text;
  moved_any boolean;
  skipped_any boolean := false;
  plain_flows text[] := '{}';   -- plain ready steps not queued yet (parallel arrays)
  plain_steps text[] := '{}';
  floor int;
begin
  loop
    moved_any := false;
    for ready in
      with moved as (
        update switchyard.step_states ss
           set status = 'started', started_at = switchyard.clock_now()
         where ss.run_id = target_run and ss.status = 'created' and ss.remaining_deps = 0
        returning ss.run_id, ss.flow_slug, ss.step_slug
      )
      select m.run_id, m.flow_slug, m.step_slug, st.queue_name, st.start_delay, st.deps_count,
             st.step_type, st.cond_if, st.cond_if_not, st.when_unmet,
             coalesce(st.max_attempts, f.max_attempts) as max_attempts,
             coalesce(st.base_delay, f.base_delay) as base_delay,
             coalesce(st.max_delay, f.max_delay) as max_delay,
             coalesce(st.timeout, f.timeout) as timeout, st.concurrency_limit,
             (select r.priority from switchyard.runs r where r.run_id = m.run_id) as priority
        from moved m
        join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug
        join switchyard.flows f on f.flow_slug = m.flow_slug
       order by st.step_index
    loop
      if ready.step_type = 'single' and ready.cond_if is null and ready.cond_if_not is null then
        plain_flows := plain_flows || ready.flow_slug;
        plain_steps := plain_steps || ready.step_slug;
        continue;
      end if;
      started := started + switchyard._queue_plain_tasks(
        array_fill(target_run, array[cardinality(plain_steps)]), plain_flows, plain_steps);
      plain_flows := '{}';
      plain_steps := '{}';
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
      if ready.step_type in ('wait', 'sleep', 'flow') then
        if switchyard._begin_wait(target_run, ready.flow_slug, ready.step_slug) then
          -- Done at once, or failed with the run (a child that could not start, a sleep's
          -- time that is not one): a failed run starts nothing more.
          if not exists (select 1 from switchyard.runs r
                          where r.run_id = target_run and r.status = 'started') then
            return started;
          end if;
          moved_any := true;
          skipped_any := true;
        end if;
        continue;
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
        -- One task per element; PGMQ numbers a batch's messages in the order given. A rerun
        -- run's tasks count their attempts on from its attempt floor (rerun_run).
        select r.attempt_floor into floor from switchyard.runs r where r.run_id = target_run;
        insert into switchyard.step_tasks (run_id, step_slug, task_index, flow_slug, queue_name,
                                           message_id, attempts_count, max_attempts, base_delay,
                                           max_delay, timeout)
        select ready.run_id, ready.step_slug, (b.ord - 1)::int, ready.flow_slug, ready.queue_name,
               b.msg_id, floor, floor + ready.max_attempts, ready.base_delay, ready.max_delay,
               ready.timeout
          from (select m.msg_id, row_number() over (order by m.msg_id) as ord
                  from pgmq.send_batch(
                         ready.queue_name,
                         array(select switchyard._task_message(
                                        ready.run_id, ready.flow_slug, ready.step_slug, g.i,
                                        ready.priority, ready.start_delay,
                                        case when ready.concurrency_limit is not null
                                             then switchyard._concurrency_key(
                                                    ready.run_id, ready.flow_slug,
                                                    ready.step_slug, g.i)
                                        end)
                                 from generate_series(0, element_count - 1) g(i) order by g.i),
                         ready.start_delay) as m(msg_id)) b;
        update switchyard.step_states ss set remaining_tasks = element_count
         where ss.run_id = target_run and ss.step_slug = ready.step_slug;
        started := started + element_count;
        continue;
      end if;
      -- A plain step whose condition is met.
      plain_flows := plain_flows || ready.flow_slug;
      plain_steps := plain_steps || ready.step_slug;
    end loop;
    started := started + switchyard._queue_plain_tasks(
      array_fill(target_run, array[cardinality(plain_steps)]), plain_flows, plain_steps);
    plain_flows := '{}';
    plain_steps := '{}';
    exit when not moved_any;
  end loop;
  if skipped_any then  -- a skip or an empty map may have finished the run
    perform switchyard._complete_run_if_done(target_run);
  end if;
  return started;
end
$$;
