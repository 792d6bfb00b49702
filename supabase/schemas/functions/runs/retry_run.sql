-- Retries a failed run: its failed steps are queued again with fresh attempts and the run
-- is started again, so it continues where it stopped; completed steps are not run again.
-- Holding the row locks of the run's tasks and then the run, in one transaction:
--   - the run becomes 'started' again (its error and failed_at are cleared);
--   - a failed step with tasks becomes 'started'; one that failed without a task (an unmet
--     condition with whenUnmet 'fail', a map without an array) becomes 'created', so
--     _start_ready_steps decides it again;
--   - in every started step, each task no worker is running is queued again on its queue
--     snapshot with a new message (an old message still in the queue is archived first):
--     failed, skipped and queued tasks (the failure archived their messages). A completed
--     task whose answer came after the run had failed was not counted: then the step's
--     completed tasks run again too, and the step waits for all of its tasks;
--   - each queued task gets a fresh budget of attempts: max_attempts becomes attempts_count
--     plus the step's maxAttempts. Attempt numbers keep counting, so a late answer of an
--     earlier attempt is still ignored;
--   - tasks a worker is running are left alone: they complete as usual now that the run is
--     started, or stall recovery requeues them.
--   - a flow step whose child run ended meanwhile is examined again (_begin_child).
-- Returns the number of tasks queued again. A run that is not failed is refused (55000).
create or replace function switchyard.retry_run(run_id uuid)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  step record;
  task record;
  msg_id bigint;
  queued int := 0;
begin
  -- The run's tasks first, in (queue, message id) order, then the run: the order in which
  -- start_tasks and complete_tasks lock them, so a retry cannot deadlock with either.
  perform 1 from switchyard.step_tasks t where t.run_id = retry_run.run_id
    order by t.queue_name, t.message_id for update;
  select * into run from switchyard.runs r where r.run_id = retry_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', retry_run.run_id::text, format(
      'retry_run: run %s does not exist', coalesce(retry_run.run_id::text, 'null')));
  end if;
  if run.status <> 'failed' then
    perform switchyard._refuse('55000', 'run_not_failed', 'run_id', run.run_id::text, format(
      'retry_run: run %s is %s; only a failed run can be retried', run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  -- A traced run whose span was recorded at its end gets a span for its new life, a child of
  -- that one (docs/design/observability.md#metrics-traces-and-charts): its trace context becomes
  -- the recorded span's, so
  -- run_span_context derives a new span id, which its new tasks and child runs name.
  update switchyard.runs r
     set status = 'started', failed_at = null, error = null,
         trace_context = case when r.run_span_taken
                              then switchyard.run_span_context(r.run_id, r.trace_context)
                              else r.trace_context end,
         span_started_at = case when r.run_span_taken then switchyard.clock_now()
                                else r.span_started_at end,
         run_span_taken = false
   where r.run_id = run.run_id;
  update switchyard.step_states ss
     set status = case when exists (select 1 from switchyard.step_tasks t
                                     where t.run_id = ss.run_id and t.step_slug = ss.step_slug)
                       then 'started' else 'created' end,
         failed_at = null
   where ss.run_id = run.run_id and ss.status = 'failed';
  for step in
    select ss.step_slug, ss.remaining_tasks, st.step_type, st.step_index,
           coalesce(st.max_attempts, f.max_attempts) as budget,
           count(t.*)::int as total,
           count(t.*) filter (where t.status = 'completed')::int as completed
      from switchyard.step_states ss
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
      join switchyard.flows f on f.flow_slug = ss.flow_slug
      join switchyard.step_tasks t on t.run_id = ss.run_id and t.step_slug = ss.step_slug
     where ss.run_id = run.run_id and ss.status = 'started'
     group by ss.step_slug, ss.remaining_tasks, st.step_type, st.step_index, st.max_attempts,
              f.max_attempts
     order by st.step_index
  loop
    -- Answers accepted while the run was started counted the step down; more completed tasks
    -- than that means some answer came too late: run the step's completed tasks again too.
    if step.completed > step.total - step.remaining_tasks then
      update switchyard.step_states ss set remaining_tasks = step.total
       where ss.run_id = run.run_id and ss.step_slug = step.step_slug;
    end if;
    for task in
      select t.task_index, t.queue_name, t.message_id, t.attempts_count
        from switchyard.step_tasks t
       where t.run_id = run.run_id and t.step_slug = step.step_slug and t.status <> 'started'
         and (t.status <> 'completed' or step.completed > step.total - step.remaining_tasks)
       order by t.task_index
    loop
      -- A message of the task may still be in the queue (a stalled task made visible after
      -- the run failed, not read since): archive it, so only the new one names the task.
      perform pgmq.archive(task.queue_name, task.message_id);
      select s into msg_id from pgmq.send(
        task.queue_name,
        switchyard._task_message(
          run.run_id, run.flow_slug, step.step_slug, nullif(task.task_index, 0), run.priority, 0,
          switchyard._concurrency_key(run.run_id, run.flow_slug, step.step_slug, task.task_index)),
        0) s;
      update switchyard.step_tasks t
         set status = 'queued', message_id = msg_id, worker_id = null,
             max_attempts = task.attempts_count + step.budget,
             queued_at = switchyard.clock_now(), failed_at = null, completed_at = null, output = null
       where t.run_id = run.run_id and t.step_slug = step.step_slug
         and t.task_index = task.task_index;
      -- A task that failed on the version its run moved off (move_run) runs on the run's now.
      perform switchyard._follow_run_flow(run.run_id, step.step_slug, task.task_index, 0);
      queued := queued + 1;
    end loop;
  end loop;
  -- A flow step whose child run ended while this run was failed (_child_run_ended leaves a
  -- parent that is not started alone) is still started: it is examined again as when it began
  -- (_begin_child): a completed child gives its output, a failed one is retried, a cancelled
  -- one fails the step.
  for step in
    select ss.step_slug, ss.flow_slug
      from switchyard.step_states ss
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
      join switchyard.child_runs c on c.parent_run_id = ss.run_id and c.parent_step = ss.step_slug
      join switchyard.runs cr on cr.run_id = c.run_id
     where ss.run_id = run.run_id and ss.status = 'started' and st.step_type = 'flow'
       and cr.status in ('completed', 'failed', 'cancelled')
     order by st.step_index
  loop
    exit when not exists (select 1 from switchyard.runs r
                           where r.run_id = run.run_id and r.status = 'started');
    perform switchyard._begin_child(run.run_id, step.flow_slug, step.step_slug);
  end loop;
  perform switchyard._start_ready_steps(run.run_id);
  perform switchyard._complete_run_if_done(run.run_id);
  return queued;
end
$$;
