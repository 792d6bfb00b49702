-- Completion and failure of claimed tasks. Each is accepted only from the attempt
-- that holds the task, so a late answer from a worker whose task was recovered
-- and claimed again changes nothing.

-- Completes a batch of tasks in one call and one transaction: a busy worker sends
-- the tasks that finished while its previous write was in flight. Each item
-- {run_id, step_slug, attempt, output} is accepted only from the attempt holding
-- the task (status started); a task listed twice is completed once. Returns one row
-- per item, in the order given: whether it was accepted.
--
-- Set-based, so the cost per task falls with the batch size. Tasks are locked in
-- (queue, message id) order, as start_tasks locks them, then their runs in run
-- order, so neither concurrent batches nor claims can deadlock with it.
-- Index probes only, as in start_tasks (see there): a cached generic plan of its array
-- joins degraded in a worker's long-lived session as the tables grew.
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
  select coalesce(array_agg(x.ord order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.run_id order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.step_slug order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.flow_slug order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.output order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.queue_name order by x.run_id, x.step_slug), '{}'),
         coalesce(array_agg(x.message_id order by x.run_id, x.step_slug), '{}')
    into acc_ords, acc_runs, acc_steps, acc_flows, acc_outputs, acc_queues, acc_messages
    from (
      select i.ord, t.run_id, t.step_slug, t.flow_slug, i.output, t.queue_name, t.message_id,
             t.status, t.attempts_count, i.attempt
        from (select distinct on (e.run_id, e.step_slug) e.*
                from (select c.ord, (c.value ->> 'run_id')::uuid as run_id,
                             c.value ->> 'step_slug' as step_slug,
                             (c.value ->> 'attempt')::int as attempt,
                             coalesce(c.value -> 'output', 'null') as output
                        from jsonb_array_elements(completions) with ordinality as c(value, ord)) e
               order by e.run_id, e.step_slug, e.ord) i
        join switchyard.step_tasks t on t.run_id = i.run_id and t.step_slug = i.step_slug
       order by t.queue_name, t.message_id
         for update of t
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

-- Completes one task: a batch of one (see complete_tasks).
create or replace function switchyard.complete_task(
  run_id uuid, step_slug text, attempt int, output jsonb
)
returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  select c.ok from switchyard.complete_tasks(jsonb_build_array(jsonb_build_object(
    'run_id', complete_task.run_id, 'step_slug', complete_task.step_slug,
    'attempt', complete_task.attempt, 'output', coalesce(complete_task.output, 'null')))) c
$$;

-- Final failure of a task: the step and the run fail, and the run's other queued
-- messages are archived (their tasks become stale).
create or replace function switchyard._fail_run(task switchyard.step_tasks, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  other record;
begin
  update switchyard.step_tasks t
     set status = 'failed', failed_at = now(), error = error_text
   where t.run_id = task.run_id and t.step_slug = task.step_slug;
  perform pgmq.archive(task.queue_name, task.message_id);
  update switchyard.step_states ss
     set status = 'failed', failed_at = now()
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug;
  update switchyard.runs r
     set status = 'failed', failed_at = now(),
         error = format('step %s failed after %s attempt(s): %s', task.step_slug, task.attempts_count, error_text)
   where r.run_id = task.run_id and r.status = 'started';
  for other in
    select t.queue_name, t.message_id from switchyard.step_tasks t
     where t.run_id = task.run_id and t.status = 'queued'
  loop
    perform pgmq.archive(other.queue_name, other.message_id);
  end loop;
end
$$;

-- A failed attempt: retried after min(base_delay * 2^(attempt - 1), max_delay) seconds
-- while attempts remain (the same message becomes visible again), else the run fails.
-- The exponent stops at 40: base_delay <= 86400 < 2^17, so the product stays below 2^57
-- (no bigint overflow at any attempt), and 2^40 s is beyond every accepted max_delay
-- (at most 604800), so the cap is unchanged by it.
create or replace function switchyard.fail_task(
  run_id uuid, step_slug text, attempt int, error_message text
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
     where t.run_id = task.run_id and t.step_slug = task.step_slug;
    perform pgmq.set_vt(task.queue_name, task.message_id, delay_seconds);
    return 'retrying';
  end if;
  perform switchyard._fail_run(task, error_text);
  return 'failed';
end
$$;

-- How long a queued task must have been queued (or last claimed) before the stall sweep
-- treats its missing message as lost, and how often one queue is searched for lost messages.
-- The kit sends a task's message in the transaction that queues the task, so a queued task
-- without its message means someone removed it outside the kit (pgmq.delete, pgmq.archive,
-- purge_queue, a partition dropped by retention); the wait only keeps the search rare and far
-- from anything in flight.
create or replace function switchyard.lost_message_grace_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 60 $$;

-- Stall recovery: started tasks whose worker is gone or no longer runs (stopped, or
-- stopped heart-beating: switchyard._worker_running), or that overran timeout + margin,
-- go back to queued and become visible at once; a task that has used all its attempts
-- fails instead (bounded). The helper is inlined: the plan is the same as with the
-- conditions written out (a bitmap scan of step_tasks_live for the queue's started tasks).
-- Each worker is judged by the heartbeat window it registered with
-- (workers.heartbeat_window_seconds); no caller passes one, so no caller can make a live
-- worker's healthy tasks look stalled (docs/ARCHITECTURE.md §5.6).
--
-- Lost messages: at most once per lost_message_grace_seconds() per queue (one sweep takes
-- the queue row, others skip it), queued tasks of the queue whose message is no longer in
-- it, queued or last claimed longer ago than that, get a new message (visible at once, the
-- same hint body) and its id is recorded; no attempt is used. The search reads PGMQ's
-- queue table (named by pgmq.format_table_name, as _hide_messages does) by primary key.
-- Returns the stalled tasks recovered plus the lost messages sent again.
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
    for task in execute format(
      'select t.* from switchyard.step_tasks t
        where t.queue_name = $1 and t.status = ''queued''
          and greatest(t.queued_at, coalesce(t.started_at, t.queued_at))
                <= now() - make_interval(secs => $2)
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
      select t.run_id, t.step_slug from switchyard.step_tasks t
       where t.worker_id = release_tasks.worker_id and t.status = 'started'
       order by t.queue_name, t.message_id
         for update of t
    ),
    back as (
      update switchyard.step_tasks t
         set status = 'queued', attempts_count = t.attempts_count - 1, worker_id = null
        from held h
       where t.run_id = h.run_id and t.step_slug = h.step_slug
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
