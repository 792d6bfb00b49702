-- Reruns one of the signed-in user's own ended runs from a step (docs/design/rerun.md):
-- what rerun_run does, for a user (auth.uid()), only in a run they own (runs.owner), and only
-- when an operator listed the run's alias (the one alias_members records for its concrete flow,
-- or the flow's own slug for a flow started without one) in user_rerun_aliases. Refused with
-- 42501 (PostgREST answers 403), changing nothing: no signed-in user (not_signed_in); a run that
-- does not exist or is not theirs, alike, so that another user's run ids are not revealed
-- (run_not_owned); an alias not listed (alias_not_allowed). Then rerun_run's own refusals apply
-- (a started run, an unknown step, a patch that is not an object). The 'rerun' event records
-- `by` as 'user <id>'. Granted to no one: the operator grants EXECUTE to authenticated (the
-- opt-in). Security definer, so rerun_run itself stays ungranted to users.
create or replace function switchyard.rerun_user_run(
  run_id uuid, from_step text, input_patch jsonb default null
)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  user_id uuid;
  run_flow text;
  run_alias text;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    perform switchyard._refuse('42501', 'not_signed_in', 'run_id', rerun_user_run.run_id::text,
      format(
      'rerun_user_run(%s, %s): no signed-in user (auth.uid() is null): sign in, or rerun from a '
      'trusted server with rerun_run', coalesce(rerun_user_run.run_id::text, 'null'),
      switchyard._clip(rerun_user_run.from_step)));
  end if;
  select r.flow_slug into run_flow from switchyard.runs r
   where r.run_id = rerun_user_run.run_id and r.owner = user_id;
  if not found then
    perform switchyard._refuse('42501', 'run_not_owned', 'run_id', rerun_user_run.run_id::text,
      format(
      'rerun_user_run(%s, %s): run %s is not one of your runs: a signed-in user reruns only '
      'runs whose owner they are (runs.owner = auth.uid())',
      coalesce(rerun_user_run.run_id::text, 'null'), switchyard._clip(rerun_user_run.from_step),
      coalesce(rerun_user_run.run_id::text, 'null')));
  end if;
  select m.alias into run_alias from switchyard.alias_members m where m.flow_slug = run_flow;
  if not exists (select 1 from switchyard.user_rerun_aliases u
                  where u.alias = coalesce(run_alias, run_flow)) then
    perform switchyard._refuse('42501', 'alias_not_allowed', 'run_id', rerun_user_run.run_id::text,
      format(
      'rerun_user_run(%s, %s): signed-in users may not rerun runs of alias %s: an operator '
      'allows it with insert into switchyard.user_rerun_aliases (alias)',
      rerun_user_run.run_id, switchyard._clip(rerun_user_run.from_step),
      to_json(coalesce(run_alias, run_flow))::text),
      context => jsonb_build_object('alias', coalesce(run_alias, run_flow)));
  end if;
  return switchyard.rerun_run(rerun_user_run.run_id, rerun_user_run.from_step,
                              rerun_user_run.input_patch, 'user ' || user_id::text);
end
$$;
