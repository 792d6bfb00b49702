-- One batch of a row trigger's backfill (docs/design/ingestion.md): starts the runs of the next
-- `batch_size` rows (1 to 10000, default 500) of the table after the cursor, in primary-key
-- order, through the declaration's row function (so its condition, input and key apply), and
-- moves the cursor past them, all in the caller's transaction. Call it until `done`: each batch
-- is its own transaction, so a backfill killed midway rolls back only its current batch and
-- the next call resumes from the last committed cursor; calls on a finished backfill start
-- nothing. Concurrent calls take turns on the declaration's row.
--
-- Safe while the app writes: while the backfill is pending, an insert's run and the backfill's
-- run of a row share a per-row start key (or the declared key), so whichever comes second gets
-- the first's run; a row committed after the last batch read the table was started by its
-- trigger, which no longer keys once the backfill is done (docs/design/ingestion.md has the
-- argument).
--
-- Answers {name, rows, runs, done, total_rows, total_runs, after}: this batch's rows and the
-- runs their starts returned (rows the condition passes), and the totals so far.
create or replace function switchyard.backfill_row_trigger(name text, batch_size int default 500)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  d switchyard.row_triggers;
  rel oid;
  columns_sql text;
  cursor_sql text;
  pk_text_sql text;
  batch_rows int;
  batch_runs int;
  last_pk jsonb;
begin
  if batch_size is null or batch_size not between 1 and 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'batch_size', batch_size::text, format(
      'backfill_row_trigger(%s): batch_size %s is invalid: use 1 to 10000 rows',
      switchyard._clip(backfill_row_trigger.name), coalesce(batch_size::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  select * into d from switchyard.row_triggers r where r.name = backfill_row_trigger.name
     for update;
  if not found then
    perform switchyard._refuse('22023', 'row_trigger_unknown', 'name', backfill_row_trigger.name,
      format('row trigger %s is unknown: see list_row_triggers()',
      switchyard._clip(backfill_row_trigger.name)));
  end if;
  if d.backfill_state is null then
    perform switchyard._refuse('55000', 'backfill_not_declared', 'name', d.name, format(
      'row trigger %s declared no backfill: rows written since its declaration were started '
      'without the backfill''s key and would start twice; declare it with backfill => true',
      d.name));
  end if;
  if d.backfill_state = 'pending' then
    select c.oid into rel from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = d.table_schema and c.relname = d.table_name;
    select string_agg(format('sy_t.%I', p.column_name), ', ' order by p.n),
           string_agg(format('$1[%s]::%s', p.n, p.column_type), ', ' order by p.n),
           'array[' || string_agg(format('sy_t.%I::text', p.column_name), ', ' order by p.n) || ']'
      into columns_sql, cursor_sql, pk_text_sql
      from (select k.*, row_number() over () as n from switchyard._primary_key_columns(rel) k) p;
    if columns_sql is null then
      perform switchyard._refuse('55000', 'primary_key_missing', 'name', d.name, format(
        'row trigger %s: table %I.%I has no primary key (any more): the backfill walks it in '
        'primary-key order', d.name, d.table_schema, d.table_name));
    end if;
    execute format($q$
      select count(*)::int, count(s.run_id)::int, (array_agg(to_jsonb(s.pk) order by s.n desc))[1]
        from (select b.n, b.pk, switchyard.%I(b.r, 'BACKFILL') as run_id
                from (select sy_t as r, %s as pk, row_number() over (order by %s) as n
                        from %I.%I as sy_t
                       where %s
                       order by %s
                       limit $2) as b) as s$q$,
      '_row_start_' || d.name, pk_text_sql, columns_sql, d.table_schema, d.table_name,
      case when d.backfill_after is null then 'true'
           else format('(%s) > (%s)', columns_sql, cursor_sql) end,
      columns_sql)
      into batch_rows, batch_runs, last_pk
      using d.backfill_after, batch_size;
    update switchyard.row_triggers r
       set backfill_after = case when last_pk is null then r.backfill_after
                                 else array(select jsonb_array_elements_text(last_pk)) end,
           backfill_rows = r.backfill_rows + batch_rows,
           backfill_started = r.backfill_started + batch_runs,
           backfill_batches = r.backfill_batches + 1,
           backfill_updated_at = switchyard.clock_now(),
           backfill_state = case when batch_rows < batch_size then 'done' else 'pending' end
     where r.name = d.name
    returning * into d;
  else
    batch_rows := 0;
    batch_runs := 0;
  end if;
  return jsonb_build_object('name', d.name, 'rows', batch_rows, 'runs', batch_runs,
    'done', d.backfill_state = 'done', 'total_rows', d.backfill_rows,
    'total_runs', d.backfill_started, 'after', to_jsonb(d.backfill_after));
end
$$;
