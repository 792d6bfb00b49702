-- One row trigger declaration as the API answers it (list_row_triggers, declare_row_trigger):
-- its fields, whether its trigger is in place on the table, and its backfill's progress.
create or replace function switchyard._row_trigger_json(d switchyard.row_triggers)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select jsonb_build_object(
    'name', d.name,
    'table', format('%I.%I', d.table_schema, d.table_name),
    'alias', d.alias,
    'events', to_jsonb(d.events),
    'input_columns', to_jsonb(d.input_columns),
    'input_expression', d.input_expression,
    'condition', d.condition,
    'key_by', d.key_by,
    'mode', d.mode,
    'ttl', d.ttl,
    'delay', d.delay,
    'max_delay', d.max_delay,
    'batch_by', d.batch_by,
    'installed', exists (
      select 1 from pg_catalog.pg_trigger g
        join pg_catalog.pg_class c on c.oid = g.tgrelid
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where n.nspname = d.table_schema and c.relname = d.table_name
         and g.tgname = 'switchyard_' || d.name),
    'backfill', case when d.backfill_state is null then null else jsonb_build_object(
      'state', d.backfill_state,
      'after', to_jsonb(d.backfill_after),
      'rows', d.backfill_rows,
      'runs', d.backfill_started,
      'batches', d.backfill_batches,
      'updated_at', d.backfill_updated_at) end,
    'declared_at', d.declared_at)
$$;
