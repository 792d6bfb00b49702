-- Every row trigger declaration (docs/design/ingestion.md) as _row_trigger_json answers one,
-- by name. For `switchyard trigger list` and the ops wrapper listRowTriggers. PL/pgSQL, so it
-- may be created before _row_trigger_json, which takes the table's row type.
create or replace function switchyard.list_row_triggers()
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  return (select coalesce(jsonb_agg(switchyard._row_trigger_json(d) order by d.name), '[]'::jsonb)
            from switchyard.row_triggers d);
end
$$;
