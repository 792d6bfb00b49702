-- Row triggers (docs/design/ingestion.md): declarations that writes to a table of the app start
-- runs of an alias, in the writer's transaction. One row per declaration; its trigger on the
-- app's table (`switchyard_<name>`) and its two generated functions (`_row_trigger_<name>`,
-- `_row_start_<name>`) are created and dropped with it. The backfill columns track the one
-- backfill a declaration may ask for: its cursor is the primary key of the last row it passed.
create table switchyard.row_triggers (
  name text primary key check (name ~ '^[a-z][a-z0-9_]{0,46}$'),
  table_schema text not null,
  table_name text not null,
  alias text not null,                     -- what a write starts: an alias (or a flow slug)
  events text[] not null,                  -- of 'insert', 'update', 'delete'
  input_columns text[],                    -- the input: these columns as an object, or
  input_expression text,                   -- this expression over the row's columns, or the row
  condition text,                          -- a boolean expression: only rows where it is true
  key_by text,                             -- the start key: 'row' (the primary key) or a column
  mode text check (mode in ('singleton', 'dedupe', 'debounce')),
  ttl int,
  delay int,
  max_delay int,
  backfill_state text check (backfill_state in ('pending', 'done')), -- null: none declared
  backfill_after text[],                   -- the primary key of the last row the backfill passed
  backfill_rows bigint not null default 0, -- rows the backfill passed
  backfill_started bigint not null default 0, -- runs its starts returned (new or keyed)
  backfill_batches int not null default 0,
  backfill_updated_at timestamptz,
  declared_at timestamptz not null default switchyard.clock_now(),
  check (input_columns is null or input_expression is null),
  -- Batching (docs/design/batching.md; before/047_batches.sql adds the column): 'table' (one
  -- batch for the table), a column's name or an SQL expression over the row's columns: each
  -- row is an event joining the batch of that value; null: each row starts its own run.
  batch_by text,
  check (events <@ array['insert', 'update', 'delete'] and cardinality(events) between 1 and 3)
);
