-- Pauses a started run for an operator (docs/design/rerun.md): none of its tasks is claimed
-- until resume_run (a claim classifies them 'paused' and hides their messages); tasks a worker
-- runs finish and their successors are queued but not claimed. Waits, sleeps and the run's
-- deadline keep their rules (a paused run whose deadline passes is cancelled). `actor` (default:
-- the session's role) is recorded with the reason in the 'paused' event. Returns true when it
-- paused the run, false when it was paused already. A run that is not started is refused (55000
-- run_not_started); an unknown one 22023 run_unknown.
create or replace function switchyard.pause_run(
  run_id uuid, reason text default null, actor text default null
)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
begin
  select * into run from switchyard.runs r where r.run_id = pause_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', pause_run.run_id::text, format(
      'pause_run: run %s does not exist', coalesce(pause_run.run_id::text, 'null')));
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'pause_run: run %s is %s; only a started run can be paused', run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  return switchyard._pause_run(run.run_id,
    coalesce(nullif(btrim(reason), ''), 'paused by an operator'),
    coalesce(actor, session_user::text));
end
$$;
