-- Resumes a paused run (docs/design/rerun.md): every queued task's message is visible at
-- once (a retry's backoff still to run is cut short), and a task that ran out of attempts under
-- its step's whenExhausted 'pause' is queued again with a fresh budget of attempts (its attempt
-- numbers count on, so a late answer of an earlier attempt is still ignored): the retry of that
-- step. Records a 'resumed' event with `actor` (default: the session's role). Returns the number
-- of tasks queued again; 0 for a started run that is not paused. A run that is not started is
-- refused (55000 run_not_started); an unknown one 22023 run_unknown.
create or replace function switchyard.resume_run(run_id uuid, actor text default null)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  task record;
  q record;
  msg_id bigint;
  requeued int := 0;
begin
  select * into run from switchyard.runs r where r.run_id = resume_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', resume_run.run_id::text, format(
      'resume_run: run %s does not exist', coalesce(resume_run.run_id::text, 'null')));
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'resume_run: run %s is %s; only a started (paused) run can be resumed', run.run_id,
      run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  if run.paused_at is null then
    return 0;
  end if;
  update switchyard.runs r set paused_at = null, pause_reason = null where r.run_id = run.run_id;
  for task in
    select t.step_slug, t.task_index, t.queue_name, t.message_id, t.attempts_count,
           coalesce(st.max_attempts, f.max_attempts) as budget, st.concurrency_limit
      from switchyard.step_tasks t
      join switchyard.step_states ss on ss.run_id = t.run_id and ss.step_slug = t.step_slug
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
      join switchyard.flows f on f.flow_slug = ss.flow_slug
     where t.run_id = run.run_id and t.status = 'failed' and ss.status = 'started'
     order by t.queue_name, t.message_id
       for update of t
  loop
    select s into msg_id from pgmq.send(
      task.queue_name,
      switchyard._task_message(
        run.run_id, run.flow_slug, task.step_slug, nullif(task.task_index, 0), run.priority, 0,
        case when task.concurrency_limit is not null
             then switchyard._concurrency_key(run.run_id, run.flow_slug, task.step_slug,
                                              task.task_index) end),
      0) s;
    update switchyard.step_tasks t
       set status = 'queued', message_id = msg_id, worker_id = null,
           max_attempts = task.attempts_count + task.budget,
           queued_at = switchyard.clock_now(), failed_at = null
     where t.run_id = run.run_id and t.step_slug = task.step_slug
       and t.task_index = task.task_index;
    -- A task that ran out on the version its run moved off (move_run) runs on the run's now.
    perform switchyard._follow_run_flow(run.run_id, task.step_slug, task.task_index, 0);
    requeued := requeued + 1;
  end loop;
  for q in
    select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
      from switchyard.step_tasks t
     where t.run_id = run.run_id and t.status = 'queued'
     group by t.queue_name order by t.queue_name
  loop
    perform switchyard._hide_messages(q.queue_name, q.ids, array_fill(0, array[cardinality(q.ids)]));
  end loop;
  perform switchyard._run_note(run.run_id, 'resumed',
    jsonb_build_object('by', coalesce(actor, session_user::text), 'requeued', requeued));
  return requeued;
end
$$;
