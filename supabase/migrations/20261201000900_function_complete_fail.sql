-- Completion and failure of claimed tasks. Each is accepted only from the attempt
-- that holds the task, so a late answer from a worker whose task was recovered
-- and claimed again changes nothing.

create or replace function switchyard.complete_task(
  run_id uuid, step_slug text, attempt int, output jsonb
)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  run switchyard.runs;
  remaining int;
begin
  select * into task from switchyard.step_tasks t
   where t.run_id = complete_task.run_id and t.step_slug = complete_task.step_slug
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    return false;
  end if;
  select * into run from switchyard.runs r where r.run_id = task.run_id for update;

  update switchyard.step_tasks t
     set status = 'completed', completed_at = now(), output = coalesce(complete_task.output, 'null')
   where t.run_id = task.run_id and t.step_slug = task.step_slug;
  perform pgmq.archive(task.queue_name, task.message_id);
  if run.status <> 'started' then
    return true;       -- the run ended meanwhile; record the task, start nothing
  end if;

  update switchyard.step_states ss
     set status = 'completed', completed_at = now(), output = coalesce(complete_task.output, 'null')
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - 1
    from switchyard.deps d
   where d.flow_slug = task.flow_slug and d.dep_slug = task.step_slug
     and ss.run_id = task.run_id and ss.step_slug = d.step_slug;
  update switchyard.runs r
     set remaining_steps = r.remaining_steps - 1
   where r.run_id = task.run_id
  returning r.remaining_steps into remaining;

  if remaining = 0 then
    -- The run's output: the outputs of its leaf steps (no step depends on them).
    update switchyard.runs r
       set status = 'completed', completed_at = now(),
           output = (select jsonb_object_agg(ss.step_slug, ss.output)
                       from switchyard.step_states ss
                      where ss.run_id = task.run_id
                        and not exists (select 1 from switchyard.deps d
                                         where d.flow_slug = task.flow_slug
                                           and d.dep_slug = ss.step_slug))
     where r.run_id = task.run_id;
  else
    perform switchyard._start_ready_steps(task.run_id);
  end if;
  return true;
end
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

-- A failed attempt: retried after base_delay * 2^(attempt - 1) seconds while
-- attempts remain (the same message becomes visible again), else the run fails.
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
    delay_seconds := least(task.base_delay::bigint * (2::bigint ^ (task.attempts_count - 1))::bigint, 86400)::int;
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

-- Stall recovery: started tasks whose worker stopped, stopped heart-beating, or
-- overran timeout + margin go back to queued and become visible at once; a task
-- that has used all its attempts fails instead (bounded).
create or replace function switchyard.recover_stalled(queue_name text, heartbeat_window_seconds int default 15)
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
begin
  for task in
    select t.* from switchyard.step_tasks t
      left join switchyard.workers w on w.worker_id = t.worker_id
     where t.queue_name = queue and t.status = 'started'
       and (t.started_at + make_interval(secs => t.timeout + switchyard.claim_margin_seconds()) < now()
            or w.worker_id is null
            or w.stopped_at is not null
            or w.last_heartbeat_at < now() - make_interval(secs => heartbeat_window_seconds))
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
  return recovered;
end
$$;
