-- Privileges: nothing in switchyard for anon or authenticated (PostgREST's roles);
-- the service role may call the kit's API SQL functions.
revoke all on all tables in schema switchyard from public;
revoke all on all sequences in schema switchyard from public;
revoke execute on all functions in schema switchyard from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke all on schema switchyard from %I', role_name);
      execute format('revoke all on all tables in schema switchyard from %I', role_name);
      execute format('revoke execute on all functions in schema switchyard from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant usage on schema switchyard to service_role;
    grant select on all tables in schema switchyard to service_role;
    grant execute on all functions in schema switchyard to service_role;
  end if;
end
$$;
