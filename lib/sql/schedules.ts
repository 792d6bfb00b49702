/**
 * Schedules (docs/design/schedules.md): cron-started runs of an alias, exactly one run per
 * tick. These are typed calls of the SQL core's schedule functions; every decision (which ticks
 * are due, overlap, catch-up, the derived run id) is SQL's.
 *
 * @module
 */
import { assertJson } from '../dsl/json.ts';
import { OperationError } from '../errors.ts';
import { call, sqlOf, type SqlSource } from './source.ts';

/** What overlapping ticks do while the schedule's previous run is still open. */
export type ScheduleOverlap = 'skip' | 'queue' | 'cancel_previous';
/** Which missed ticks run after downtime: none, the latest, or all (up to `catchUpLimit`). */
export type ScheduleCatchUp = 'none' | 'latest' | 'all';

/** The fields of a schedule a caller sets. */
export interface ScheduleOptions {
  /** The alias (or flow slug) each tick starts. */
  alias: string;
  /** Five cron fields: minute hour day-of-month month day-of-week, e.g. `0 3 * * *`. */
  cron: string;
  /** The input of every run (JSON: anything else is refused with InvalidInputError); default `{}`. */
  input?: unknown;
  /** An IANA time zone the cron fields are local times of; default `UTC`. */
  timeZone?: string;
  /** Default `skip`. */
  overlap?: ScheduleOverlap;
  /** Default `latest`. */
  catchUp?: ScheduleCatchUp;
  /** At most this many missed ticks run with `catchUp: 'all'` (1-1000, default 10). */
  catchUpLimit?: number;
}

/** A schedule as the SQL core answers it. */
export interface Schedule {
  /** Its name (lower case, digits, `_` and `-`). */
  name: string;
  /** The alias (or flow slug) each tick starts. */
  alias: string;
  /** Five cron fields. */
  cron: string;
  /** The IANA time zone of the cron's fields. */
  timeZone: string;
  /** The input of every run. */
  input: unknown;
  /** What a tick does while the previous run is open. */
  overlap: ScheduleOverlap;
  /** Which missed ticks run after downtime. */
  catchUp: ScheduleCatchUp;
  /** At most this many missed ticks run with `catchUp: 'all'`. */
  catchUpLimit: number;
  /** False while paused. */
  enabled: boolean;
  /** The next tick after now (searched up to a year ahead), or null. */
  nextTickAt: Date | null;
  /** The latest recorded tick and its run's status, or null. */
  lastTick: ScheduleTick | null;
  /** Ticks the catch-up policy did not run. */
  missedTicks: number;
  /** Ticks the overlap policy skipped. */
  skippedTicks: number;
}

/** One recorded tick of a schedule. */
export interface ScheduleTick {
  /** The tick's instant. */
  tickAt: Date;
  /** What the tick did. */
  outcome: 'started' | 'queued' | 'skipped' | 'failed';
  /** Its run id, derived from the schedule and the tick (the run may not exist: skipped). */
  runId: string;
  /** The run's status, or null when it has no run. */
  runStatus: string | null;
  /** Why its run could not start (`failed`), else null. */
  error: string | null;
}

interface Row {
  name: string;
  alias: string;
  cron: string;
  time_zone: string;
  input: unknown;
  overlap: ScheduleOverlap;
  catch_up: ScheduleCatchUp;
  catch_up_limit: number;
  enabled: boolean;
  next_tick_at: string | null;
  last_tick: {
    tick_at: string;
    outcome: 'started' | 'queued' | 'skipped' | 'failed';
    run_id: string;
    run_status: string | null;
    error: string | null;
  } | null;
  missed_ticks: number;
  skipped_ticks: number;
}

/**
 * `catchUpLimit` as the SQL `int` it is sent as: a number that is no whole number, or past the
 * 32-bit range, never reaches the server (PostgreSQL would refuse it while binding, before
 * the core can name the rule), so it is refused here with the core's rule; the range itself
 * (1-1000) is the core's to check.
 */
function catchUpLimitArgument(where: string, value: number | undefined): number | undefined {
  if (value === undefined || (Number.isInteger(value) && Math.abs(value) <= 2 ** 31 - 1)) {
    return value;
  }
  throw new OperationError(
    `${where}: catch_up_limit ${String(value)} is out of range 1-1000`,
    '22023',
    undefined,
    { detail: { rule: 'catch_up_limit_range', argument: 'catch_up_limit', value: String(value) } },
  );
}

/** A backfill bound as an ISO instant; an invalid `Date` is refused with the core's rule. */
function instantArgument(name: string, argument: 'from_at' | 'to_at', value: Date): string {
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
  throw new OperationError(
    `backfill_schedule(${JSON.stringify(name)}): ${argument} ${String(value)} is not a date: ` +
      'from_at must be at most to_at',
    '22023',
    undefined,
    { detail: { rule: 'backfill_range', argument, value: String(value) } },
  );
}

function toSchedule(r: Row): Schedule {
  return {
    name: r.name,
    alias: r.alias,
    cron: r.cron,
    timeZone: r.time_zone,
    input: r.input,
    overlap: r.overlap,
    catchUp: r.catch_up,
    catchUpLimit: r.catch_up_limit,
    enabled: r.enabled,
    nextTickAt: r.next_tick_at ? new Date(r.next_tick_at) : null,
    lastTick: r.last_tick
      ? {
        tickAt: new Date(r.last_tick.tick_at),
        outcome: r.last_tick.outcome,
        runId: r.last_tick.run_id,
        runStatus: r.last_tick.run_status,
        error: r.last_tick.error,
      }
      : null,
    missedTicks: Number(r.missed_ticks),
    skippedTicks: Number(r.skipped_ticks),
  };
}

/**
 * Creates schedule `name` (`switchyard.create_schedule`); refuses an invalid cron, time zone,
 * alias or input, and an existing name, with the rule.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { createSchedule } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * await createSchedule(client, 'nightly-report', { alias: 'report', cron: '0 3 * * *',
 *   timeZone: 'Europe/Berlin' });
 * await client.close();
 * ```
 */
export async function createSchedule(
  source: SqlSource,
  name: string,
  o: ScheduleOptions,
): Promise<Schedule> {
  const sql = sqlOf(source);
  const input = o.input ?? {};
  assertJson(input, 'input');
  const limit = catchUpLimitArgument('create_schedule', o.catchUpLimit) ?? 10;
  const [row] = await call(
    sql,
    () =>
      sql<{ s: Row }[]>`select switchyard.create_schedule(${name}, ${o.alias}, ${o.cron},
      ${sql.json(input as never)}::jsonb, ${o.timeZone ?? 'UTC'},
      ${o.overlap ?? 'skip'}, ${o.catchUp ?? 'latest'}, ${limit}) as s`,
  );
  return toSchedule(row.s);
}

/** Changes schedule `name`; fields left out keep their value (`switchyard.update_schedule`). */
export async function updateSchedule(
  source: SqlSource,
  name: string,
  o: Partial<ScheduleOptions> & { enabled?: boolean },
): Promise<Schedule> {
  const sql = sqlOf(source);
  if (o.input !== undefined) assertJson(o.input, 'input');
  const input = o.input === undefined ? null : JSON.stringify(o.input);
  const limit = catchUpLimitArgument('update_schedule', o.catchUpLimit) ?? null;
  const [row] = await call(
    sql,
    () =>
      sql<{ s: Row }[]>`select switchyard.update_schedule(${name}, ${o.alias ?? null},
      ${o.cron ?? null}, ${input}::jsonb, ${o.timeZone ?? null}, ${o.overlap ?? null},
      ${o.catchUp ?? null}, ${limit}, ${o.enabled ?? null}) as s`,
  );
  return toSchedule(row.s);
}

/**
 * Creates or updates schedule `name` to exactly these fields (`switchyard.ensure_schedule`, the
 * call a migration makes); answers what it did.
 */
export async function ensureSchedule(
  source: SqlSource,
  name: string,
  o: ScheduleOptions,
): Promise<'created' | 'updated' | 'unchanged'> {
  const sql = sqlOf(source);
  const input = o.input ?? {};
  assertJson(input, 'input');
  const limit = catchUpLimitArgument('ensure_schedule', o.catchUpLimit) ?? 10;
  const [row] = await call(
    sql,
    () =>
      sql<{ r: 'created' | 'updated' | 'unchanged' }[]>`select switchyard.ensure_schedule(${name},
      ${o.alias}, ${o.cron}, ${sql.json(input as never)}::jsonb, ${o.timeZone ?? 'UTC'},
      ${o.overlap ?? 'skip'}, ${o.catchUp ?? 'latest'}, ${limit}) as r`,
  );
  return row.r;
}

/** Pauses schedule `name`: no tick starts a run until {@linkcode resumeSchedule}. */
export async function pauseSchedule(source: SqlSource, name: string): Promise<Schedule> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ s: Row }[]>`select switchyard.pause_schedule(${name}) as s`,
  );
  return toSchedule(row.s);
}

/** Resumes schedule `name`: ticks from now on start runs. */
export async function resumeSchedule(source: SqlSource, name: string): Promise<Schedule> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ s: Row }[]>`select switchyard.resume_schedule(${name}) as s`,
  );
  return toSchedule(row.s);
}

/** Deletes schedule `name` and its tick records (its runs stay); whether it existed. */
export async function deleteSchedule(source: SqlSource, name: string): Promise<boolean> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ gone: boolean }[]>`select switchyard.delete_schedule(${name}) as gone`,
  );
  return row.gone;
}

/** Every schedule with its next tick and latest tick, by name. */
export async function listSchedules(source: SqlSource): Promise<Schedule[]> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ list: Row[] }[]>`select switchyard.list_schedules() as list`,
  );
  return row.list.map(toSchedule);
}

/**
 * Starts the runs of schedule `name`'s ticks from `from` to `to` (at most 1000 ticks in at most
 * 366 days); ticks that ran are left alone, so it can be repeated. Answers how many runs
 * started.
 */
export async function backfillSchedule(
  source: SqlSource,
  name: string,
  from: Date,
  to: Date,
): Promise<number> {
  const sql = sqlOf(source);
  const fromAt = instantArgument(name, 'from_at', from);
  const toAt = instantArgument(name, 'to_at', to);
  const [row] = await call(
    sql,
    () =>
      sql<{ n: number }[]>`select switchyard.backfill_schedule(${name}, ${fromAt},
      ${toAt}) as n`,
  );
  return row.n;
}

/** One scheduler tick now (`switchyard.run_schedules`); answers how many runs started. */
export async function runSchedules(source: SqlSource): Promise<number> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () => sql<{ n: number }[]>`select switchyard.run_schedules() as n`);
  return row.n;
}
