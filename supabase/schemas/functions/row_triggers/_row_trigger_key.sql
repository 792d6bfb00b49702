-- The start key a row trigger gives a row's run (docs/design/ingestion.md): the declaration's
-- name, a separator (':' for the declared key, '#' for the backfill's per-row key) and the
-- row's value. Keys are at most 200 characters (docs/design/flow-control.md#start-keys): a longer
-- value is replaced by its md5,
-- so a long column value still names one key and never refuses the app's write.
create or replace function switchyard._row_trigger_key(trigger_name text, separator text, value text)
returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when char_length(trigger_name || separator || value) <= 200
      then trigger_name || separator || value
    else trigger_name || separator || 'md5:' || md5(value)
  end
$$;
