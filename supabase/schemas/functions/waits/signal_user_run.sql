-- Signals a wait step of a run from a browser (docs/design/client.md): what signal_run does,
-- for a signed-in user (auth.uid()) and only in a run they own (runs.owner), and only for a
-- step an operator listed for the run's alias in user_signal_steps. Refused with 42501 (PostgREST
-- answers 403), changing nothing: no signed-in user (not_signed_in); a run that does not exist
-- or is not theirs, alike so that another user's run ids are not revealed (run_not_owned); a
-- step not listed (step_not_allowed). A payload that does not match the step's declared
-- payload_schema is refused with 22023 payload_invalid (PostgREST answers 400), naming the path
-- and the rule. Then signal_run's own refusals and outcomes apply
-- ('delivered', 'kept', 'duplicate'). Granted to no one: the operator grants EXECUTE to
-- authenticated (the opt-in).
create or replace function switchyard.signal_user_run(
  run_id uuid, step_slug text, payload jsonb, key text default null
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  user_id uuid;
  run_flow text;
  run_alias text;
  schema jsonb;
  problem text;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    perform switchyard._refuse('42501', 'not_signed_in', 'run_id', signal_user_run.run_id::text,
      format(
      'signal_user_run(%s, %s): no signed-in user (auth.uid() is null): sign in, or signal '
      'from a trusted server with signal_run', coalesce(signal_user_run.run_id::text, 'null'),
      switchyard._clip(signal_user_run.step_slug)));
  end if;
  select r.flow_slug into run_flow from switchyard.runs r
   where r.run_id = signal_user_run.run_id and r.owner = user_id;
  if not found then
    perform switchyard._refuse('42501', 'run_not_owned', 'run_id', signal_user_run.run_id::text,
      format(
      'signal_user_run(%s, %s): run %s is not one of your runs: a signed-in user signals only '
      'runs whose owner they are (runs.owner = auth.uid())',
      coalesce(signal_user_run.run_id::text, 'null'), switchyard._clip(signal_user_run.step_slug),
      coalesce(signal_user_run.run_id::text, 'null')));
  end if;
  select m.alias into run_alias from switchyard.alias_members m where m.flow_slug = run_flow;
  select u.payload_schema into schema from switchyard.user_signal_steps u
   where u.alias = coalesce(run_alias, run_flow) and u.step_slug = signal_user_run.step_slug;
  if not found then
    perform switchyard._refuse('42501', 'step_not_allowed', 'step_slug', signal_user_run.step_slug,
      format(
      'signal_user_run(%s, %s): signed-in users may not signal step %s of alias %s: an '
      'operator allows it with insert into switchyard.user_signal_steps (alias, step_slug)',
      signal_user_run.run_id, switchyard._clip(signal_user_run.step_slug),
      switchyard._clip(signal_user_run.step_slug), to_json(coalesce(run_alias, run_flow))::text),
      context => jsonb_build_object('alias', coalesce(run_alias, run_flow)));
  end if;
  -- The payload a browser sends is checked against what the operator declared for the step,
  -- before signal_run keeps it (a refused payload uses up nothing).
  if schema is not null then
    problem := switchyard._payload_problem(coalesce(payload, 'null'), schema, 'payload');
    if problem is not null then
      perform switchyard._refuse('22023', 'payload_invalid', 'payload',
        switchyard._clip(coalesce(payload, 'null')::text, 200), format(
        'signal_user_run(%s, %s): %s (the payload_schema of step %s of alias %s)',
        signal_user_run.run_id, switchyard._clip(signal_user_run.step_slug), problem,
        to_json(signal_user_run.step_slug)::text, to_json(coalesce(run_alias, run_flow))::text),
        context => jsonb_build_object('problem', problem, 'run_id', signal_user_run.run_id,
          'step_slug', signal_user_run.step_slug));
    end if;
  end if;
  return switchyard.signal_run(signal_user_run.run_id, signal_user_run.step_slug, payload, key);
end
$$;
