-- Declares that writes to a table of the app start runs of an alias (docs/design/ingestion.md):
-- records the declaration in switchyard.row_triggers, generates its functions and creates the
-- trigger `switchyard_<name>` (after each row) on the table, all in the caller's transaction.
--
--   name              ^[a-z][a-z0-9_]{0,46}$, the declaration's name
--   table_name        'table' (schema public) or 'schema.table': a table of the app's own
--                     schemas, never switchyard's, pgmq's, the system's or an extension's
--   alias             the alias (or flow slug) a write starts; it must exist
--   events            any of 'insert', 'update', 'delete' (default insert); a delete's row is
--                     the old one, the others' the new one
--   input_columns     the input: an object of these columns; or
--   input_expression  the input: an SQL expression over the row's columns (to_jsonb of it);
--                     neither: the whole row as an object
--   condition         a boolean SQL expression over the row's columns: rows where it is not
--                     true start nothing
--   key_by            the start key: 'row' (the primary key's value) or a column's value, with
--   mode, ttl, delay, max_delay  the start-key modes of start_flow
-- (docs/design/flow-control.md#start-keys)
--   backfill          true: a backfill of the rows the table already has is pending
--                     (backfill_row_trigger)
--   batch_by          the alias's flow is batched (its batch option, docs/design/batching.md):
--                     each row is an event joining the open batch of 'table' (one batch for
--                     the table), a column's value, or an SQL expression's value over the
--                     row's columns (a null value: the table's batch); not with key_by or a
--                     backfill
--
-- Expressions run in generated functions with an empty search_path: qualify anything outside
-- pg_catalog. They are checked here against the table's columns, not run. The writer needs no
-- privilege on schema switchyard: the generated trigger function is security definer. Declaring
-- needs the CREATE privilege on schema switchyard (the migration role has it): the declaration
-- is part of the app's migrations. The same declaration again returns it and changes nothing;
-- another declaration under a taken name is refused (23505 row_trigger_exists). Every refusal
-- comes before anything is written.
create or replace function switchyard.declare_row_trigger(
  name text, table_name text, alias text, events text[] default array['insert'],
  input_columns text[] default null, input_expression text default null,
  condition text default null, key_by text default null, mode text default null,
  ttl int default null, delay int default null, max_delay int default null,
  backfill boolean default false, batch_by text default null
)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  parts text[];
  schema_name text;
  relation_name text;
  rel oid;
  kind "char";
  pk text[];
  column_found text;
  problem text;
  found_type text;
  wanted switchyard.row_triggers;
  existing switchyard.row_triggers;
  ordered_events text[];
  qualified text;
  input_sql text;
  key_sql text := 'null::text';
  pk_sql text := 'null::text';
  condition_sql text := 'true';
  batch_sql text := 'null::text';
  batch_flow text;
  row_function text;
  trigger_function text;
  reserved constant text[] := array['switchyard', 'pgmq', 'information_schema', 'auth',
    'storage', 'realtime', '_realtime', 'extensions', 'graphql', 'graphql_public', 'vault', 'net',
    'cron', 'pgsodium', 'pgsodium_masks', 'pgbouncer', 'supabase_functions',
    'supabase_migrations', '_analytics'];
begin
  if not pg_catalog.has_schema_privilege('switchyard', 'CREATE') then
    perform switchyard._refuse('42501', 'declare_needs_create', 'name', declare_row_trigger.name,
      format('declare_row_trigger(%s): role %s may not declare row triggers: it needs the CREATE '
        'privilege on schema switchyard; declare them in a migration (the migration role has it)',
        switchyard._clip(declare_row_trigger.name), current_user));
  end if;
  if declare_row_trigger.name is null or declare_row_trigger.name !~ '^[a-z][a-z0-9_]{0,46}$' then
    perform switchyard._refuse('22023', 'row_trigger_name_format', 'name', declare_row_trigger.name,
      format('row trigger name %s is invalid: use lower-case letters, digits and underscores, '
        'starting with a letter (^[a-z][a-z0-9_]{0,46}$)', switchyard._clip(declare_row_trigger.name)));
  end if;

  -- The table: a plain or partitioned table of the app's own schemas.
  begin
    parts := pg_catalog.parse_ident(declare_row_trigger.table_name);
  exception when others then
    parts := null;
  end;
  if parts is null or cardinality(parts) not between 1 and 2 then
    perform switchyard._refuse('22023', 'table_name_format', 'table_name',
      declare_row_trigger.table_name, format(
      'row trigger %s: table %s is invalid: use "table" (schema public) or "schema.table"',
      declare_row_trigger.name, switchyard._clip(declare_row_trigger.table_name)));
  end if;
  schema_name := case when cardinality(parts) = 2 then parts[1] else 'public' end;
  relation_name := parts[cardinality(parts)];
  if schema_name = any (reserved) or schema_name like 'pg\_%' then
    perform switchyard._refuse('22023', 'table_schema_reserved', 'table_name',
      declare_row_trigger.table_name, format(
      'row trigger %s: table %s is invalid: schema %s is not the app''s own (switchyard, pgmq, '
      'the system''s and Supabase''s schemas are refused); declare triggers on your own tables',
      declare_row_trigger.name, switchyard._clip(declare_row_trigger.table_name),
      switchyard._clip(quote_ident(schema_name))),
      context => jsonb_build_object('schema', left(schema_name, 200)));
  end if;
  select c.oid, c.relkind into rel, kind
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where n.nspname = schema_name and c.relname = relation_name;
  if rel is null then
    perform switchyard._refuse('22023', 'table_unknown', 'table_name',
      declare_row_trigger.table_name, format('row trigger %s: table %s does not exist',
      declare_row_trigger.name, switchyard._clip(format('%I.%I', schema_name, relation_name))));
  end if;
  if kind not in ('r', 'p') then
    perform switchyard._refuse('22023', 'table_kind', 'table_name', declare_row_trigger.table_name,
      format('row trigger %s: %I.%I is not a table (a view, sequence or foreign table has no '
      'row triggers of this kind): name a table', declare_row_trigger.name, schema_name,
      relation_name));
  end if;
  if exists (select 1 from pg_catalog.pg_depend dep
              where dep.classid = 'pg_catalog.pg_class'::regclass and dep.objid = rel
                and dep.deptype = 'e')
     or exists (select 1 from pg_catalog.pg_depend dep
                 where dep.classid = 'pg_catalog.pg_namespace'::regclass
                   and dep.objid = (select c.relnamespace from pg_catalog.pg_class c where c.oid = rel)
                   and dep.deptype = 'e') then
    perform switchyard._refuse('22023', 'table_schema_reserved', 'table_name',
      declare_row_trigger.table_name, format(
      'row trigger %s: table %I.%I is invalid: it belongs to an extension, not to the app; '
      'declare triggers on your own tables', declare_row_trigger.name, schema_name,
      relation_name), context => jsonb_build_object('schema', schema_name));
  end if;
  qualified := format('%I.%I', schema_name, relation_name);
  select coalesce(array_agg(p.column_name), '{}') into pk
    from switchyard._primary_key_columns(rel) p;

  if not exists (select 1 from switchyard.aliases a where a.alias = declare_row_trigger.alias)
     and not exists (select 1 from switchyard.flows f
                      where f.flow_slug = declare_row_trigger.alias) then
    perform switchyard._refuse('22023', 'alias_unknown', 'alias', declare_row_trigger.alias, format(
      'row trigger %s: alias %s is unknown: name an alias or flow the SQL core knows (deploy or '
      'compile it first)', declare_row_trigger.name, switchyard._clip(declare_row_trigger.alias)));
  end if;

  select array_agg(e order by array_position(array['insert', 'update', 'delete'], e))
    into ordered_events from unnest(declare_row_trigger.events) as e;
  if ordered_events is null
     or not ordered_events <@ array['insert', 'update', 'delete']
     or cardinality(ordered_events) <> (select count(distinct e) from unnest(ordered_events) e) then
    perform switchyard._refuse('22023', 'events_invalid', 'events',
      declare_row_trigger.events::text, format(
      'row trigger %s: events %s are invalid: use one or more of insert, update, delete, each once',
      declare_row_trigger.name, switchyard._clip(declare_row_trigger.events::text)));
  end if;

  -- The input.
  if declare_row_trigger.input_columns is not null
     and declare_row_trigger.input_expression is not null then
    perform switchyard._refuse('22023', 'input_both', 'input_expression',
      declare_row_trigger.input_expression, format(
      'row trigger %s: give input_columns or input_expression, not both',
      declare_row_trigger.name));
  end if;
  if declare_row_trigger.input_columns is not null then
    if cardinality(declare_row_trigger.input_columns) = 0
       or cardinality(declare_row_trigger.input_columns) <> (
         select count(distinct c) from unnest(declare_row_trigger.input_columns) c) then
      perform switchyard._refuse('22023', 'input_columns_invalid', 'input_columns',
        declare_row_trigger.input_columns::text, format(
        'row trigger %s: input_columns %s are invalid: name one or more columns, each once',
        declare_row_trigger.name, switchyard._clip(declare_row_trigger.input_columns::text)));
    end if;
    foreach column_found in array declare_row_trigger.input_columns loop
      if column_found is null or not exists (
           select 1 from pg_catalog.pg_attribute a
            where a.attrelid = rel and a.attname = column_found and a.attnum > 0
              and not a.attisdropped) then
        perform switchyard._refuse('22023', 'column_unknown', 'input_columns', column_found,
          format('row trigger %s: column %s is not a column of %s', declare_row_trigger.name,
          switchyard._clip(column_found), qualified),
          context => jsonb_build_object('table', qualified));
      end if;
    end loop;
    select 'jsonb_build_object(' || string_agg(format('%L, t.%I', c, c), ', ' order by n) || ')'
      into input_sql from unnest(declare_row_trigger.input_columns) with ordinality as u(c, n);
  elsif declare_row_trigger.input_expression is not null then
    input_sql := E'to_jsonb((\n' || declare_row_trigger.input_expression || E'\n))';
  else
    input_sql := 'to_jsonb(sy_row)';
  end if;

  -- Expressions: one SQL expression each, typed against the table's columns without running.
  if declare_row_trigger.input_expression is not null then
    problem := switchyard._row_expression_problem(qualified, declare_row_trigger.input_expression,
                                                  null);
    if problem is not null then
      perform switchyard._refuse('22023', 'input_expression_invalid', 'input_expression',
        declare_row_trigger.input_expression, format(
        'row trigger %s: input_expression %s is invalid: %s', declare_row_trigger.name,
        switchyard._clip(declare_row_trigger.input_expression), problem),
        context => jsonb_build_object('table', qualified, 'problem', problem));
    end if;
  end if;
  if declare_row_trigger.condition is not null then
    problem := switchyard._row_expression_problem(qualified, declare_row_trigger.condition,
                                                  'boolean');
    if problem is not null then
      perform switchyard._refuse('22023', 'condition_invalid', 'condition',
        declare_row_trigger.condition, format(
        'row trigger %s: condition %s is invalid: %s', declare_row_trigger.name,
        switchyard._clip(declare_row_trigger.condition), problem),
        context => jsonb_build_object('table', qualified, 'problem', problem));
    end if;
    condition_sql := E'(\n' || declare_row_trigger.condition || E'\n)';
  end if;

  -- The start key.
  if declare_row_trigger.key_by = 'row' or coalesce(declare_row_trigger.backfill, false) then
    if cardinality(pk) = 0 then
      perform switchyard._refuse('22023', 'primary_key_missing',
        case when declare_row_trigger.key_by = 'row' then 'key_by' else 'backfill' end,
        case when declare_row_trigger.key_by = 'row' then 'row' else 'true' end, format(
        'row trigger %s: %s needs a primary key on %s to name each row: add one, or key by a '
        'column', declare_row_trigger.name,
        case when declare_row_trigger.key_by = 'row' then 'key_by ''row''' else 'a backfill' end,
        qualified), context => jsonb_build_object('table', qualified));
    end if;
    select case when cardinality(pk) = 1 then format('t.%I::text', pk[1])
                else 'jsonb_build_array(' || string_agg(format('t.%I', c), ', ' order by n)
                     || ')::text' end
      into pk_sql from unnest(pk) with ordinality as u(c, n);
  end if;
  if declare_row_trigger.key_by = 'row' then
    key_sql := pk_sql;
  elsif declare_row_trigger.key_by is not null then
    if not exists (select 1 from pg_catalog.pg_attribute a
                    where a.attrelid = rel and a.attname = declare_row_trigger.key_by
                      and a.attnum > 0 and not a.attisdropped) then
      perform switchyard._refuse('22023', 'column_unknown', 'key_by', declare_row_trigger.key_by,
        format('row trigger %s: key_by %s is invalid: use ''row'' (the primary key) or a column '
        'of %s', declare_row_trigger.name, switchyard._clip(declare_row_trigger.key_by),
        qualified), context => jsonb_build_object('table', qualified));
    end if;
    key_sql := format('t.%I::text', declare_row_trigger.key_by);
  end if;
  if not coalesce(declare_row_trigger.backfill, false) then
    pk_sql := 'null::text';
  end if;

  -- Batching: the flow must be batched, and each row is an event, so no start key or backfill.
  if declare_row_trigger.batch_by is not null then
    if declare_row_trigger.key_by is not null or coalesce(declare_row_trigger.backfill, false) then
      perform switchyard._refuse('22023', 'batch_with_key', 'batch_by', declare_row_trigger.batch_by,
        format('row trigger %s: batch_by comes with %s: a batched row joins a batch and starts no '
        'run of its own, so it takes no start key, and a backfill (which relies on one) is not '
        'offered for it; declare batch_by alone', declare_row_trigger.name,
        case when declare_row_trigger.key_by is not null then 'key_by' else 'backfill' end));
    end if;
    select nullif(f.shape -> 'options' -> 'batch', 'null'::jsonb)::text into batch_flow
      from switchyard.flows f where f.flow_slug = switchyard.resolve_flow(declare_row_trigger.alias);
    if batch_flow is null then
      perform switchyard._refuse('22023', 'batch_not_declared', 'batch_by',
        declare_row_trigger.batch_by, format('row trigger %s: batch_by %s is refused: alias %s '
        'names flow %s, which has no batch option; declare batch: { maxSize, timeout } on the '
        'flow first', declare_row_trigger.name, switchyard._clip(declare_row_trigger.batch_by),
        switchyard._clip(declare_row_trigger.alias),
        to_json(switchyard.resolve_flow(declare_row_trigger.alias))::text));
    end if;
    if declare_row_trigger.batch_by = 'table' then
      batch_sql := 'null::text';
    elsif exists (select 1 from pg_catalog.pg_attribute a
                   where a.attrelid = rel and a.attname = declare_row_trigger.batch_by
                     and a.attnum > 0 and not a.attisdropped) then
      batch_sql := format('t.%I::text', declare_row_trigger.batch_by);
    else
      problem := switchyard._row_expression_problem(qualified, declare_row_trigger.batch_by, null);
      if problem is not null then
        perform switchyard._refuse('22023', 'batch_by_invalid', 'batch_by',
          declare_row_trigger.batch_by, format(
          'row trigger %s: batch_by %s is invalid: use ''table'', a column of %s or an SQL '
          'expression over its columns: %s', declare_row_trigger.name,
          switchyard._clip(declare_row_trigger.batch_by), qualified, problem),
          context => jsonb_build_object('table', qualified, 'problem', problem));
      end if;
      batch_sql := E'((\n' || declare_row_trigger.batch_by || E'\n))::text';
    end if;
  end if;
  perform switchyard._check_start_key(declare_row_trigger.alias, null, null,
    case when declare_row_trigger.key_by is null then null else 'k' end,
    declare_row_trigger.mode, declare_row_trigger.ttl, declare_row_trigger.delay,
    declare_row_trigger.max_delay);

  wanted := row(declare_row_trigger.name, schema_name, relation_name, declare_row_trigger.alias,
    ordered_events, declare_row_trigger.input_columns, declare_row_trigger.input_expression,
    declare_row_trigger.condition, declare_row_trigger.key_by, declare_row_trigger.mode,
    declare_row_trigger.ttl, declare_row_trigger.delay, declare_row_trigger.max_delay,
    case when coalesce(declare_row_trigger.backfill, false) then 'pending' end, null, 0, 0, 0, null,
    switchyard.clock_now(), declare_row_trigger.batch_by)::switchyard.row_triggers;
  select * into existing from switchyard.row_triggers r where r.name = declare_row_trigger.name
     for update;
  if found then
    if (existing.table_schema, existing.table_name, existing.alias, existing.events,
        existing.input_columns, existing.input_expression, existing.condition, existing.key_by,
        existing.mode, existing.ttl, existing.delay, existing.max_delay,
        existing.backfill_state is not null, existing.batch_by)
       is not distinct from
       (wanted.table_schema, wanted.table_name, wanted.alias, wanted.events, wanted.input_columns,
        wanted.input_expression, wanted.condition, wanted.key_by, wanted.mode, wanted.ttl,
        wanted.delay, wanted.max_delay, wanted.backfill_state is not null, wanted.batch_by) then
      return switchyard._row_trigger_json(existing);
    end if;
    perform switchyard._refuse('23505', 'row_trigger_exists', 'name', declare_row_trigger.name,
      format('row trigger %s already exists with another declaration (on %I.%I, alias %s): '
      'remove it first (remove_row_trigger), or choose another name', declare_row_trigger.name,
      existing.table_schema, existing.table_name, existing.alias));
  end if;

  insert into switchyard.row_triggers select (wanted).*;
  row_function := '_row_start_' || declare_row_trigger.name;
  trigger_function := '_row_trigger_' || declare_row_trigger.name;
  -- The row function: computes the row's condition, input, key and primary key in one
  -- statement over the row's columns, and starts through _row_trigger_start. The backfill
  -- calls it too, so a write and the backfill start a row alike.
  execute format($f$
create function switchyard.%I(sy_row %s, sy_op text)
returns uuid
language plpgsql
volatile
set search_path = ''
as $sy_row_trigger$
#variable_conflict use_column
declare
  sy_ok boolean;
  sy_input jsonb;
  sy_key text;
  sy_pk text;
  sy_batch text;
begin
  select %s,
         %s,
         %s,
         %s,
         %s
    into sy_ok, sy_input, sy_key, sy_pk, sy_batch
    from (select (sy_row).*) as t;
  if sy_ok is not true then
    return null;
  end if;
  return switchyard._row_trigger_start(%L, sy_op, sy_input, sy_key, sy_pk, sy_batch);
end
$sy_row_trigger$
$f$, row_function, qualified, condition_sql, input_sql, key_sql, pk_sql, batch_sql,
    declare_row_trigger.name);
  -- The trigger function: security definer, so the writer needs no privilege on switchyard.
  execute format($f$
create function switchyard.%I()
returns trigger
language plpgsql
volatile
security definer
set search_path = ''
as $sy_row_trigger$
declare
  sy_row %s;
begin
  -- On a partition of a partitioned table the row has the partition's type: the assignment
  -- makes it the declared table's.
  if tg_op = 'DELETE' then
    sy_row := old;
  else
    sy_row := new;
  end if;
  perform switchyard.%I(sy_row, tg_op);
  return null;
end
$sy_row_trigger$
$f$, trigger_function, qualified, row_function);
  execute format('create trigger %I after %s on %s for each row execute function switchyard.%I()',
    'switchyard_' || declare_row_trigger.name, array_to_string(ordered_events, ' or '), qualified,
    trigger_function);
  return switchyard._row_trigger_json(wanted);
end
$$;
