-- The event trigger's function (triggers.sql): revokes EXECUTE from PUBLIC, anon and
-- authenticated on every routine created in schema switchyard, so a function is never callable
-- through PostgREST before privileges.sql runs again (docs/design/supabase.md, Privileges).
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
