-- The hot path probes by key (docs/ARCHITECTURE.md §5.7; issue 11). Claim, completion,
-- failure, successor start and run completion reach their rows through unique keys and test
-- status afterwards: a status condition a partial index of open rows could answer let the
-- planner read that whole index (every open state, started task or started run, dead entries
-- included) whenever statistics said it was nearly empty, as they do right after a burst of
-- work, until autoanalyze caught up. Each task now costs a fixed number of index probes,
-- whatever the number of open and finished runs (BENCHMARKS.md, figures 7 and 8).
--
-- A later migration than the released 0.1.0 files it changes, which stay as released.

-- No index of open step states by (flow, step): _start_ready_steps finds a run's created
-- states by the primary key's run_id prefix, and the planner combined that probe with a read
-- of every open state of the flow through this index. Coverage and drain reach open states
-- from the started runs instead (open_run_steps, below).
drop index if exists switchyard.step_states_open;

-- Steps routed to a queue that started runs may still reach: the step has not finished in
-- that run yet. Driven from the started runs (runs_flow_started), with one primary-key probe
-- per (run, step) (a LATERAL ... LIMIT 1, so no plan can join by scanning every state ever
-- recorded): the cost follows the open runs, never the history.
create or replace view switchyard.open_run_steps as
  select r.run_id, st.queue_name, st.flow_slug, st.step_slug
    from switchyard.runs r
    join switchyard.steps st on st.flow_slug = r.flow_slug
    cross join lateral (select ss.status from switchyard.step_states ss
                         where ss.run_id = r.run_id and ss.step_slug = st.step_slug
                         limit 1) ss
   where r.status = 'started' and ss.status in ('created', 'started');

-- Completion (docs/ARCHITECTURE.md §5.5): as released, but the listed tasks are found and
-- locked by two unique-key probes per item (see the comment in the body).
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
  acc_flows text[];
  acc_outputs jsonb[];
  acc_queues text[];
  acc_messages bigint[];
  live_runs uuid[];       -- runs of accepted items that are still started
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
  select coalesce(array_agg(x.ord order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.run_id order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.step_slug order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.flow_slug order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.output order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.queue_name order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.message_id order by x.run_id, x.step_slug), '{}')
    into acc_ords, acc_runs, acc_steps, acc_flows, acc_outputs, acc_queues, acc_messages
    from (
      select k.ord, l.run_id, l.step_slug, l.flow_slug, k.output, l.queue_name, l.message_id,
             l.status, l.attempts_count, k.attempt
        from (select i.ord, i.output, i.attempt, m.queue_name, m.message_id
                from (select distinct on (e.run_id, e.step_slug) e.*
                        from (select c.ord, (c.value ->> 'run_id')::uuid as run_id,
                                     c.value ->> 'step_slug' as step_slug,
                                     (c.value ->> 'attempt')::int as attempt,
                                     coalesce(c.value -> 'output', 'null') as output
                                from jsonb_array_elements(completions) with ordinality as c(value, ord)) e
                       order by e.run_id, e.step_slug, e.ord) i
                cross join lateral (select t.queue_name, t.message_id from switchyard.step_tasks t
                                     where t.run_id = i.run_id and t.step_slug = i.step_slug
                                     limit 1) m
               order by m.queue_name, m.message_id) k
        cross join lateral (select t.run_id, t.step_slug, t.flow_slug, t.queue_name, t.message_id,
                                   t.status, t.attempts_count
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
      from unnest(acc_runs, acc_steps, acc_outputs) as a(run_id, step_slug, output)
     where t.run_id = a.run_id and t.step_slug = a.step_slug;
    for q in
      select a.queue_name, array_agg(a.message_id order by a.message_id) as ids
        from unnest(acc_queues, acc_messages) as a(queue_name, message_id)
       group by a.queue_name order by a.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;

    -- A run that ended meanwhile records the task and starts nothing.
    update switchyard.step_states ss
       set status = 'completed', completed_at = now(), output = a.output
      from unnest(acc_runs, acc_steps, acc_outputs) as a(run_id, step_slug, output)
     where ss.run_id = a.run_id and ss.step_slug = a.step_slug and a.run_id = any (live_runs);
    update switchyard.step_states ss
       set remaining_deps = ss.remaining_deps - d.n
      from (select a.run_id, d.step_slug, count(*)::int as n
              from unnest(acc_runs, acc_steps, acc_flows) as a(run_id, step_slug, flow_slug)
              join switchyard.deps d on d.flow_slug = a.flow_slug and d.dep_slug = a.step_slug
             where a.run_id = any (live_runs)
             group by a.run_id, d.step_slug) d
     where ss.run_id = d.run_id and ss.step_slug = d.step_slug;
    -- Count the steps down; a run whose last step completed here completes in the same
    -- update, with the outputs of its leaf steps (no step depends on them) as its output.
    with counted as (
      update switchyard.runs r
         set remaining_steps = r.remaining_steps - c.n,
             status = case when r.remaining_steps = c.n then 'completed' else r.status end,
             completed_at = case when r.remaining_steps = c.n then now() end,
             output = case when r.remaining_steps = c.n then
                        (select jsonb_object_agg(ss.step_slug, ss.output)
                           from switchyard.step_states ss
                          where ss.run_id = r.run_id
                            and not exists (select 1 from switchyard.deps d
                                             where d.flow_slug = r.flow_slug
                                               and d.dep_slug = ss.step_slug))
                      end
        from (select a.run_id, count(*)::int as n from unnest(acc_runs) as a(run_id)
               where a.run_id = any (live_runs) group by a.run_id) c
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

-- Final failure: as released, but the run is locked by its key and its status tested in code,
-- and the run's other tasks are read by run_id and filtered in code.
create or replace function switchyard._fail_run(task switchyard.step_tasks, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  other record;
  run_status text;
begin
  update switchyard.step_tasks t
     set status = 'failed', failed_at = now(), error = error_text
   where t.run_id = task.run_id and t.step_slug = task.step_slug;
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
  -- The run's tasks by key, filtered here: a status condition in the query let the planner
  -- read every live task of every queue through step_tasks_live (docs/ARCHITECTURE.md §5.7).
  for other in
    select t.queue_name, t.message_id, t.status from switchyard.step_tasks t
     where t.run_id = task.run_id
  loop
    if other.status = 'queued' then
      perform pgmq.archive(other.queue_name, other.message_id);
    end if;
  end loop;
end
$$;

-- Stall recovery (docs/ARCHITECTURE.md §5.6): as released, but the lost-message search skips
-- the tasks of ended runs (see the comment above the search in the body).
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
      perform switchyard._fail_run(task, format('stalled on attempt %s (worker %s stopped or timed out)',
                                                task.attempts_count, task.worker_id));
    else
      update switchyard.step_tasks t
         set status = 'queued', worker_id = null,
             error = format('stalled on attempt %s; recovered', task.attempts_count)
       where t.run_id = task.run_id and t.step_slug = task.step_slug;
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
                           'step_slug', task.step_slug),
        0) s;
      update switchyard.step_tasks t set message_id = new_id
       where t.run_id = task.run_id and t.step_slug = task.step_slug;
      recovered := recovered + 1;
    end loop;
  end if;
  return recovered;
end
$$;
