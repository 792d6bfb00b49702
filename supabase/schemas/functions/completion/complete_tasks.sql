-- The completion (docs/design/claim.md#dispatch-and-completion): records a batch of task outputs in
-- one call, in
-- (queue_name, message_id) order. Each task is accepted only while its attempt holds it; a
-- step's state counts its tasks down and completes with its last one; the successors of plain
-- steps start together (one send per queue), the rest through _start_ready_steps; a run with no
-- step left completes with its output. Returns one row per item: whether it was accepted.
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
  timed_queues text[];    -- the tasks completed here, and their durations (the counters)
  timed_flows text[];
  timed_steps text[];
  timed_secs double precision[];
  refused_ords bigint[];  -- accepted items of cancelled runs: the answer is refused
  done_runs uuid[];       -- steps completed by this call (parallel arrays)
  done_steps text[];
  done_flows text[];
  feeding boolean;        -- a step completed here has dependents
  advancing uuid[];       -- runs that may have steps to start now
  seg record;             -- consecutive advancing runs, plain or not
  new_runs uuid[];        -- the tasks of plain runs' ready steps (parallel arrays)
  new_flows text[];
  new_steps text[];
  q record;
  next_run uuid;
  big record;             -- a map whose aggregate is over max_map_output_bytes
  map_limit bigint;
  err_state text;
  err_message text;
begin
  if completions is null or jsonb_typeof(completions) <> 'array' then
    perform switchyard._refuse('22023', 'completions_not_array', 'completions', completions::text,
      'complete_tasks: completions must be a JSON array of {run_id, step_slug, attempt, output}');
  end if;

  -- Lock the listed tasks in (queue, message id) order; keep those the item's attempt holds.
  -- Two probes per item, each a LATERAL (... LIMIT 1) on a unique key: the task's message
  -- key by its primary key, then, in message order, the lock by that key. A join filtered on
  -- the status instead let the planner read every started task of every queue through the
  -- partial index step_tasks_worker (dead entries included), so the cost grew with the
  -- history (docs/design/claim.md#planner-settings).
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
    select coalesce(array_agg(x.run_id) filter (where x.status = 'started'), '{}'),
           coalesce(array_agg(a.ord) filter (where x.status = 'cancelled'), '{}')
      into live_runs, refused_ords
      from (select r.run_id, r.status from switchyard.runs r
             where r.run_id = any (acc_runs) order by r.run_id for update) x
      left join unnest(acc_ords, acc_runs) as a(ord, run_id)
        on a.run_id = x.run_id and x.status = 'cancelled';

    -- The late answer of a handler whose run was cancelled is refused (ok false): its task is
    -- cancelled like the run's queued tasks (cancel_run), its output is not kept, and nothing
    -- counts it as a completion. A failed run's late answer is recorded (retry_run reruns it).
    -- The completed tasks' durations (claim to completion) feed the histogram of the
    -- counters (docs/design/observability.md#counters-histograms-and-levels), whose count is the
    -- completions.
    with finished as (
      update switchyard.step_tasks t
         set status = case when r.refused then 'cancelled' else 'completed' end,
             completed_at = case when r.refused then null else switchyard.clock_now() end,
             output = case when r.refused then null else a.output end,
             worker_id = case when r.refused then null else t.worker_id end
        from unnest(acc_ords, acc_runs, acc_steps, acc_idxs, acc_outputs)
               as a(ord, run_id, step_slug, idx, output)
        cross join lateral (select a.ord = any (refused_ords) as refused) r
       where t.run_id = a.run_id and t.step_slug = a.step_slug and t.task_index = a.idx
      returning t.queue_name, t.flow_slug, t.step_slug, t.status,
                extract(epoch from t.completed_at - t.started_at)::double precision as secs
    )
    select array_agg(d.queue_name), array_agg(d.flow_slug), array_agg(d.step_slug),
           array_agg(d.secs)
      into timed_queues, timed_flows, timed_steps, timed_secs
      from finished d where d.status = 'completed';
    if timed_queues is not null then
      perform switchyard._count_metrics(array['task_duration'], timed_queues, timed_flows, timed_steps,
        null, timed_secs);
    end if;
    for q in
      select a.queue_name, array_agg(a.message_id order by a.message_id) as ids
        from unnest(acc_queues, acc_messages) as a(queue_name, message_id)
       group by a.queue_name order by a.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;

    -- A map step whose last elements complete here gets its outputs in one array, which its
    -- dependents receive whole. When that array would be more than max_map_output_bytes of
    -- JSON text ('[' + the outputs joined by ', ' + ']'), the step and its run fail here,
    -- before the array is built, naming the map, the size and the limit. Every element keeps
    -- its output and none is re-run for it (a retry of the run runs them again). Only batches
    -- with a map element look, and only a map's last completion sums its outputs.
    if exists (select 1 from unnest(acc_flows, acc_steps) as a(flow_slug, step_slug)
                 join switchyard.steps st
                   on st.flow_slug = a.flow_slug and st.step_slug = a.step_slug
                where st.step_type = 'map') then
      map_limit := switchyard.limit_value('max_map_output_bytes');
      for big in
        select g.run_id, g.step_slug, g.flow_slug, x.tasks, x.bytes
          from (select a.run_id, a.step_slug, a.flow_slug
                  from unnest(acc_runs, acc_steps, acc_flows) as a(run_id, step_slug, flow_slug)
                  join switchyard.steps st
                    on st.flow_slug = a.flow_slug and st.step_slug = a.step_slug
                   and st.step_type = 'map'
                  join switchyard.step_states ss
                    on ss.run_id = a.run_id and ss.step_slug = a.step_slug and ss.status = 'started'
                 where a.run_id = any (live_runs)
                 group by a.run_id, a.step_slug, a.flow_slug, ss.remaining_tasks
                having ss.remaining_tasks = count(*)) g
          cross join lateral (select count(*)::int as tasks,
                                     coalesce(sum(octet_length(t.output::text)), 0)
                                       + 2 * count(*) as bytes
                                from switchyard.step_tasks t
                               where t.run_id = g.run_id and t.step_slug = g.step_slug) x
         where x.bytes > map_limit
         order by g.run_id, g.step_slug
      loop
        update switchyard.step_states ss
           set status = 'failed', failed_at = switchyard.clock_now()
         where ss.run_id = big.run_id and ss.step_slug = big.step_slug;
        update switchyard.runs r
           set status = 'failed', failed_at = switchyard.clock_now(),
               error = format(
                 'map step %s: its %s outputs are %s bytes of JSON text together, over the limit '
                 'of %s bytes (setting max_map_output_bytes); no element is run again: return '
                 'smaller outputs (store large data elsewhere and return a reference) and retry '
                 'the run, or raise the limit with select switchyard.set_setting('
                 '''max_map_output_bytes'', ''<bytes>'')',
                 big.step_slug, big.tasks, big.bytes, map_limit)
         where r.run_id = big.run_id;
        perform switchyard._archive_queued(big.run_id);
        live_runs := array_remove(live_runs, big.run_id);
      end loop;
    end if;

    -- A run that ended meanwhile records the task and starts nothing. A step's state counts
    -- its tasks down (one for an ordinary step, one per element for a map) and completes
    -- with its last one: the output of an ordinary step's task, or a map's outputs in
    -- element order.
    with done as (
      update switchyard.step_states ss
         set remaining_tasks = ss.remaining_tasks - a.n,
             status = case when ss.remaining_tasks = a.n then 'completed' else ss.status end,
             completed_at = case when ss.remaining_tasks = a.n then switchyard.clock_now() end,
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
      returning ss.run_id, ss.step_slug, ss.flow_slug, ss.status,
                ss.status = 'completed'
                  and exists (select 1 from switchyard.deps d
                               where d.flow_slug = ss.flow_slug and d.dep_slug = ss.step_slug)
                  as feeds
    )
    select coalesce(array_agg(d.run_id) filter (where d.status = 'completed'), '{}'),
           coalesce(array_agg(d.step_slug) filter (where d.status = 'completed'), '{}'),
           coalesce(array_agg(d.flow_slug) filter (where d.status = 'completed'), '{}'),
           coalesce(bool_or(d.feeds), false)
      into done_runs, done_steps, done_flows, feeding
      from done d;
    -- The dependents of the completed steps count a dependency down; a batch whose completed
    -- steps have none (1-step flows, last steps) skips the statement and its trigger call.
    if feeding then
      update switchyard.step_states ss
         set remaining_deps = ss.remaining_deps - d.n
        from (select a.run_id, d.step_slug, count(*)::int as n
                from unnest(done_runs, done_steps, done_flows) as a(run_id, step_slug, flow_slug)
                join switchyard.deps d on d.flow_slug = a.flow_slug and d.dep_slug = a.step_slug
               group by a.run_id, d.step_slug) d
       where ss.run_id = d.run_id and ss.step_slug = d.step_slug;
    end if;
    -- Count the steps down; a run whose last step completed here completes in the same
    -- update, with the outputs of its completed leaf steps (no step depends on them; a
    -- skipped leaf is absent) as its output: _run_outputs, inlined into this statement (a SQL
    -- function), computes them for the completing runs only; a run that does not complete
    -- yet costs nothing more than its count.
    with counted as (
      update switchyard.runs r
         set remaining_steps = r.remaining_steps - c.n,
             status = case when r.remaining_steps = c.n then 'completed' else r.status end,
             completed_at = case when r.remaining_steps = c.n then switchyard.clock_now() end,
             output = case when r.remaining_steps = c.n then
                        coalesce((select o.output
                                    from switchyard._run_outputs(array[r.run_id]) o), '{}')
                      end
        from (select a.run_id, count(*)::int as n from unnest(done_runs) as a(run_id)
               group by a.run_id) c
       where r.run_id = c.run_id
      returning r.run_id, r.remaining_steps
    )
    select coalesce(array_agg(c.run_id order by c.run_id) filter (where c.remaining_steps > 0), '{}')
      into advancing
      from counted c;
    -- Successors. A run whose ready steps (created, no dependency left) are all plain (no
    -- condition, not a map, a wait or a sleep) has them started here together with its
    -- neighbours in run order that are plain too: one update of their states, then
    -- _queue_plain_tasks for all of them (one pgmq.send_batch per queue and start delay, one
    -- insert of their tasks), the path _start_ready_steps takes for plain steps too. Every
    -- other run (a condition, a map, a wait) goes through _start_ready_steps. Runs are taken in run order and each queue's messages are
    -- sent in (run, step index) order, so every queue numbers them as the calls per run did.
    -- (Only with something to start: over an empty array the custom plan is so much cheaper
    -- than the generic one that the plan cache would plan these statements on every call.)
    -- The successors start in a subtransaction: an error no rule foresaw there (a value that
    -- got past every check) never fails the completion of a valid output, which would make
    -- the finished handler run again. Then each advancing run starts its ready steps alone
    -- (_start_ready_steps), and a run whose start fails again fails by itself
    -- (_fail_run_unforeseen), naming the error. A deadlock or a cancel is the caller's to repeat.
    if cardinality(advancing) > 0 then
      begin
        for seg in
          select x.special, array_agg(x.run_id order by x.run_id) as runs
            from (select y.run_id, y.special, row_number() over (order by y.run_id) as n,
                         row_number() over (order by y.run_id)
                           - row_number() over (partition by y.special order by y.run_id) as island
                    from (select a.run_id,
                                 coalesce(bool_or(st.step_type <> 'single' or st.cond_if is not null
                                                  or st.cond_if_not is not null), false) as special
                            from unnest(advancing) as a(run_id)
                            left join switchyard.step_states ss
                              on ss.run_id = a.run_id and ss.status = 'created'
                             and ss.remaining_deps = 0
                            left join switchyard.steps st
                              on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                           group by a.run_id) y) x
           group by x.special, x.island
           order by min(x.n)
        loop
          if seg.special then
            foreach next_run in array seg.runs loop
              perform switchyard._start_ready_steps(next_run);
            end loop;
            continue;
          end if;
          with moved as (
            update switchyard.step_states ss
               set status = 'started', started_at = switchyard.clock_now()
              from unnest(seg.runs) as a(run_id)
             where ss.run_id = a.run_id and ss.status = 'created' and ss.remaining_deps = 0
            returning ss.run_id, ss.flow_slug, ss.step_slug
          )
          select coalesce(array_agg(m.run_id order by m.run_id, st.step_index), '{}'),
                 coalesce(array_agg(m.flow_slug order by m.run_id, st.step_index), '{}'),
                 coalesce(array_agg(m.step_slug order by m.run_id, st.step_index), '{}')
            into new_runs, new_flows, new_steps
            from moved m
            join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug;
          perform switchyard._queue_plain_tasks(new_runs, new_flows, new_steps);
        end loop;
      exception when others then
        if sqlstate like '40%' or sqlstate like '57%' then
          raise;
        end if;
        foreach next_run in array advancing loop
          begin
            perform switchyard._start_ready_steps(next_run);
          exception when others then
            if sqlstate like '40%' or sqlstate like '57%' then
              raise;
            end if;
            get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
            perform switchyard._fail_run_unforeseen(
              next_run, 'the steps ready after a completed step could not start',
              err_state, err_message);
          end;
        end loop;
      end;
    end if;
  end if;

  return query
    select c.ord = any (acc_ords) and not c.ord = any (coalesce(refused_ords, '{}'))
      from jsonb_array_elements(completions) with ordinality as c(value, ord)
     order by c.ord;
end
$$;
