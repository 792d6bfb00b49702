/**
 * Row triggers (docs/design/ingestion.md): writes to a table of the app start runs of an alias
 * in the writer's own transaction, so a rolled back write starts nothing and a committed one has
 * started its run. These are typed calls of the SQL core's `declare_row_trigger`,
 * `list_row_triggers`, `remove_row_trigger` and `backfill_row_trigger`, and the migration text
 * that declares or removes one (`switchyard trigger add|remove` writes it); every check and
 * decision is SQL's.
 *
 * @module
 */
import { OperationError } from '../errors.ts';
import { call, sqlOf, type SqlSource } from './source.ts';

/** The writes that start runs. */
export type RowTriggerEvent = 'insert' | 'update' | 'delete';

/** The start-key modes of `start_flow` (docs/design/flow-control.md#start-keys). */
export type RowTriggerKeyMode = 'singleton' | 'dedupe' | 'debounce';

/** What a declaration says: the table, the alias, and how a row becomes a start. */
export interface RowTriggerDeclaration {
  /** Its name: `^[a-z][a-z0-9_]{0,46}$`. */
  name: string;
  /** `table` (schema public) or `schema.table`: a table of the app's own schemas. */
  table: string;
  /** The alias (or flow slug) a write starts; it must exist when declared. */
  alias: string;
  /** The writes that start runs; default `['insert']`. A delete's row is the old one. */
  events?: RowTriggerEvent[];
  /** The input: an object of these columns (default: the whole row). */
  inputColumns?: string[];
  /** The input: an SQL expression over the row's columns, instead of `inputColumns`. */
  inputExpression?: string;
  /** A boolean SQL expression over the row's columns: rows where it is not true start nothing. */
  condition?: string;
  /** The start key: `'row'` (the primary key's value) or a column's name. */
  keyBy?: string;
  /** The key's mode; required with `keyBy`. */
  mode?: RowTriggerKeyMode;
  /** Dedupe: seconds a key keeps naming its run after the run ended. */
  ttl?: number;
  /** Debounce: seconds after the last write. */
  delay?: number;
  /** Debounce: at most this many seconds after the first write. */
  maxDelay?: number;
  /** True: a backfill of the rows the table already has is pending ({@linkcode backfillRowTrigger}). */
  backfill?: boolean;
  /**
   * Batching (docs/guide/batching.md): the alias's flow has the `batch` option, and each row is
   * an event joining the open batch of `'table'` (one batch for the table), a column's value or
   * an SQL expression's value over the row's columns (a null value joins the table's batch).
   * Not with `keyBy` or `backfill`.
   */
  batchBy?: string;
}

/** A backfill's progress. */
export interface RowTriggerBackfill {
  /** `pending` until a batch found fewer rows than it asked for. */
  state: 'pending' | 'done';
  /** The primary key (as text) of the last row it passed, or null before the first batch. */
  after: string[] | null;
  /** Rows it passed. */
  rows: number;
  /** Runs its starts returned (rows the condition let through). */
  runs: number;
  /** Batches committed. */
  batches: number;
  /** When the last batch committed. */
  updatedAt: Date | null;
}

/** A declaration as the SQL core lists it. */
export interface RowTrigger {
  /** Its name. */
  name: string;
  /** `schema.table`, quoted where needed. */
  table: string;
  /** What a write starts. */
  alias: string;
  /** The writes that start runs. */
  events: RowTriggerEvent[];
  /** The input's columns, or null. */
  inputColumns: string[] | null;
  /** The input's expression, or null (neither: the whole row). */
  inputExpression: string | null;
  /** The condition, or null. */
  condition: string | null;
  /** `'row'`, a column, or null. */
  keyBy: string | null;
  /** The key's mode, or null. */
  mode: RowTriggerKeyMode | null;
  /** Dedupe's seconds, or null. */
  ttl: number | null;
  /** Debounce's seconds, or null. */
  delay: number | null;
  /** Debounce's bound, or null. */
  maxDelay: number | null;
  /** What rows batch by (`'table'`, a column or an expression), or null when not batched. */
  batchBy: string | null;
  /** False when the trigger is missing from the table (dropped by hand). */
  installed: boolean;
  /** Its backfill, or null when none was declared. */
  backfill: RowTriggerBackfill | null;
  /** When it was declared. */
  declaredAt: Date;
}

interface Row {
  name: string;
  table: string;
  alias: string;
  events: RowTriggerEvent[];
  input_columns: string[] | null;
  input_expression: string | null;
  condition: string | null;
  key_by: string | null;
  mode: RowTriggerKeyMode | null;
  ttl: number | null;
  delay: number | null;
  max_delay: number | null;
  batch_by?: string | null;
  installed: boolean;
  backfill: {
    state: 'pending' | 'done';
    after: string[] | null;
    rows: number;
    runs: number;
    batches: number;
    updated_at: string | null;
  } | null;
  declared_at: string;
}

function toRowTrigger(r: Row): RowTrigger {
  return {
    name: r.name,
    table: r.table,
    alias: r.alias,
    events: r.events,
    inputColumns: r.input_columns,
    inputExpression: r.input_expression,
    condition: r.condition,
    keyBy: r.key_by,
    mode: r.mode,
    ttl: r.ttl,
    delay: r.delay,
    maxDelay: r.max_delay,
    batchBy: r.batch_by ?? null,
    installed: r.installed,
    backfill: r.backfill
      ? {
        state: r.backfill.state,
        after: r.backfill.after,
        rows: Number(r.backfill.rows),
        runs: Number(r.backfill.runs),
        batches: Number(r.backfill.batches),
        updatedAt: r.backfill.updated_at ? new Date(r.backfill.updated_at) : null,
      }
      : null,
    declaredAt: new Date(r.declared_at),
  };
}

/** An SQL string literal (standard_conforming_strings: quotes doubled, nothing else). */
function literal(value: string, argument: string): string {
  if (value.includes('\0')) {
    throw new OperationError(
      `${argument} ${JSON.stringify(value.slice(0, 80))} is invalid: it holds U+0000, which ` +
        'PostgreSQL text cannot store',
      '22023',
      undefined,
      { detail: { rule: 'text_nul', argument, value: value.slice(0, 200) } },
    );
  }
  return `'${value.replaceAll("'", "''")}'`;
}

/** A whole number for an `int` argument, or the core's range rule before the server binds it. */
function intArgument(argument: string, value: number | undefined): number | null {
  if (value === undefined) return null;
  if (Number.isInteger(value) && Math.abs(value) <= 2 ** 31 - 1) return value;
  throw new OperationError(
    `${argument} ${String(value)} is invalid: use whole seconds from 1 to 31536000`,
    '22023',
    undefined,
    { detail: { rule: `${argument}_range`, argument, value: String(value) } },
  );
}

/**
 * The named arguments of `switchyard.declare_row_trigger` for `d`, as SQL text (each value a
 * literal): what a migration calls and what {@linkcode declareRowTrigger} sends.
 */
function declarationArguments(d: RowTriggerDeclaration): string {
  const text = (v: string | undefined, a: string) => v === undefined ? null : literal(v, a);
  const array = (v: string[] | undefined, a: string) =>
    v === undefined ? null : `array[${v.map((x) => literal(x, a)).join(', ')}]::text[]`;
  const parts: [string, string | null][] = [
    ['name', literal(d.name, 'name')],
    ['table_name', literal(d.table, 'table_name')],
    ['alias', literal(d.alias, 'alias')],
    ['events', array(d.events, 'events')],
    ['input_columns', array(d.inputColumns, 'input_columns')],
    ['input_expression', text(d.inputExpression, 'input_expression')],
    ['condition', text(d.condition, 'condition')],
    ['key_by', text(d.keyBy, 'key_by')],
    ['mode', text(d.mode, 'mode')],
    ['ttl', intArgument('ttl', d.ttl)?.toString() ?? null],
    ['delay', intArgument('delay', d.delay)?.toString() ?? null],
    ['max_delay', intArgument('max_delay', d.maxDelay)?.toString() ?? null],
    ['backfill', d.backfill ? 'true' : null],
    ['batch_by', text(d.batchBy, 'batch_by')],
  ];
  return parts.filter(([, v]) => v !== null).map(([k, v]) => `${k} => ${v}`).join(',\n  ');
}

/**
 * The text of a migration that declares `d`: one call of `switchyard.declare_row_trigger`,
 * which creates the trigger on the table in the migration's transaction. Applying it twice
 * changes nothing (the same declaration is returned).
 *
 * @example
 * ```ts
 * import { rowTriggerMigration } from '../ops.ts';
 * const text = rowTriggerMigration({ name: 'new_signup', table: 'public.signups',
 *   alias: 'onboarding', inputColumns: ['id', 'email'], keyBy: 'row', mode: 'dedupe' });
 * console.assert(text.includes('switchyard.declare_row_trigger('));
 * ```
 */
export function rowTriggerMigration(d: RowTriggerDeclaration): string {
  return `-- Switchyard row trigger ${d.name}: ${
    (d.events ?? ['insert']).join(', ')
  } on ${d.table} ` +
    `start runs of ${d.alias}\n-- (docs/design/ingestion.md; remove it with ` +
    `switchyard.remove_row_trigger('${d.name.replaceAll("'", "''")}')).\n` +
    `select switchyard.declare_row_trigger(\n  ${declarationArguments(d)}\n);\n`;
}

/**
 * The text of a migration that removes declaration `name` (its trigger, its functions, its row).
 *
 * @example
 * ```ts
 * import { removeRowTriggerMigration } from '../ops.ts';
 * console.assert(removeRowTriggerMigration('new_signup').includes('remove_row_trigger'));
 * ```
 */
export function removeRowTriggerMigration(name: string): string {
  return `-- Removes the Switchyard row trigger ${name} (docs/design/ingestion.md).\n` +
    `select switchyard.remove_row_trigger(${literal(name, 'name')});\n`;
}

/**
 * Declares `d` now (`switchyard.declare_row_trigger`), on a connection whose role may create in
 * schema switchyard (the migration role). Refusals name the value and the rule; nothing is
 * created then. In an app, prefer a migration ({@linkcode rowTriggerMigration}).
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { declareRowTrigger } from '../ops.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * await declareRowTrigger(sql, { name: 'new_signup', table: 'signups', alias: 'onboarding' });
 * await sql.end();
 * ```
 */
export async function declareRowTrigger(
  source: SqlSource,
  d: RowTriggerDeclaration,
): Promise<RowTrigger> {
  const sql = sqlOf(source);
  const text = `select switchyard.declare_row_trigger(${declarationArguments(d)}) as t`;
  const [row] = await call(sql, () => sql.unsafe<{ t: Row }[]>(text));
  return toRowTrigger(row.t);
}

/**
 * Every declaration, by name (`switchyard.list_row_triggers`), with its backfill's progress.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { listRowTriggers } from '../ops.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * for (const t of await listRowTriggers(sql)) console.log(t.name, t.table, t.alias);
 * await sql.end();
 * ```
 */
export async function listRowTriggers(source: SqlSource): Promise<RowTrigger[]> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ l: Row[] }[]>`select switchyard.list_row_triggers() as l`,
  );
  return row.l.map(toRowTrigger);
}

/**
 * A declaration as the dashboard shows it (docs/design/origins.md): the declaration and its
 * backfill, and the runs it started in the last hour.
 *
 * @example
 * ```ts
 * import type { RowTriggerOverview } from './row_triggers.ts';
 * const busy = (t: RowTriggerOverview) => t.runsLastHour > 0;
 * ```
 */
export interface RowTriggerOverview extends RowTrigger {
  /** Runs whose origin names it (its writes' and its backfill's), started in the last hour. */
  runsLastHour: number;
}

/**
 * Every declaration with the runs it started in the last hour (`switchyard.dashboard_row_triggers`,
 * docs/design/origins.md): what the dashboard's row triggers section shows.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { rowTriggerOverviews } from '../ops.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * for (const t of await rowTriggerOverviews(sql)) console.log(t.name, t.installed, t.runsLastHour);
 * await sql.end();
 * ```
 */
export async function rowTriggerOverviews(source: SqlSource): Promise<RowTriggerOverview[]> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () =>
      sql<{ l: (Row & { runs_last_hour: number })[] }[]>`
        select switchyard.dashboard_row_triggers() as l`,
  );
  return row.l.map((r) => ({ ...toRowTrigger(r), runsLastHour: Number(r.runs_last_hour) }));
}

/**
 * Removes declaration `name` (`switchyard.remove_row_trigger`): true if there was one.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { removeRowTrigger } from '../ops.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * console.log(await removeRowTrigger(sql, 'new_signup'));
 * await sql.end();
 * ```
 */
export async function removeRowTrigger(source: SqlSource, name: string): Promise<boolean> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ removed: boolean }[]>`select switchyard.remove_row_trigger(${name}) as removed`,
  );
  return row.removed;
}

/** One committed batch of a backfill. */
export interface RowTriggerBackfillBatch {
  /** The declaration's name. */
  name: string;
  /** Rows this batch passed. */
  rows: number;
  /** Runs their starts returned. */
  runs: number;
  /** True once the backfill has passed every row. */
  done: boolean;
  /** Rows passed so far, this batch's included. */
  totalRows: number;
  /** Runs returned so far. */
  totalRuns: number;
  /** The primary key (as text) of the last row passed. */
  after: string[] | null;
}

/** How {@linkcode backfillRowTrigger} walks the table. */
export interface BackfillRowTriggerOptions {
  /** Rows per batch (each its own transaction), 1 to 10000; default 500. */
  batchSize?: number;
  /** Stop after this many batches, done or not (the next call resumes); default no bound. */
  maxBatches?: number;
  /** Called after each committed batch. */
  onBatch?: (batch: RowTriggerBackfillBatch) => void;
}

/**
 * Runs the backfill of declaration `name` batch by batch (`switchyard.backfill_row_trigger`, one
 * transaction each) until it is done: killed midway, a backfill keeps every committed batch and
 * the next call resumes after the last; on a finished backfill it starts nothing. Answers the
 * last batch (with the totals).
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { backfillRowTrigger } from '../ops.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * const last = await backfillRowTrigger(sql, 'new_signup', { batchSize: 1000 });
 * console.log(`${last.totalRows} rows, ${last.totalRuns} runs`);
 * await sql.end();
 * ```
 */
export async function backfillRowTrigger(
  source: SqlSource,
  name: string,
  options: BackfillRowTriggerOptions = {},
): Promise<RowTriggerBackfillBatch> {
  const sql = sqlOf(source);
  const size = options.batchSize ?? 500;
  if (!Number.isInteger(size) || Math.abs(size) > 2 ** 31 - 1) {
    throw new OperationError(
      `backfill_row_trigger(${JSON.stringify(name)}): batch_size ${String(size)} is invalid: ` +
        'use 1 to 10000 rows',
      '22023',
      undefined,
      { detail: { rule: 'integer_range', argument: 'batch_size', value: String(size) } },
    );
  }
  let batches = 0;
  for (;;) {
    const [row] = await call(
      sql,
      () =>
        sql<{
          b: Omit<RowTriggerBackfillBatch, 'totalRows' | 'totalRuns'> & {
            total_rows: number;
            total_runs: number;
          };
        }[]>`select switchyard.backfill_row_trigger(${name}, ${size}) as b`,
    );
    const batch: RowTriggerBackfillBatch = {
      name: row.b.name,
      rows: Number(row.b.rows),
      runs: Number(row.b.runs),
      done: row.b.done,
      totalRows: Number(row.b.total_rows),
      totalRuns: Number(row.b.total_runs),
      after: row.b.after,
    };
    batches++;
    options.onBatch?.(batch);
    if (batch.done || (options.maxBatches !== undefined && batches >= options.maxBatches)) {
      return batch;
    }
  }
}
