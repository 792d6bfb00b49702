-- Records a running task's progress (ctx.progress; docs/design/observability.md): one 'progress'
-- event of its run, in the run's event order, with the owner copied for row-level security and
-- the task's index and the JSON as its data, and a NOTIFY like every other event. Only while
-- `attempt` holds the task (started, that attempt) of a started run, else 55000
-- attempt_not_current or run_not_started. The JSON text is at most limit_value
-- ('max_progress_bytes') (22023 progress_too_large), and a task reports at most limit_value
-- ('progress_per_second') events in any window of one second from the window's first event
-- (PT429 progress_rate, the SQLSTATE of start_user_run's rate). A refusal records nothing.
-- Returns the event's id.
--
-- Locks the task and then its run, the order of complete_tasks: the run's lock numbers the event
-- after every event committed before it, as the triggers do.
create or replace function switchyard.report_progress(
  run_id uuid, step_slug text, task_index int, attempt int, data jsonb
)
returns bigint
language plpgsql
volatile
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  run switchyard.runs;
  size int := octet_length(data::text);
  max_bytes int := switchyard.limit_value('max_progress_bytes');
  per_second int := switchyard.limit_value('progress_per_second');
  counted int;
  id bigint;
begin
  if data is null then
    perform switchyard._refuse('22023', 'progress_null', 'data', null,
      'progress: the data is null: give a JSON value');
  end if;
  if size > max_bytes then
    perform switchyard._refuse('22023', 'progress_too_large', 'data', data::text, format(
      'progress of step %s is %s bytes of JSON, over the limit of %s bytes (max_progress_bytes): '
      'report counters or a short message, not the data', switchyard._clip(step_slug), size,
      max_bytes),
      context => jsonb_build_object('size', size, 'limit', max_bytes));
  end if;
  select * into task from switchyard.step_tasks t
   where t.run_id = report_progress.run_id and t.step_slug = report_progress.step_slug
     and t.task_index = report_progress.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    perform switchyard._refuse('55000', 'attempt_not_current', 'attempt', attempt::text, format(
      'progress: attempt %s of step %s (task %s) of run %s does not hold the task (%s)',
      attempt, switchyard._clip(step_slug), task_index, run_id,
      case when not found then 'no such task'
           else format('%s, attempt %s', task.status, task.attempts_count) end));
  end if;
  select * into run from switchyard.runs r where r.run_id = report_progress.run_id for update;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run_id::text, format(
      'progress: run %s is %s, not started: its events ended', run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  insert into switchyard.task_progress as p
         (run_id, step_slug, task_index, window_started_at, window_count)
  values (report_progress.run_id, report_progress.step_slug, report_progress.task_index, switchyard.clock_now(), 1)
  on conflict on constraint task_progress_pkey do update
    set window_started_at = case when p.window_started_at > switchyard.clock_now() - interval '1 second'
                                 then p.window_started_at else switchyard.clock_now() end,
        window_count = case when p.window_started_at > switchyard.clock_now() - interval '1 second'
                            then p.window_count + 1 else 1 end
  returning p.window_count into counted;
  if counted > per_second then
    perform switchyard._refuse('PT429', 'progress_rate', 'data', data::text, format(
      'progress of step %s (task %s) of run %s is over the limit of %s events per second '
      '(progress_per_second): report less often, e.g. every few percent', switchyard._clip(step_slug),
      task_index, run_id, per_second),
      context => jsonb_build_object('limit', per_second));
  end if;
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event, task_index, data)
  values (run.run_id, run.owner, task.flow_slug, task.step_slug, 'progress',
          report_progress.task_index, data)
  returning event_id into id;
  perform pg_notify('switchyard_run_events', run_id::text);
  return id;
end
$$;
