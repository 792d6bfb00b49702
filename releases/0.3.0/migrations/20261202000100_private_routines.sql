-- Routines created later in schema switchyard stay private (docs/ARCHITECTURE.md §7,
-- Privileges). Functions get EXECUTE for PUBLIC from PostgreSQL's global default privileges,
-- and the per-schema `alter default privileges in schema switchyard revoke ... from public` of
-- the schema migration cannot take a global default away (it only undoes per-schema grants): it
-- is a no-op. A global revoke for the creating role would strip EXECUTE from every function that
-- role creates in any schema (a project's own helpers in RLS policies), so this does two scoped
-- things:
--
-- 1. per-schema default privileges of the role running the migrations revoke what a per-schema
--    grant may give anon and authenticated (Supabase grants per schema);
-- 2. an event trigger takes EXECUTE from PUBLIC, anon and authenticated on every routine created
--    in schema switchyard, whoever creates it. Creating an event trigger needs a superuser, or
--    Supabase's postgres role (supautils); elsewhere this notes that it is skipped, and anon and
--    authenticated still have no USAGE on the schema.
do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('alter default privileges in schema switchyard revoke all on functions from %I', role_name);
      execute format('alter default privileges in schema switchyard revoke all on tables from %I', role_name);
      execute format('alter default privileges in schema switchyard revoke all on sequences from %I', role_name);
    end if;
  end loop;
end
$$;

create or replace function switchyard._keep_routines_private()
returns event_trigger
language plpgsql
set search_path = ''
as $$
declare
  created record;
  grantees text;
begin
  select string_agg(g, ', ') into grantees
    from (select 'public' as g
          union all
          select quote_ident(r.rolname) from pg_catalog.pg_roles r
           where r.rolname in ('anon', 'authenticated')) x;
  for created in
    select c.object_identity from pg_catalog.pg_event_trigger_ddl_commands() c
     where c.schema_name = 'switchyard' and c.object_type in ('function', 'procedure', 'aggregate')
  loop
    execute format('revoke all on routine %s from %s', created.object_identity, grantees);
  end loop;
end
$$;
revoke all on function switchyard._keep_routines_private() from public;

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
