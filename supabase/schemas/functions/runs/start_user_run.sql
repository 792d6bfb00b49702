-- Starts a run for the signed-in user (docs/design/client.md): only an alias an operator put
-- in user_start_aliases, owned by auth.uid(), at most user_runs_per_minute a minute (PT429).
-- The values it echoes are clipped.
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
  per_minute int;
  recent int;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    perform switchyard._refuse('42501', 'not_signed_in', 'alias', start_user_run.alias, format(
      'start_user_run(%s): no signed-in user (auth.uid() is null): '
      'sign in, or start the run from a trusted server with start_flow',
      switchyard._clip(start_user_run.alias)));
  end if;
  if not exists (select 1 from switchyard.user_start_aliases a
                  where a.alias = start_user_run.alias) then
    perform switchyard._refuse('42501', 'alias_not_allowed', 'alias', start_user_run.alias, format(
      'start_user_run(%s): signed-in users may not start this alias: '
      'an operator allows it with insert into switchyard.user_start_aliases',
      switchyard._clip(start_user_run.alias)));
  end if;
  -- A user's run id is random (version 4, as crypto.randomUUID() gives): the other versions,
  -- which a trusted server may derive from names or times (v3, v5, v7, ...) and so a user
  -- could predict, are never a user's, and a server's id can never be taken first by a user.
  if start_user_run.run_id is not null
     and start_user_run.run_id::text !~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' then
    perform switchyard._refuse('22023', 'run_id_not_random', 'run_id', start_user_run.run_id::text,
      format(
      'start_user_run(%s): run id %s is invalid: a signed-in user''s run id is a random '
      '(version 4) UUID, such as crypto.randomUUID() gives; other versions are kept for '
      'trusted servers', switchyard._clip(start_user_run.alias), start_user_run.run_id));
  end if;
  -- The same start again (a resubscription) returns the run and counts nothing.
  if start_user_run.run_id is not null
     and exists (select 1 from switchyard.runs r
                  where r.run_id = start_user_run.run_id and r.owner = user_id) then
    return switchyard.start_flow(start_user_run.alias, input, start_user_run.run_id, user_id);
  end if;
  -- At most user_runs_per_minute new runs per user in any minute; one user's starts are
  -- counted one at a time (a transaction-scoped lock per user), so concurrent calls cannot
  -- all pass the count.
  per_minute := switchyard.limit_value('user_runs_per_minute');
  perform pg_advisory_xact_lock(hashtextextended('switchyard.start_user_run ' || user_id::text, 0));
  select count(*) into recent from switchyard.runs r
   where r.owner = user_id and r.started_at > switchyard.clock_now() - interval '1 minute';
  if recent >= per_minute then
    -- PT429: PostgREST answers HTTP 429 Too Many Requests.
    perform switchyard._refuse('PT429', 'user_runs_per_minute', 'alias', start_user_run.alias,
      format(
      'start_user_run(%s): user %s started %s runs in the last minute, the limit '
      '(setting user_runs_per_minute): wait a minute and try again',
      switchyard._clip(start_user_run.alias), user_id, recent),
      context => jsonb_build_object('limit', per_minute),
      hint => 'an operator sets the limit: select switchyard.set_setting(''user_runs_per_minute'', ''<runs>'')');
  end if;
  return switchyard.start_flow(start_user_run.alias, input, start_user_run.run_id, user_id);
end
$$;
