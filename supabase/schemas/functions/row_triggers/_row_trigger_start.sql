-- Starts the run of one row for a row trigger (docs/design/ingestion.md), called by the
-- declaration's generated `_row_start_<name>` with the input, the declared key's value and the
-- primary key's value it computed from the row, in the writer's (or the backfill's)
-- transaction: a rolled back write starts nothing, a committed one has started its run.
--
-- The declared key, when the row has a value for it, names the start with the declared mode.
-- Otherwise, while the declaration's backfill is pending, an insert and the backfill name the
-- row's start by its primary key (mode dedupe, one year), so a row written during the backfill
-- starts once whichever of the two reaches it first. Otherwise the start is a plain one.
--
-- Every start carries its origin (docs/design/origins.md): {kind: 'row_trigger', trigger,
-- table, op} for a write (op insert, update or delete), {kind: 'backfill', trigger} for the
-- backfill's start of a row.
--
-- A batching declaration (batch_by, docs/design/batching.md) makes the row an event of the
-- batch `<name>:<value>` of its batch value, or `<name>` (the table's batch) when the value is
-- null or batch_by is 'table'; the answer is the id of the batch's run.
create or replace function switchyard._row_trigger_start(
  trigger_name text, op text, input jsonb, key_value text, pk_value text,
  batch_value text default null
)
returns uuid
language plpgsql
volatile
set search_path = ''
as $$
declare
  d switchyard.row_triggers;
  run_origin jsonb;
begin
  select * into d from switchyard.row_triggers r where r.name = trigger_name;
  if not found then
    -- Removed in a transaction that also dropped the trigger: nothing fires without a row.
    return null;
  end if;
  if d.batch_by is not null then
    return switchyard.start_flow(d.alias, input,
      batch_key => case when batch_value is null then d.name
                        else switchyard._row_trigger_key(d.name, ':', batch_value) end);
  end if;
  run_origin := case when op = 'BACKFILL'
    then jsonb_build_object('kind', 'backfill', 'trigger', d.name)
    else jsonb_build_object('kind', 'row_trigger', 'trigger', d.name,
                            'table', format('%I.%I', d.table_schema, d.table_name),
                            'op', lower(op)) end;
  if d.key_by is not null and key_value is not null then
    return switchyard.start_flow(d.alias, input,
      key => switchyard._row_trigger_key(d.name, ':', key_value), mode => d.mode,
      ttl => d.ttl, delay => d.delay, max_delay => d.max_delay,
      origin => run_origin);
  end if;
  if pk_value is not null and d.backfill_state = 'pending' and op in ('INSERT', 'BACKFILL') then
    return switchyard.start_flow(d.alias, input,
      key => switchyard._row_trigger_key(d.name, '#', pk_value), mode => 'dedupe',
      ttl => 31536000, origin => run_origin);
  end if;
  return switchyard.start_flow(d.alias, input, origin => run_origin);
end
$$;
