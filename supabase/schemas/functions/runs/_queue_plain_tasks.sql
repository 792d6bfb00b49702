-- Creates the tasks of plain ready steps (no condition, not a map) whose states were just moved
-- to started: one task each (task index 0), its queue an immutable snapshot of the step's, its
-- message sent with the step's start delay. The one implementation of successor start for plain
-- steps (docs/design/runs.md#ready-steps-conditions-and-skips): complete_tasks calls it for a
-- batch's runs together,
-- _start_ready_steps for one run. The steps are given in (run, step index) order as parallel
-- arrays; one pgmq.send_batch per queue and stretch of equal start delay, in that order, so
-- every queue numbers the messages as one send per step would. Returns the number of tasks.
-- Generic plans always (plan_cache_mode): its callers pass one run (start_flow) or a batch
-- (complete_tasks), so the plan cache, comparing the generic plan with the cheap custom plans of
-- one run, planned its two statements again on most calls, 0.9 and 0.2 ms each against 0.13 ms
-- of execution (BENCHMARKS.md, "Hot path, third round (issue 45): the completion"). Every
-- statement finds a batch's rows by key, so a cached plan is kept to index lookups in nested
-- loops as in complete_tasks (docs/design/claim.md#planner-settings), whoever calls it first.
create or replace function switchyard._queue_plain_tasks(runs uuid[], flows text[], steps text[])
returns int
language plpgsql
volatile
set search_path = ''
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  q record;
  queues text[];
  delays int[];
  max_attempts int[];
  base_delays int[];
  max_delays int[];
  timeouts int[];
  priorities int[];
  keyed boolean[];
  floors int[];
begin
  if cardinality(runs) = 0 then
    return 0;
  end if;
  -- Each step's queue snapshot, start delay and attempt options, read once, by position.
  select array_agg(st.queue_name order by u.ord), array_agg(st.start_delay order by u.ord),
         array_agg(coalesce(st.max_attempts, f.max_attempts) order by u.ord),
         array_agg(coalesce(st.base_delay, f.base_delay) order by u.ord),
         array_agg(coalesce(st.max_delay, f.max_delay) order by u.ord),
         array_agg(coalesce(st.timeout, f.timeout) order by u.ord),
         array_agg(r.priority order by u.ord),
         array_agg(st.concurrency_limit is not null order by u.ord),
         array_agg(r.attempt_floor order by u.ord)
    into queues, delays, max_attempts, base_delays, max_delays, timeouts, priorities, keyed,
         floors
    from unnest(runs, flows, steps) with ordinality as u(run_id, flow_slug, step_slug, ord)
    join switchyard.steps st on st.flow_slug = u.flow_slug and st.step_slug = u.step_slug
    join switchyard.flows f on f.flow_slug = u.flow_slug
    join switchyard.runs r on r.run_id = u.run_id;
  for q in
    select g.queue_name, g.start_delay, array_agg(g.ord::int order by g.ord) as ords,
           array_agg(switchyard._task_message(
                       g.run_id, g.flow_slug, g.step_slug, null, g.priority, g.start_delay,
                       case when g.keyed
                            then switchyard._concurrency_key(g.run_id, g.flow_slug, g.step_slug, 0)
                       end) order by g.ord) as bodies
      from (select u.queue_name, u.start_delay, u.run_id, u.flow_slug, u.step_slug, u.ord,
                   u.priority, u.keyed,
                   row_number() over (partition by u.queue_name order by u.ord)
                     - row_number() over (partition by u.queue_name, u.start_delay
                                          order by u.ord) as stretch
              from unnest(queues, delays, runs, flows, steps, priorities, keyed)
                     with ordinality as u(queue_name, start_delay, run_id, flow_slug, step_slug,
                                          priority, keyed, ord)) g
     group by g.queue_name, g.start_delay, g.stretch
     order by g.queue_name, min(g.ord)
  loop
    -- PGMQ numbers a batch's messages in the order given. The body (_task_message) is for
    -- humans and the read's order; claiming trusts only (queue_name, message_id).
    -- A rerun run's tasks count their attempts on from its attempt floor (rerun_run); 0 else.
    insert into switchyard.step_tasks (run_id, step_slug, flow_slug, queue_name, message_id,
                                       attempts_count, max_attempts, base_delay, max_delay,
                                       timeout)
    select runs[o.ord], steps[o.ord], flows[o.ord], q.queue_name, b.msg_id, floors[o.ord],
           floors[o.ord] + max_attempts[o.ord], base_delays[o.ord], max_delays[o.ord],
           timeouts[o.ord]
      from (select m.msg_id, row_number() over (order by m.msg_id) as i
              from pgmq.send_batch(q.queue_name, q.bodies, q.start_delay) as m(msg_id)) b
      join unnest(q.ords) with ordinality as o(ord, i) on o.i = b.i;
  end loop;
  return cardinality(runs);
end
$$;
