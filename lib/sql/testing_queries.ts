/**
 * The SQL of a test engine (`switchyard/testing`, docs/design/clock.md): the SQL core built
 * into a database of its own, the virtual clock, and the reads and ticks of its worker loop. The
 * clock's functions live in schema `switchyard_test`, which only a test engine creates; nothing
 * here runs against a production database.
 *
 * @module
 */
import { CORE_BUILD_SQL, PGMQ_COMPAT_SQL } from './core_build.ts';
import type { Sql } from './connection.ts';
import { pgArray } from './worker_queries.ts';

/**
 * The virtual clock (docs/design/clock.md#one-clock-for-every-time-rule), installed into a test
 * database:
 *
 * - `switchyard_test.clock`: one row, the set time and when PGMQ's times were last synced;
 * - `set_clock(at)`: `clock_now()` becomes `select '<at>'::timestamptz` (still inlined);
 * - `sync()`: keeps PGMQ's times of the kit's queues on the virtual clock while real time passes
 *   and the virtual one stands still. A message already seen at the last sync moves forward by
 *   the real time since (`vt`, `enqueued_at`, a body's `ranked_at`); one written since (a send, a
 *   claim's visibility, a retry's backoff, a held task) was written while the virtual clock stood
 *   where it stands, with a whole number of seconds to wait, so its `vt` is rounded up to that
 *   whole number of seconds from now. After it, a message's time to wait on the virtual clock is
 *   exactly `vt` minus the sync's time;
 * - `advance(by)`: syncs, moves PGMQ's times of the kit's queues back by `by` (`vt`,
 *   `enqueued_at`, `archived_at`, a body's `ranked_at`) and sets the clock `by` later, in one
 *   transaction;
 * - `next_due(until)`: syncs, then the first time after the clock's, and at most `until`, at
 *   which a time rule has something to do ({@linkcode nextDue});
 * - {@linkcode restoreClock}: the production definition of `clock_now()` back (the source's, from
 *   `lib/sql/core_build.ts`), and the schema dropped.
 */
const TEST_CLOCK_SQL = `
create schema if not exists switchyard_test;

create table if not exists switchyard_test.clock (
  only_row boolean primary key default true check (only_row),
  at timestamptz not null,
  synced_at timestamptz
);

-- The relations of a snapshot (an embedded database's, taken once per process): a reset drops
-- every other one a test made (queue tables, a test's own tables).
create table if not exists switchyard_test.kept_relations (
  rel oid primary key
);

-- Each message's vt as the last sync left it: one whose vt differs was written since.
create table if not exists switchyard_test.message_vts (
  queue_name text not null,
  msg_id bigint not null,
  vt timestamptz not null,
  primary key (queue_name, msg_id)
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

create or replace function switchyard_test.sync()
returns void
language plpgsql
set search_path = ''
as $fn$
declare
  r timestamptz := clock_timestamp();
  gap interval := r - coalesce((select c.synced_at from switchyard_test.clock c), r);
  q record;
  tbl text;
begin
  for q in select x.queue_name, x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    continue when to_regclass(format('pgmq.%I', tbl)) is null;
    execute format($q$
      update pgmq.%1$I m
         set vt = case when s.vt = m.vt then m.vt + $1
                       when m.vt > $2 then $2 + make_interval(secs => ceil(extract(epoch from m.vt - $2)))
                       else m.vt end,
             enqueued_at = case when s.msg_id is null then m.enqueued_at else m.enqueued_at + $1 end,
             message = case when s.msg_id is not null and m.message ? 'ranked_at'
                            then jsonb_set(m.message, '{ranked_at}', to_jsonb(round(
                                   (m.message ->> 'ranked_at')::numeric + extract(epoch from $1), 6)))
                            else m.message end
        from pgmq.%1$I x
        left join switchyard_test.message_vts s on s.queue_name = $3 and s.msg_id = x.msg_id
       where m.msg_id = x.msg_id
         and (s.msg_id is null or s.vt <> m.vt or $1 <> interval '0' or m.vt > $2)$q$, tbl)
      using gap, r, q.queue_name;
    delete from switchyard_test.message_vts s where s.queue_name = q.queue_name;
    execute format('insert into switchyard_test.message_vts (queue_name, msg_id, vt)
                    select $1, m.msg_id, m.vt from pgmq.%I m', tbl)
      using q.queue_name;
  end loop;
  update switchyard_test.clock set synced_at = r;
end
$fn$;

create or replace function switchyard_test.next_due(until timestamptz)
returns timestamptz
language plpgsql
set search_path = ''
as $fn$
declare
  now_at timestamptz := switchyard.clock_now();
  synced timestamptz;
  best timestamptz;
  candidate timestamptz;
  q record;
  s record;
  tbl text;
begin
  perform switchyard_test.sync();
  synced := (select c.synced_at from switchyard_test.clock c);
  -- A hidden message becomes visible: after the sync, its wait on the core's clock is exactly
  -- vt less the sync's time. One its claim would hold again is due later: a rate limit's, when
  -- its tokens will be there (not every few seconds, as the claim's short hold reads it again);
  -- a full key's, never (its slot frees when a started task ends, which is due of its own).
  for q in select x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    continue when to_regclass(format('pgmq.%I', tbl)) is null;
    execute format($q$
      select min(greatest(
               $2 + (m.vt - $1),
               case when l.tokens < st.rate_cost then
                 l.refilled_at + make_interval(secs => ceil(
                   (st.rate_cost - l.tokens) * l.per_seconds / l.rate::double precision * 1000)
                   / 1000.0)
               end))
        from pgmq.%I m
        left join switchyard.steps st
          on st.flow_slug = m.message ->> 'flow_slug' and st.step_slug = m.message ->> 'step_slug'
        left join switchyard.rate_limits l on l.name = st.rate_limit
       where m.vt > $1
         and not coalesce(st.concurrency_limit <= (
               select count(*) from switchyard.step_tasks y
                where y.concurrency_key = m.message ->> 'concurrency_key'
                  and y.status = 'started'), false)$q$, tbl)
      into candidate using synced, now_at;
    best := least(best, candidate);
  end loop;
  -- A wait or sleep ends, a delayed start begins, a deadline passes.
  best := least(best,
    (select min(ss.wait_due) from switchyard.step_states ss
       join switchyard.runs r on r.run_id = ss.run_id and r.status = 'started'
      where ss.status = 'started' and ss.wait_due > now_at),
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
  perform switchyard_test.sync();
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
  update switchyard_test.message_vts set vt = vt - by;
  return switchyard_test.set_clock((select c.at from switchyard_test.clock c) + by);
end
$fn$;

-- Back to the snapshot: the kit's queues dropped, every relation the snapshot did not have
-- dropped, every table of the SQL core emptied with its identities restarted, the clock's state
-- cleared. An embedded database is then the snapshot again, for the next engine of the process.
create or replace function switchyard_test.reset()
returns void
language plpgsql
set search_path = ''
as $fn$
declare
  r record;
  tables text;
begin
  for r in select m.queue_name from pgmq.meta m loop
    perform pgmq.drop_queue(r.queue_name);
  end loop;
  for r in select c.oid::regclass::text as rel, c.relkind
             from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where n.nspname in ('public', 'switchyard', 'pgmq', 'switchyard_test')
              and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
              and not exists (select 1 from switchyard_test.kept_relations k where k.rel = c.oid)
              and not exists (select 1 from pg_depend d
                               where d.objid = c.oid and d.deptype in ('a', 'i'))
  loop
    execute format('drop %s if exists %s cascade',
      case r.relkind when 'v' then 'view' when 'm' then 'materialized view'
                     when 'S' then 'sequence' when 'f' then 'foreign table' else 'table' end,
      r.rel);
  end loop;
  select string_agg(format('%I.%I', n.nspname, c.relname), ', ') into tables
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname = 'switchyard' and c.relkind in ('r', 'p');
  execute format('truncate %s restart identity cascade', tables);
  truncate switchyard_test.message_vts;
  update switchyard_test.clock set synced_at = null;
end
$fn$;

-- One round's start in one call: PGMQ's times synced (a virtual clock), the engine's workers'
-- heartbeats, what pg_cron ticks (schedules, due waits and delayed starts, deadlines) and the
-- stall sweep of each queue. Returns how many things moved.
create or replace function switchyard_test.round(workers uuid[], queues text[], virtual boolean)
returns int
language plpgsql
set search_path = ''
as $fn$
declare
  moved int;
begin
  if virtual then
    perform switchyard_test.sync();
  end if;
  perform switchyard.worker_heartbeat(w) from unnest(workers) w;
  moved := switchyard.run_schedules() + switchyard.expire_waits() + switchyard.cancel_overdue_runs();
  moved := moved + coalesce((select sum(switchyard.recover_stalled(q))::int from unnest(queues) q), 0);
  return moved;
end
$fn$;

-- The first ready message of the queues, in their order, read as a worker reads (PGMQ's read for
-- a plain queue, read_tasks for an ordered one; hidden for the claim window and what the claim
-- needs), one at a time so each read takes the best next one; no row when none is ready.
create or replace function switchyard_test.read_one(queues text[], claim_window int)
returns table (queue_name text, msg_id bigint)
language plpgsql
set search_path = ''
as $fn$
declare
  q text;
  visibility int;
begin
  foreach q in array queues loop
    visibility := switchyard.read_visibility_seconds(q, claim_window);
    if switchyard.read_ordered(q) then
      select q, m into queue_name, msg_id from switchyard.read_tasks(q, visibility, 1) m limit 1;
    else
      select q, m.msg_id into queue_name, msg_id from pgmq.read(q, visibility, 1) m limit 1;
    end if;
    if msg_id is not null then
      return next;
      return;
    end if;
  end loop;
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

/**
 * Records the relations an embedded database's snapshot has, the ones
 * {@linkcode resetDatabase} keeps.
 */
export async function keepRelations(sql: Sql): Promise<void> {
  await sql`insert into switchyard_test.kept_relations (rel)
            select c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where n.nspname in ('public', 'switchyard', 'pgmq', 'switchyard_test')
            on conflict do nothing`;
}

/**
 * Puts an embedded database back to its snapshot (`switchyard_test.reset()`), then resets the
 * session (`discard all`: settings, advisory locks, listens, temporary tables), so the next
 * engine of the process gets it as new.
 */
export async function resetDatabase(sql: Sql): Promise<void> {
  await sql`select switchyard_test.reset()`;
  await sql`discard all`;
}

/** Installs the test engine's functions and the virtual clock (`switchyard_test`), unset. */
export async function installTestSchema(sql: Sql): Promise<void> {
  await sql.unsafe(TEST_CLOCK_SQL);
}

/** Sets the virtual clock to `at` (nothing else moves). */
export async function setClock(sql: Sql, at: Date): Promise<Date> {
  const [row] = await sql<{ at: Date }[]>`
    select switchyard_test.set_clock(${at.toISOString()}::timestamptz) as at`;
  return row.at;
}

/**
 * Moves the virtual clock forward by `ms` milliseconds, and PGMQ's times of the kit's queues back
 * by as much (docs/design/clock.md#one-clock-for-every-time-rule); the new time.
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

/**
 * Keeps PGMQ's times of the kit's queues on the virtual clock while real time passes (the
 * `sync()` of the clock's SQL): a test engine calls it before it reads.
 */
export async function syncClock(sql: Sql): Promise<void> {
  await sql`select switchyard_test.sync()`;
}

/** The time the SQL core reads (`switchyard.clock_now()`). */
export async function clockNow(sql: Sql): Promise<Date> {
  const [row] = await sql<{ at: Date }[]>`select switchyard.clock_now() as at`;
  return row.at;
}

/**
 * Puts the production clock back (the database's own: `now()`); with `dropSchema` also drops
 * `switchyard_test`, the engine's functions.
 */
export async function restoreClock(sql: Sql, dropSchema = true): Promise<void> {
  await sql.unsafe(
    `${productionClock()}\n${dropSchema ? 'drop schema if exists switchyard_test cascade;' : ''}`,
  );
}

/**
 * The start of a test engine's round (`switchyard_test.round`): PGMQ's times synced when the clock
 * is virtual, the workers' heartbeats, what pg_cron ticks (schedules, due waits and delayed
 * starts, deadlines) and each queue's stall sweep. How many things moved.
 */
export async function startRound(
  sql: Sql,
  workers: readonly string[],
  queues: readonly string[],
  virtual: boolean,
): Promise<number> {
  const [row] = await sql<{ moved: number }[]>`
    select switchyard_test.round(${pgArray(workers)}::uuid[], ${pgArray(queues)}::text[],
      ${virtual}::boolean) as moved`;
  return row.moved;
}

/**
 * The first ready message of the queues, in their order, read as a worker reads it but without
 * waiting (docs/design/claim.md#read, docs/design/flow-control.md#priority-and-keys-in-turn), one
 * at a time; null when none is ready.
 */
export async function readOne(
  sql: Sql,
  queues: readonly string[],
  claimWindow: number,
): Promise<{ queue: string; messageId: bigint } | null> {
  const [row] = await sql<{ queue_name: string; msg_id: string }[]>`
    select queue_name, msg_id::text as msg_id
      from switchyard_test.read_one(${pgArray(queues)}::text[], ${claimWindow}::int)`;
  return row ? { queue: row.queue_name, messageId: BigInt(row.msg_id) } : null;
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

/**
 * Everything an embedded database's snapshot is built from, as text: the SQL core and the PGMQ
 * layer, the engine's own SQL, and the code of each step that builds it. A snapshot cached on disk
 * (`lib/testing/snapshot_cache.ts`) is keyed by its hash, so a changed kit never loads an old one.
 */
export function snapshotSource(): string {
  return [
    CORE_BUILD_SQL,
    PGMQ_COMPAT_SQL,
    TEST_CLOCK_SQL,
    installCore.toString(),
    installTestSchema.toString(),
    dropTemplateDatabases.toString(),
    keepRelations.toString(),
  ].join('\n--\n');
}
