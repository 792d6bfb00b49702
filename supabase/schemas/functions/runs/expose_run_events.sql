-- Where the auth schema exists (Supabase), the policy for signed-in users; where Supabase's
-- supabase_realtime publication exists, the table joins it so supabase-js
-- `channel(...).on('postgres_changes', ...)` can follow a run (Realtime checks this policy
-- for each subscriber). Run switchyard.expose_run_events() again if either appears later.
-- Returns what it added. A step the running role may not take (it does not own the table or
-- the publication) is skipped with a notice naming the statement to run as their owner, so a
-- migration never fails on it.
create or replace function switchyard.expose_run_events()
returns text[]
language plpgsql
volatile
set search_path = ''
as $$
declare
  done text[] := '{}';
begin
  -- auth.uid() looked up in the catalog: to_regprocedure needs USAGE on schema auth.
  if exists (select 1 from pg_catalog.pg_proc p
               join pg_catalog.pg_namespace ns on ns.oid = p.pronamespace
              where ns.nspname = 'auth' and p.proname = 'uid' and p.pronargs = 0)
     and exists (select 1 from pg_catalog.pg_roles where rolname = 'authenticated')
     and not exists (select 1 from pg_catalog.pg_policies
                      where schemaname = 'switchyard' and tablename = 'run_events'
                        and policyname = 'run_events_owner_read') then
    begin
      create policy run_events_owner_read on switchyard.run_events
        for select to authenticated using (owner = (select auth.uid()));
      done := done || 'policy run_events_owner_read'::text;
    exception when insufficient_privilege then
      raise notice using message = format(
        'switchyard.expose_run_events: %s may not create the policy run_events_owner_read (%s); '
        'run select switchyard.expose_run_events() as the owner of switchyard.run_events',
        current_user, sqlerrm);
    end;
  end if;
  if exists (select 1 from pg_catalog.pg_publication
              where pubname = 'supabase_realtime' and not puballtables)
     and not exists (select 1 from pg_catalog.pg_publication_tables
                      where pubname = 'supabase_realtime' and schemaname = 'switchyard'
                        and tablename = 'run_events') then
    begin
      alter publication supabase_realtime add table switchyard.run_events;
      done := done || 'publication supabase_realtime'::text;
    exception when insufficient_privilege then
      raise notice using message = format(
        'switchyard.expose_run_events: %s may not add switchyard.run_events to the publication '
        'supabase_realtime (%s); run alter publication supabase_realtime add table '
        'switchyard.run_events as its owner', current_user, sqlerrm);
    end;
  end if;
  return done;
end
$$;
