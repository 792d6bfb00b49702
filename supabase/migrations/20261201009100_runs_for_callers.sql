-- Runs for callers (docs/ARCHITECTURE.md §5.8, §13), after release 0.1.0: who a run is for
-- (runs.owner), a cancelled end (runs.cancelled_at, status 'cancelled' for runs and steps),
-- idempotent starts with a caller-chosen run id, a failure that leaves a cancelled step
-- cancelled, and run_status with the new fields. Released migrations never change, so the
-- SQL functions below replace their released definitions whole.

alter table switchyard.runs add column owner uuid;            -- who it is for (start_flow's owner)
alter table switchyard.runs add column cancelled_at timestamptz;
-- runs.error holds why it failed, or why it was cancelled ('cancelled: <reason>').
alter table switchyard.runs drop constraint runs_status_check;
alter table switchyard.runs add constraint runs_status_check
  check (status in ('started', 'completed', 'failed', 'cancelled'));
alter table switchyard.step_states drop constraint step_states_status_check;
alter table switchyard.step_states add constraint step_states_status_check
  check (status in ('created', 'started', 'completed', 'failed', 'cancelled'));

-- start_flow gains `run_id` and `owner`: a new signature, so the released one goes first
-- (two overloads would make a call with two arguments ambiguous).
drop function switchyard.start_flow(text, jsonb);

-- Starts a run of a concrete flow or of an alias's active version.
--
-- `run_id` (optional) makes the start idempotent: the caller chooses the id, and a second
-- start with the same id returns the existing run and starts nothing. The same id with
-- another input, or naming another flow, is refused (23505). Two concurrent starts with one
-- id create one run: the second insert waits for the first on the primary key and then
-- finds its row (docs/ARCHITECTURE.md §5.8).
--
-- `owner` (optional) records who the run is for (runs.owner, copied to its events for
-- row-level security, docs/ARCHITECTURE.md §13); a repeated start with another owner is
-- refused like another input.
create or replace function switchyard.start_flow(
  flow_or_alias text, input jsonb, run_id uuid default null, owner uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  concrete text;
  new_run uuid;
  existing record;
begin
  if input is null then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): input must be a JSON value, got SQL NULL (use ''null''::jsonb for JSON null)',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'input_sql_null', 'argument', 'input', 'value', null,
        'flow_or_alias', left(flow_or_alias, 200))::text;
  end if;
  concrete := switchyard.resolve_flow(flow_or_alias);
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner)
  select coalesce(start_flow.run_id, gen_random_uuid()), concrete, flow_or_alias, input, count(*),
         start_flow.owner
    from switchyard.steps st where st.flow_slug = concrete
  on conflict on constraint runs_pkey do nothing
  returning runs.run_id into new_run;
  if new_run is null then
    -- The id exists (committed, or committed while this insert waited for it): the same
    -- start again returns it; anything else under that id is refused.
    select r.flow_slug, r.started_as, r.input, r.owner into existing
      from switchyard.runs r where r.run_id = start_flow.run_id;
    -- Another owner first: it learns nothing of the run (neither its flow nor its input).
    if existing.owner is distinct from start_flow.owner then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started for another owner: '
        'a run id names one start; use a new id for another owner',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_owner', 'argument', 'owner', 'value', start_flow.owner::text,
          'run_id', start_flow.run_id)::text;
    end if;
    if existing.flow_slug <> concrete and existing.started_as <> flow_or_alias then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s already belongs to a run of flow %s (started as %s): '
        'a run id names one start; use a new id for another flow',
        to_json(flow_or_alias)::text, start_flow.run_id, to_json(existing.flow_slug)::text,
        to_json(existing.started_as)::text),
        detail = jsonb_build_object(
          'rule', 'run_id_other_flow', 'argument', 'run_id', 'value', start_flow.run_id::text,
          'flow_or_alias', left(flow_or_alias, 200), 'existing_flow_slug', existing.flow_slug,
          'existing_started_as', existing.started_as)::text;
    end if;
    if existing.input <> input then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started with another input: '
        'a run id names one start; use a new id for another input',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_input', 'argument', 'input', 'value', left(input::text, 200),
          'run_id', start_flow.run_id, 'existing_input', left(existing.input::text, 200))::text;
    end if;
    return start_flow.run_id;
  end if;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select new_run, st.flow_slug, st.step_slug, st.deps_count
    from switchyard.steps st where st.flow_slug = concrete;
  perform switchyard._start_ready_steps(new_run);
  return new_run;
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
  -- A step of a cancelled run stays cancelled (cancel_run, docs/ARCHITECTURE.md §13).
  update switchyard.step_states ss
     set status = 'failed', failed_at = now()
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug and ss.status <> 'cancelled';
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

create or replace function switchyard.run_status(run_id uuid)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'run_id', r.run_id, 'flow_slug', r.flow_slug, 'started_as', r.started_as,
    'status', r.status, 'output', r.output, 'error', r.error,
    'started_at', r.started_at, 'completed_at', r.completed_at, 'failed_at', r.failed_at,
    'cancelled_at', r.cancelled_at, 'owner', r.owner,
    'steps', (select coalesce(jsonb_agg(jsonb_build_object(
                'step_slug', ss.step_slug, 'status', ss.status,
                'queue_name', t.queue_name, 'attempts', coalesce(t.attempts_count, 0),
                'error', t.error) order by st.step_index), '[]')
                from switchyard.step_states ss
                join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                left join switchyard.step_tasks t on t.run_id = ss.run_id and t.step_slug = ss.step_slug
               where ss.run_id = r.run_id))
  from switchyard.runs r where r.run_id = run_status.run_id
$$;
