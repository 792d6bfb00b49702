-- Privileges: one rule for the whole schema (docs/design/supabase.md, Privileges), applied
-- last in a fresh build and again at the end of every migration, so a database upgraded from
-- any release has exactly the privileges of a fresh one.
--
--   - PUBLIC, anon and authenticated (PostgREST's roles): nothing. The opt-ins of
--     docs/design/client.md (run events, start_user_run, signal_user_run) are granted by
--     the operator.
--   - service_role: USAGE on the schema, SELECT on every table and view, INSERT and DELETE on
--     user_start_aliases, user_signal_steps and user_rerun_aliases, and EXECUTE on the API: every function whose
--     name does not start with "_". Functions named "_..." are the SQL core's own and no role
--     but the owner runs them.
revoke all on schema switchyard from public;

revoke all on all tables in schema switchyard from public;

revoke all on all sequences in schema switchyard from public;

revoke execute on all functions in schema switchyard from public;

-- Functions get EXECUTE for PUBLIC from PostgreSQL's global default privileges; this per-schema
-- revoke cannot take that away (the event trigger in triggers.sql does), it keeps per-schema
-- grants from giving it.
alter default privileges in schema switchyard revoke execute on functions from public;

do $$
declare
  role_name text;
  fn regprocedure;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke all on schema switchyard from %I', role_name);
      execute format('revoke all on all tables in schema switchyard from %I', role_name);
      execute format('revoke all on all sequences in schema switchyard from %I', role_name);
      execute format('revoke execute on all functions in schema switchyard from %I', role_name);
      -- Supabase grants per schema: the migration role's per-schema defaults take it back.
      execute format('alter default privileges in schema switchyard revoke all on functions from %I', role_name);
      execute format('alter default privileges in schema switchyard revoke all on tables from %I', role_name);
      execute format('alter default privileges in schema switchyard revoke all on sequences from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant usage on schema switchyard to service_role;
    revoke all on all tables in schema switchyard from service_role;
    revoke all on all sequences in schema switchyard from service_role;
    revoke execute on all functions in schema switchyard from service_role;
    grant select on all tables in schema switchyard to service_role;
    grant insert, delete on switchyard.user_start_aliases to service_role;
    grant insert, delete on switchyard.user_signal_steps to service_role;
    grant insert, delete on switchyard.user_rerun_aliases to service_role;
    for fn in
      select p.oid::regprocedure from pg_proc p
       where p.pronamespace = 'switchyard'::regnamespace and left(p.proname, 1) <> '_'
       order by p.oid
    loop
      execute format('grant execute on function %s to service_role', fn);
    end loop;
  end if;
end
$$;
