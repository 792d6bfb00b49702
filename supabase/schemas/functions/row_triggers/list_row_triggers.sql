-- Every row trigger declaration (docs/ARCHITECTURE.md §18) as _row_trigger_json answers one,
-- by name. For `switchyard trigger list` and the ops wrapper listRowTriggers.
create or replace function switchyard.list_row_triggers()
returns jsonb
language sql
stable
set search_path = ''
as $$
  select coalesce(jsonb_agg(switchyard._row_trigger_json(d) order by d.name), '[]'::jsonb)
    from switchyard.row_triggers d
$$;
