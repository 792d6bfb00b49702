-- Tunes the queue table of a queue the kit creates or adopts for its churn
-- (docs/design/overview.md#queue-ownership): every message is inserted, updated by the read and
-- deleted by the archive, so a busy queue
-- table holds few live rows and makes dead ones fast. PostgreSQL's defaults vacuum a table when its
-- dead rows pass 50 + 20 % of its rows, throttled by the cost delay: a queue with a backlog waits
-- for a fifth of it, and a vacuum of the small hot table queues behind the long throttled vacuums
-- of the growing history tables (issue 27 measured an empty queue table with 224,610 dead rows
-- vacuumed once in 33,000 runs). Here its dead rows alone decide (scale factor 0, threshold 1,000)
-- and its vacuum is not throttled (cost delay 0: the table is small, the vacuum short). No
-- fillfactor: PGMQ indexes vt, so its updates are never HOT and free space in a page would only
-- make the table larger. A table that already has these settings is not altered again (the
-- ALTER takes a SHARE UPDATE EXCLUSIVE lock, which waits for a running vacuum). A queue table this
-- role does not own keeps its settings, with a warning naming the table and the statement to run.
--
-- It also gives the table the partial index of ranked messages (those of runs with a priority,
-- docs/design/flow-control.md#priority-and-keys-in-turn) that read_tasks reads them through, in
-- rank order. The index holds
-- no entry for any other message, so a queue without priorities pays only its predicate's test
-- on each write. Created once (its name is checked first): building it takes a SHARE lock, which
-- waits for the writes in progress on the table and holds off new ones until the transaction
-- that builds it ends.
create or replace function switchyard._tune_queue_table(queue text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  tbl text := pgmq.format_table_name(queue, 'q');
  wanted text[] := array['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=1000',
                         'autovacuum_vacuum_cost_delay=0'];
  statement text;
  options text[];
  ranked text := tbl || '_ranked';
begin
  select coalesce(c.reloptions, '{}') into options
    from pg_catalog.pg_class c
   where c.oid = to_regclass(format('pgmq.%I', tbl));
  -- No table (a queue dropped outside the kit, seen by the upgrade step): nothing to tune.
  if not found then
    return;
  end if;
  if to_regclass(format('pgmq.%I', ranked)) is null then
    statement := format(
      'create index %I on pgmq.%I (((message ->> ''ranked_at'')::numeric)) '
      'where message ? ''ranked_at''', ranked, tbl);
    begin
      execute statement;
    exception when insufficient_privilege then
      raise warning using message = format(
        'queue table pgmq.%s has no index of ranked messages: this role does not own it, so '
        'its priority read scans the table; its owner can run: %s', tbl, statement);
    end;
  end if;
  if options @> wanted then
    return;
  end if;
  statement := format('alter table pgmq.%I set (%s)', tbl, array_to_string(wanted, ', '));
  begin
    execute statement;
  exception when insufficient_privilege then
    raise warning using message = format(
      'queue table pgmq.%s keeps its autovacuum settings: this role does not own it; '
      'its owner can run: %s', tbl, statement);
  end;
end
$$;
