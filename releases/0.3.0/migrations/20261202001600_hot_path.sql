-- The completion's per-run work, done per batch (BENCHMARKS.md, "Hot path audit"; docs/
-- ARCHITECTURE.md §5.5, §5.9). An audit of the hot path with auto_explain and
-- pg_stat_statements (track = all) on warm worker sessions found every statement of the claim
-- and the completion probing its rows by key, and two costs that were paid per run instead of
-- per batch, both in complete_tasks:
--
--   - a run that completed got its output from switchyard._run_output, a SQL function that is
--     not inlined (it aggregates): PostgreSQL 15 parses and plans such a function's query again
--     in every statement that calls it (about 0.2 ms of planning per completion batch in
--     pg_stat_statements) and starts an executor for it per run. The same query is now a
--     subquery of the count-down update, planned once with it and cached with its plan;
--   - each run with a successor to start went through its own _start_ready_steps call: an
--     update of its states, then per step a pgmq.send (a dynamic statement planned on every
--     call) and an insert, about 1 ms per run of a 3-step chain. A run whose ready steps are
--     all plain (no condition, not a map) now has them started together with its plain
--     neighbours in run order: one update of their states, one pgmq.send_batch per queue (and
--     stretch of equal start delay), one insert of their tasks. Every other run still goes
--     through _start_ready_steps, which is unchanged.
--
-- Nothing else changes: the same locks in the same order (the tasks in (queue_name,
-- message_id) order, then the runs in run order; the successors' states and tasks belong to
-- runs already locked), the same rows, statuses, outputs and events, the same message bodies
-- and delays; runs are still taken in run order and each queue numbers the successors'
-- messages in (run, step index) order, as the calls per run did.
--
-- complete_tasks is defined again whole from its latest definition
-- (20261202000700_dsl_features.sql), with its signature, so its privileges stay.

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
  seg record;             -- consecutive advancing runs, plain or not
  new_runs uuid[];        -- the tasks of plain runs' ready steps (parallel arrays)
  new_flows text[];
  new_steps text[];
  new_queues text[];
  new_delays int[];
  new_max_attempts int[];
  new_base_delays int[];
  new_max_delays int[];
  new_timeouts int[];
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
             -- As switchyard._run_output, inline: planned once with this statement
             -- instead of once per call as a SQL function, and run per completed run.
             output = case when r.remaining_steps = c.n then
                        (select coalesce(jsonb_object_agg(ss.step_slug, ss.output), '{}'::jsonb)
                           from switchyard.step_states ss
                          where ss.run_id = r.run_id and ss.status = 'completed'
                            and not exists (select 1 from switchyard.deps d
                                             where d.flow_slug = r.flow_slug
                                               and d.dep_slug = ss.step_slug))
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
    -- condition, not a map) has them started here together with its neighbours in run order
    -- that are plain too, as _start_ready_steps would: one update of their states, one
    -- pgmq.send_batch per queue (and start delay), one insert of their tasks, instead of a
    -- call, a send and an insert per run and step. Every other run (a condition, a map) goes
    -- through _start_ready_steps. Runs are taken in run order and each queue's messages are
    -- sent in (run, step index) order, so every queue numbers them as the calls per run did.
    -- (Only with something to start: over an empty array the custom plan is so much cheaper
    -- than the generic one that the plan cache would plan these statements on every call.)
    if cardinality(advancing) > 0 then
      for seg in
        select x.special, array_agg(x.run_id order by x.run_id) as runs
          from (select y.run_id, y.special, row_number() over (order by y.run_id) as n,
                       row_number() over (order by y.run_id)
                         - row_number() over (partition by y.special order by y.run_id) as island
                  from (select a.run_id,
                               coalesce(bool_or(st.step_type = 'map' or st.cond_if is not null
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
             set status = 'started', started_at = now()
            from unnest(seg.runs) as a(run_id)
           where ss.run_id = a.run_id and ss.status = 'created' and ss.remaining_deps = 0
          returning ss.run_id, ss.flow_slug, ss.step_slug
        )
        select coalesce(array_agg(m.run_id order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(m.flow_slug order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(m.step_slug order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(st.queue_name order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(st.start_delay order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(coalesce(st.max_attempts, f.max_attempts)
                                  order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(coalesce(st.base_delay, f.base_delay)
                                  order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(coalesce(st.max_delay, f.max_delay)
                                  order by m.run_id, st.step_index), '{}'),
               coalesce(array_agg(coalesce(st.timeout, f.timeout)
                                  order by m.run_id, st.step_index), '{}')
          into new_runs, new_flows, new_steps, new_queues, new_delays, new_max_attempts,
               new_base_delays, new_max_delays, new_timeouts
          from moved m
          join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug
          join switchyard.flows f on f.flow_slug = m.flow_slug;
        continue when cardinality(new_runs) = 0;
        -- One send per queue and stretch of equal start delay, in (run, step index) order. The
        -- body is a hint for humans; claiming trusts only (queue_name, message_id).
        for q in
          select g.queue_name, g.start_delay, array_agg(g.ord::int order by g.ord) as ords,
                 array_agg(jsonb_build_object('run_id', g.run_id, 'flow_slug', g.flow_slug,
                                              'step_slug', g.step_slug) order by g.ord) as bodies
            from (select u.queue_name, u.start_delay, u.run_id, u.flow_slug, u.step_slug, u.ord,
                         row_number() over (partition by u.queue_name order by u.ord)
                           - row_number() over (partition by u.queue_name, u.start_delay
                                                order by u.ord) as stretch
                    from unnest(new_queues, new_delays, new_runs, new_flows, new_steps)
                           with ordinality as u(queue_name, start_delay, run_id, flow_slug,
                                                step_slug, ord)) g
           group by g.queue_name, g.start_delay, g.stretch
           order by g.queue_name, min(g.ord)
        loop
          -- PGMQ numbers a batch's messages in the order given.
          insert into switchyard.step_tasks (run_id, step_slug, flow_slug, queue_name, message_id,
                                             max_attempts, base_delay, max_delay, timeout)
          select new_runs[o.ord], new_steps[o.ord], new_flows[o.ord], q.queue_name, b.msg_id,
                 new_max_attempts[o.ord], new_base_delays[o.ord], new_max_delays[o.ord],
                 new_timeouts[o.ord]
            from (select m.msg_id, row_number() over (order by m.msg_id) as i
                    from pgmq.send_batch(q.queue_name, q.bodies, q.start_delay) as m(msg_id)) b
            join unnest(q.ords) with ordinality as o(ord, i) on o.i = b.i;
        end loop;
      end loop;
    end if;
  end if;

  return query
    select c.ord = any (acc_ords)
      from jsonb_array_elements(completions) with ordinality as c(value, ord)
     order by c.ord;
end
$$;
