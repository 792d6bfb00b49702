-- Triggers (they name functions, so they come after them).

-- Limits (docs/design/limits.md): flow input and step output in bytes of their JSON text,
-- function names in characters. Checked by triggers, so every path that writes them
-- (start_flow, complete_tasks and complete_task, register_function and register_worker) is
-- covered without a second copy of those SQL functions.
create trigger runs_input_limit before insert or update of input on switchyard.runs
  for each row execute function switchyard._check_run_input();

create trigger step_tasks_output_limit before update of output on switchyard.step_tasks
  for each row when (pg_column_size(new.output) > 65536 / 6)
  execute function switchyard._check_task_output();

-- A declared signal payload schema is one the check understands (docs/design/client.md).
create trigger user_signal_steps_schema before insert or update of payload_schema
  on switchyard.user_signal_steps
  for each row execute function switchyard._check_user_signal_step();

-- Each failed attempt is a row of switchyard.failed_attempts (the metrics' failures,
-- docs/design/observability.md): only
-- an update that sets last_failed_at of a started task (its attempt failing) calls it, never a
-- claim or a completion.
create trigger step_tasks_failed_attempt after update of last_failed_at on switchyard.step_tasks
  for each row when (old.status = 'started' and new.last_failed_at is not null
                     and new.last_failed_at is distinct from old.last_failed_at)
  execute function switchyard._record_failed_attempt();

create trigger worker_functions_rules before insert or update of function_name, queue_name
  on switchyard.worker_functions
  for each row execute function switchyard._check_worker_function();

-- Run and step events (docs/design/client.md): every transition of a run or of one of its
-- steps is a row in switchyard.run_events and a NOTIFY, written here so no SQL function that
-- moves a run or a step has to remember to write them. Statement triggers with transition
-- tables: one call and one insert per statement, whatever its number of rows (a completion
-- batch moves ten steps and ten runs in two statements); rows whose status did not change
-- write nothing. (Transition tables cannot be limited to a column, so every update of these
-- tables calls them once.)
create trigger runs_event_insert after insert on switchyard.runs
  referencing new table as switchyard_new_runs
  for each statement execute function switchyard._run_event();

create trigger runs_event_status after update on switchyard.runs
  referencing old table as switchyard_old_runs new table as switchyard_new_runs
  for each statement execute function switchyard._run_event();

create trigger step_states_event_insert after insert on switchyard.step_states
  referencing new table as switchyard_new_steps
  for each statement execute function switchyard._step_event();

create trigger step_states_event_status after update on switchyard.step_states
  referencing old table as switchyard_old_steps new table as switchyard_new_steps
  for each statement execute function switchyard._step_event();

-- A child run's end ends its parent's flow step (docs/design/waits.md): one join of the
-- statement's ended runs with child_runs by key; nothing more for every other run.
create trigger runs_child_ended after update on switchyard.runs
  referencing old table as switchyard_old_runs new table as switchyard_new_runs
  for each statement execute function switchyard._child_run_ended();

-- Routines created later in schema switchyard stay private (docs/design/supabase.md,
-- Privileges): an event trigger takes EXECUTE from PUBLIC, anon and authenticated on every
-- routine created in schema switchyard, whoever creates it. Creating an event trigger needs a
-- superuser, or Supabase's postgres role (supautils); elsewhere this notes that it is skipped,
-- and anon and authenticated still have no USAGE on the schema.
do $$
begin
  if not exists (select 1 from pg_event_trigger where evtname = 'switchyard_keep_routines_private') then
    create event trigger switchyard_keep_routines_private on ddl_command_end
      when tag in ('CREATE FUNCTION', 'CREATE PROCEDURE', 'CREATE AGGREGATE')
      execute function switchyard._keep_routines_private();
  end if;
exception when insufficient_privilege then
  raise notice 'switchyard: no event trigger (creating one needs a superuser or Supabase''s '
    'postgres role); routines created later in schema switchyard keep PostgreSQL''s default '
    'EXECUTE for PUBLIC, but anon and authenticated have no USAGE on the schema';
end
$$;
