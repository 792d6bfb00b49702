-- Before the migration itself (added by `npx switchyard install`): take every lock it may need at
-- once, all or none. Every table of the switchyard schema is locked in one statement that waits
-- at most 100 ms (less than deadlock_timeout); when it cannot get them all, it releases what it
-- got, waits a moment and tries again. So the migration never waits while it holds a lock that a
-- running worker needs, and never deadlocks with workers: they wait for it (milliseconds) and
-- carry on against the new SQL. PGMQ's tables are left alone: the SQL core's migrations never
-- touch them, and a long poll (pgmq.read_with_poll) holds its queue table for seconds.
do $switchyard_locks$
declare
  saved text := current_setting('lock_timeout');
  tables text;
  tries int := 0;
begin
  select string_agg(format('%I.%I', schemaname, tablename), ', ' order by schemaname, tablename)
    into tables
    from pg_catalog.pg_tables
   where schemaname = 'switchyard';
  if tables is null then
    return;
  end if;
  loop
    begin
      perform pg_catalog.set_config('lock_timeout', '100ms', true);
      execute 'lock table ' || tables || ' in access exclusive mode';
      exit;
    exception when lock_not_available then
      tries := tries + 1;
      if tries >= 1200 then
        raise;
      end if;
      perform pg_catalog.pg_sleep(0.01 + random() * 0.04);
    end;
  end loop;
  perform pg_catalog.set_config('lock_timeout', saved, true);
end
$switchyard_locks$;

