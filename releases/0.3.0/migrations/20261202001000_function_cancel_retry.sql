-- Cancelling and retrying runs, and the opt-in start for signed-in users
-- (docs/ARCHITECTURE.md §14). The 'cancelled' statuses and runs.owner are in
-- 20261202000800; every transition here is a run event (20261202000900).

-- Cancels a started run. In one transaction, holding the run's row lock (which
-- complete_tasks and fail_task take too, so none of them interleaves):
--   - the messages of its queued tasks are archived (nothing of the run stays visible) and
--     those tasks become 'cancelled';
--   - its created and started steps become 'cancelled';
--   - the run becomes 'cancelled' with the reason in `error`.
-- Tasks a worker is running finish: complete_tasks archives their message and records the
-- task but, the run being no longer started, changes no step and starts no successor;
-- fail_task archives it and leaves the cancelled step alone. A cancelled run never starts
-- another step. Returns true when it cancelled the run, false when it already was
-- cancelled (the first reason is kept). A completed or failed run is refused (55000).
create or replace function switchyard.cancel_run(run_id uuid, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
begin
  if reason is null or btrim(reason) = '' then
    raise exception using errcode = '22023', message = format(
      'cancel_run(%s): reason %s is invalid: say why the run is cancelled',
      coalesce(cancel_run.run_id::text, 'null'), coalesce(to_json(reason)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'reason_missing', 'argument', 'reason', 'value', left(reason, 200),
        'run_id', cancel_run.run_id)::text;
  end if;
  select * into run from switchyard.runs r where r.run_id = cancel_run.run_id for update;
  if not found then
    raise exception using errcode = '22023', message = format(
      'cancel_run: run %s does not exist', coalesce(cancel_run.run_id::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'run_unknown', 'argument', 'run_id', 'value', cancel_run.run_id::text)::text;
  end if;
  if run.status = 'cancelled' then
    return false;
  end if;
  if run.status <> 'started' then
    raise exception using errcode = '55000', message = format(
      'cancel_run: run %s is %s; only a started run can be cancelled',
      run.run_id, run.status),
      detail = jsonb_build_object(
        'rule', 'run_not_started', 'argument', 'run_id', 'value', run.run_id::text,
        'status', run.status)::text;
  end if;
  -- The queued tasks before their messages, in (queue, message id) order, as start_tasks
  -- locks them (a task, then its message): a claim in flight cannot deadlock with this.
  perform 1 from switchyard.step_tasks t
   where t.run_id = run.run_id and t.status = 'queued'
   order by t.queue_name, t.message_id
     for update;
  -- Their messages, one archive per queue (as a failure archives them, 20261202000700).
  perform switchyard._archive_queued(run.run_id);
  -- Cancelled, not queued: nothing that looks for queued work (a sweep that re-sends a
  -- queued task's missing message, drain counts) finds them.
  update switchyard.step_tasks t
     set status = 'cancelled', worker_id = null
   where t.run_id = run.run_id and t.status = 'queued';
  update switchyard.step_states ss
     set status = 'cancelled'
   where ss.run_id = run.run_id and ss.status in ('created', 'started');
  update switchyard.runs r
     set status = 'cancelled', cancelled_at = now(),
         error = format('cancelled: %s', left(reason, 4000))
   where r.run_id = run.run_id;
  return true;
end
$$;

-- Stall recovery (docs/ARCHITECTURE.md §5.6), as in 20261202000700, except that a stalled task
-- of a cancelled run (its worker died while the run was cancelled) is cancelled instead of
-- queued again. The run is read by its key.
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
    -- A task of a cancelled run is not run again: its message is archived, the task is
    -- cancelled like the run's queued tasks (cancel_run), and nothing of the run stays visible.
    -- The run is locked (task, then run: the order of fail_task), so a cancel cannot commit
    -- between this test and the requeue below.
    if (select r.status from switchyard.runs r where r.run_id = task.run_id for update)
         = 'cancelled' then
      update switchyard.step_tasks t
         set status = 'cancelled', worker_id = null
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform pgmq.archive(queue, task.message_id);
      recovered := recovered + 1;
      continue;
    end if;
    if task.attempts_count >= task.max_attempts then
      perform switchyard._exhaust_task(task, format('stalled on attempt %s (worker %s stopped or timed out)',
                                                    task.attempts_count, task.worker_id));
    else
      update switchyard.step_tasks t
         set status = 'queued', worker_id = null,
             error = format('stalled on attempt %s; recovered', task.attempts_count)
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
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
                           'step_slug', task.step_slug)
          || case when task.task_index > 0 then jsonb_build_object('task_index', task.task_index)
                  else '{}'::jsonb end,
        0) s;
      update switchyard.step_tasks t set message_id = new_id
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      recovered := recovered + 1;
    end loop;
  end if;
  return recovered;
end
$$;

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
    raise exception using errcode = '22023', message = format(
      'retry_run: run %s does not exist', coalesce(retry_run.run_id::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'run_unknown', 'argument', 'run_id', 'value', retry_run.run_id::text)::text;
  end if;
  if run.status <> 'failed' then
    raise exception using errcode = '55000', message = format(
      'retry_run: run %s is %s; only a failed run can be retried', run.run_id, run.status),
      detail = jsonb_build_object(
        'rule', 'run_not_failed', 'argument', 'run_id', 'value', run.run_id::text,
        'status', run.status)::text;
  end if;
  update switchyard.runs r
     set status = 'started', failed_at = null, error = null
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
        jsonb_build_object('run_id', run.run_id, 'flow_slug', run.flow_slug,
                           'step_slug', step.step_slug)
          || case when task.task_index > 0 then jsonb_build_object('task_index', task.task_index)
                  else '{}'::jsonb end,
        0) s;
      update switchyard.step_tasks t
         set status = 'queued', message_id = msg_id, worker_id = null,
             max_attempts = task.attempts_count + step.budget,
             queued_at = now(), failed_at = null, completed_at = null, output = null
       where t.run_id = run.run_id and t.step_slug = step.step_slug
         and t.task_index = task.task_index;
      queued := queued + 1;
    end loop;
  end loop;
  perform switchyard._start_ready_steps(run.run_id);
  return queued;
end
$$;

-- Aliases a signed-in user may start through start_user_run. Empty: nobody may, until an
-- operator inserts an alias (the opt-in of docs/ARCHITECTURE.md §14).
create table switchyard.user_start_aliases (
  alias text primary key,
  added_at timestamptz not null default now()
);

-- Starts a run of an allowed alias for the signed-in user (auth.uid(), Supabase's auth
-- schema): the run's owner is that user, so row-level security shows them its events.
-- Executable by nobody but the owner and the service role until an operator grants it
-- to `authenticated` (docs/ARCHITECTURE.md §14). Refused with 42501 without a signed-in
-- user or for an alias that is not in switchyard.user_start_aliases; everything else is
-- start_flow's (idempotent with a run id).
create or replace function switchyard.start_user_run(
  alias text, input jsonb, run_id uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  user_id uuid;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    raise exception using errcode = '42501', message = format(
      'start_user_run(%s): no signed-in user (auth.uid() is null): '
      'sign in, or start the run from a trusted server with start_flow',
      coalesce(to_json(start_user_run.alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'not_signed_in', 'argument', 'alias',
        'value', left(start_user_run.alias, 200))::text;
  end if;
  if not exists (select 1 from switchyard.user_start_aliases a
                  where a.alias = start_user_run.alias) then
    raise exception using errcode = '42501', message = format(
      'start_user_run(%s): signed-in users may not start this alias: '
      'an operator allows it with insert into switchyard.user_start_aliases',
      coalesce(to_json(start_user_run.alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'alias_not_allowed', 'argument', 'alias',
        'value', left(start_user_run.alias, 200))::text;
  end if;
  return switchyard.start_flow(start_user_run.alias, input, start_user_run.run_id, user_id);
end
$$;

-- Privileges as in the grants migration: nothing for PUBLIC, anon or authenticated (the
-- opt-in of docs/ARCHITECTURE.md §14 grants `authenticated` what it lists); the service role
-- may cancel, retry and start for users, and read the allowed aliases.
revoke all on switchyard.user_start_aliases from public;
revoke execute on function
  switchyard.cancel_run(uuid, text),
  switchyard.retry_run(uuid),
  switchyard.start_user_run(text, jsonb, uuid)
from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke all on switchyard.user_start_aliases from %I', role_name);
      execute format('revoke execute on function switchyard.cancel_run(uuid, text), '
                     'switchyard.retry_run(uuid), switchyard.start_user_run(text, jsonb, uuid) '
                     'from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant select, insert, delete on switchyard.user_start_aliases to service_role;
    grant execute on function
      switchyard.cancel_run(uuid, text),
      switchyard.retry_run(uuid),
      switchyard.start_user_run(text, jsonb, uuid)
    to service_role;
  end if;
end
$$;
