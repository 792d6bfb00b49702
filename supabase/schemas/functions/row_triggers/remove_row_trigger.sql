-- Removes a row trigger declaration (docs/design/ingestion.md): its trigger on the table, its
-- generated functions and its row, in the caller's transaction. True if there was one, false
-- if not (so a migration that removes it twice changes nothing). Like declaring, removing
-- needs the CREATE privilege on schema switchyard (the migration role).
create or replace function switchyard.remove_row_trigger(name text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  d switchyard.row_triggers;
begin
  if not pg_catalog.has_schema_privilege('switchyard', 'CREATE') then
    perform switchyard._refuse('42501', 'declare_needs_create', 'name', remove_row_trigger.name,
      format('remove_row_trigger(%s): role %s may not remove row triggers: it needs the CREATE '
        'privilege on schema switchyard; remove them in a migration (the migration role has it)',
        switchyard._clip(remove_row_trigger.name), current_user));
  end if;
  select * into d from switchyard.row_triggers r where r.name = remove_row_trigger.name for update;
  if not found then
    return false;
  end if;
  -- The table may be gone (dropped with cascade, which took the trigger and functions along).
  if exists (select 1 from pg_catalog.pg_class c
               join pg_catalog.pg_namespace n on n.oid = c.relnamespace
              where n.nspname = d.table_schema and c.relname = d.table_name) then
    execute format('drop trigger if exists %I on %I.%I', 'switchyard_' || d.name, d.table_schema,
                   d.table_name);
  end if;
  execute format('drop function if exists switchyard.%I()', '_row_trigger_' || d.name);
  if exists (select 1 from pg_catalog.pg_proc p
              where p.pronamespace = 'switchyard'::regnamespace
                and p.proname = '_row_start_' || d.name) then
    execute format('drop function switchyard.%I', '_row_start_' || d.name);
  end if;
  delete from switchyard.row_triggers r where r.name = d.name;
  return true;
end
$$;
