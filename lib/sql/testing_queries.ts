/**
 * The SQL of a test engine (`switchyard/testing`, docs/ARCHITECTURE.md §17): the SQL core built
 * into a database of its own, the virtual clock, and the reads and ticks of its worker loop. The
 * clock's functions live in schema `switchyard_test`, which only a test engine creates; nothing
 * here runs against a production database.
 *
 * @module
 */
import { CORE_BUILD_SQL, PGMQ_COMPAT_SQL } from './core_build.ts';
import type { Sql } from './connection.ts';

/**
 * The virtual clock (docs/ARCHITECTURE.md §17.1), installed into a test database:
 *
 * - `switchyard_test.clock`: one row, the set time;
 * - `set_clock(at)`: `clock_now()` becomes `select '<at>'::timestamptz` (still inlined);
 * - `advance(by)`: moves PGMQ's times of the kit's queues back by `by` (`vt`, `enqueued_at`,
 *   `archived_at`, a body's `ranked_at`), then sets the clock `by` later, in one transaction;
 * - `next_due(until)`: the first time after the clock's, and at most `until`, at which a time rule
 *   has something to do ({@linkcode nextDue});
 * - {@linkcode restoreClock}: the production definition of `clock_now()` back (the source's, from
 *   `lib/sql/core_build.ts`), and the schema dropped.
 */
const TEST_CLOCK_SQL = `
create schema if not exists switchyard_test;

create table if not exists switchyard_test.clock (
  only_row boolean primary key default true check (only_row),
  at timestamptz not null
);

create or replace function switchyard_test.set_clock(at timestamptz)
returns timestamptz
language plpgsql
set search_path = ''
as $fn$
begin
  if at is null or not isfinite(at) then
    raise exception using errcode = '22023',
      message = format('set_clock: %s is not a time the clock can be set to', coalesce(at::text, 'null'));
  end if;
  execute format(
    'create or replace function switchyard.clock_now() returns timestamptz language sql stable '
    'parallel safe as %L', format('select %L::timestamptz', at));
  insert into switchyard_test.clock (at) values (at)
  on conflict (only_row) do update set at = excluded.at;
  return at;
end
$fn$;

create or replace function switchyard_test.next_due(until timestamptz)
returns timestamptz
language plpgsql
set search_path = ''
as $fn$
declare
  now_at timestamptz := switchyard.clock_now();
  best timestamptz;
  candidate timestamptz;
  q record;
  s record;
  tbl text;
begin
  -- A message becomes visible: its vt on the core's clock, in whole seconds (PGMQ's delays and
  -- the claim's visibility are whole seconds; the real time the test took is rounded away).
  for q in select x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    continue when to_regclass(format('pgmq.%I', tbl)) is null;
    execute format('select min(m.vt) from pgmq.%I m where m.vt > $1', tbl)
      into candidate using switchyard.queue_clock();
    if candidate is not null then
      best := least(best, now_at + make_interval(
        secs => ceil(extract(epoch from candidate - switchyard.queue_clock()))));
    end if;
  end loop;
  -- A wait or sleep ends, a delayed start begins, a deadline passes.
  best := least(best,
    (select min(ss.wait_deadline) from switchyard.step_states ss
       join switchyard.runs r on r.run_id = ss.run_id and r.status = 'started'
      where ss.status = 'started' and ss.wait_deadline > now_at),
    (select min(d.start_at) from switchyard.delayed_starts d where d.start_at > now_at),
    (select min(r.deadline_at) from switchyard.runs r
      where r.status = 'started' and r.deadline_at > now_at));
  -- A started task stalls: past its timeout and margin, or its worker's heartbeat window (the
  -- sweep's tests are strict: the next whole second after).
  best := least(best,
    (select min(date_trunc('second', x.t) + interval '1 second') from (
       select t.started_at + make_interval(secs => t.timeout - t.carried_ms / 1000.0
                                                  + switchyard.claim_margin_seconds()) as t
         from switchyard.step_tasks t where t.status = 'started'
       union all
       select w.last_heartbeat_at + make_interval(secs => w.heartbeat_window_seconds)
         from switchyard.workers w
        where w.stopped_at is null
          and exists (select 1 from switchyard.step_tasks t
                       where t.worker_id = w.worker_id and t.status = 'started')) x
      where x.t >= now_at));
  -- A schedule's next tick.
  for s in select x.cron, x.time_zone, coalesce(x.checked_until, x.created_at) as from_at
             from switchyard.schedules x where x.enabled loop
    best := least(best, (select min(t.t) from switchyard._cron_ticks(
      s.cron, s.time_zone, greatest(s.from_at, now_at), until, 1) as t(t)));
  end loop;
  return case when best > now_at and best <= until then best end;
end
$fn$;

create or replace function switchyard_test.advance(by interval)
returns timestamptz
language plpgsql
set search_path = ''
as $fn$
declare
  q record;
  secs numeric := extract(epoch from by);
  tbl text;
begin
  if by is null or by < interval '0' then
    raise exception using errcode = '22023',
      message = format('advance: %s is not a duration the clock can move by: time only moves forward',
                       coalesce(by::text, 'null'));
  end if;
  for q in select x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'update pgmq.%I set vt = vt - $1, enqueued_at = enqueued_at - $1,
                message = case when message ? ''ranked_at''
                               then jsonb_set(message, ''{ranked_at}'',
                                              to_jsonb(round((message ->> ''ranked_at'')::numeric - $2, 6)))
                               else message end', tbl)
        using by, secs;
    end if;
    tbl := pgmq.format_table_name(q.pgmq_name, 'a');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'update pgmq.%I set vt = vt - $1, enqueued_at = enqueued_at - $1,
                archived_at = archived_at - $1', tbl)
        using by;
    end if;
  end loop;
  return switchyard_test.set_clock((select c.at from switchyard_test.clock c) + by);
end
$fn$;
`;

/** The production definition of `switchyard.clock_now()`: the source's, as the build has it. */
function productionClock(): string {
  const start = CORE_BUILD_SQL.indexOf('create or replace function switchyard.clock_now()');
  const end = CORE_BUILD_SQL.indexOf('$$;', start);
  if (start < 0 || end < 0) throw new Error('the SQL core build defines no switchyard.clock_now()');
  return CORE_BUILD_SQL.slice(start, end + 3);
}

/** Whether the database has the SQL core (schema `switchyard`). */
export async function hasCore(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ present: boolean }[]>`
    select to_regnamespace('switchyard') is not null as present`;
  return row.present;
}

/**
 * Builds the SQL core into a database without one: PGMQ first (the extension when the server has
 * it, else the PGMQ-compatible layer), then the fresh build of the source
 * (`lib/sql/core_build.ts`).
 */
export async function installCore(sql: Sql): Promise<'extension' | 'compat' | 'existing'> {
  const [pgmq] = await sql<{ has_schema: boolean; has_ext: boolean }[]>`
    select to_regnamespace('pgmq') is not null as has_schema,
           exists (select 1 from pg_available_extensions where name = 'pgmq') as has_ext`;
  let provider: 'extension' | 'compat' | 'existing' = 'existing';
  if (!pgmq.has_schema && pgmq.has_ext) {
    await sql`create extension if not exists pgmq`;
    provider = 'extension';
  } else if (!pgmq.has_schema) {
    await sql.unsafe(PGMQ_COMPAT_SQL);
    provider = 'compat';
  }
  await sql.unsafe(CORE_BUILD_SQL);
  return provider;
}

/**
 * Drops the template databases of an embedded database before its snapshot is taken: a test
 * engine never creates a database, and a snapshot without them is a third smaller and loads a
 * quarter faster.
 */
export async function dropTemplateDatabases(sql: Sql): Promise<void> {
  await sql`update pg_database set datistemplate = false
             where datname in ('template0', 'template1')`;
  await sql`drop database if exists template0`;
  await sql`drop database if exists template1`;
}

/** Installs the virtual clock (`switchyard_test`) and sets it to `at`. */
export async function installTestClock(sql: Sql, at: Date): Promise<Date> {
  await sql.unsafe(TEST_CLOCK_SQL);
  return await setClock(sql, at);
}

/** Sets the virtual clock to `at` (nothing else moves). */
export async function setClock(sql: Sql, at: Date): Promise<Date> {
  const [row] = await sql<{ at: Date }[]>`
    select switchyard_test.set_clock(${at.toISOString()}::timestamptz) as at`;
  return row.at;
}

/**
 * Moves the virtual clock forward by `ms` milliseconds, and PGMQ's times of the kit's queues back
 * by as much (docs/ARCHITECTURE.md §17.1); the new time.
 */
export async function advanceClock(sql: Sql, ms: number): Promise<Date> {
  const [row] = await sql<{ at: Date }[]>`
    select switchyard_test.advance(make_interval(secs => ${ms / 1000}::float8)) as at`;
  return row.at;
}

/**
 * The first time after the virtual clock's, at most `until`, at which a time rule has something to
 * do, or null: a message becomes visible (a retry's backoff, a held task, a claim's visibility),
 * a wait, sleep or delayed start is due, a deadline passes, a started task stalls, a schedule
 * ticks. The test engine's `advance` stops at each, as time passing would.
 */
export async function nextDue(sql: Sql, until: Date): Promise<Date | null> {
  const [row] = await sql<{ at: Date | null }[]>`
    select switchyard_test.next_due(${until.toISOString()}::timestamptz) as at`;
  return row.at;
}

/** The time the SQL core reads (`switchyard.clock_now()`). */
export async function clockNow(sql: Sql): Promise<Date> {
  const [row] = await sql<{ at: Date }[]>`select switchyard.clock_now() as at`;
  return row.at;
}

/** Puts the production clock back and drops `switchyard_test`. */
export async function restoreClock(sql: Sql): Promise<void> {
  await sql.unsafe(`${productionClock()}\ndrop schema if exists switchyard_test cascade;`);
}

/**
 * Ready messages of a queue, at most `qty`, read as a worker reads them but without waiting
 * (docs/ARCHITECTURE.md §5.1, §5.14): PGMQ's `read` for a plain queue, `switchyard.read_tasks`
 * for an ordered one, hidden for the claim window and what the claim needs.
 */
export async function readReady(
  sql: Sql,
  queue: string,
  qty: number,
  claimWindow: number,
): Promise<bigint[]> {
  const [plan] = await sql<{ visibility: number; ordered: boolean }[]>`
    select switchyard.read_visibility_seconds(${queue}::text, ${claimWindow}::int) as visibility,
           switchyard.read_ordered(${queue}::text) as ordered`;
  const rows = plan.ordered
    ? await sql<{ msg_id: string }[]>`
        select m::text as msg_id
          from switchyard.read_tasks(${queue}::text, ${plan.visibility}::int, ${qty}::int) m`
    : await sql<{ msg_id: string }[]>`
        select msg_id::text as msg_id
          from pgmq.read(${queue}::text, ${plan.visibility}::int, ${qty}::int)`;
  return rows.map((r) => BigInt(r.msg_id));
}

/**
 * What the keep-alive tick does in the database besides waking functions (docs/ARCHITECTURE.md
 * §6, §15): the scheduler's tick, the waits and delayed starts that are due, the runs past their
 * deadline. The counts of each.
 */
export async function tickCore(
  sql: Sql,
): Promise<{ scheduled: number; expired: number; overdue: number }> {
  const [row] = await sql<{ scheduled: number; expired: number; overdue: number }[]>`
    select switchyard.run_schedules() as scheduled, switchyard.expire_waits() as expired,
           switchyard.cancel_overdue_runs() as overdue`;
  return row;
}

/** The scheduler's tick alone (`switchyard.run_schedules`): runs started. */
export async function tickSchedules(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select switchyard.run_schedules() as n`;
  return row.n;
}

/**
 * The highest sequence number of the run ids a test engine gives
 * (`00000000-0000-4000-8000-<12 hex digits>`) already in the database, 0 when none.
 */
export async function lastEngineRunNumber(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: string | null }[]>`
    select max(('x' || right(r.run_id::text, 12))::bit(48)::bigint)::text as n
      from switchyard.runs r
     where r.run_id::text like '00000000-0000-4000-8000-%'`;
  return row.n === null ? 0 : Number(row.n);
}
