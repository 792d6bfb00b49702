/**
 * Open batches (docs/design/batching.md) as the dashboard shows them: a typed call of the SQL
 * core's `switchyard.dashboard_batches`. Events of a flow with the `batch` option collect per
 * (alias, batch key) until the batch is full or its timeout passed; these are the batches still
 * collecting, the most overdue first.
 *
 * @module
 */
import { OperationError } from '../errors.ts';
import { call, sqlOf, type SqlSource } from './source.ts';

/**
 * One open batch (docs/design/batching.md): its events so far, and when the tick closes it.
 *
 * @example
 * ```ts
 * import type { BatchOverview } from './batches.ts';
 * const late = (b: BatchOverview) => b.overdue || b.lastError !== null;
 * ```
 */
export interface BatchOverview {
  /** The alias (or flow slug) its events started. */
  alias: string;
  /** Its batch key. */
  batchKey: string;
  /** The run it becomes when it closes (every event's start answered it). */
  runId: string;
  /** Its events so far. */
  size: number;
  /** The flow's `batch.maxSize` when it opened: it closes when `size` reaches it. */
  maxSize: number;
  /** When its first event joined. */
  openedAt: Date;
  /** `openedAt` plus the flow's `batch.timeout`: the tick closes it then (up to a tick later). */
  dueAt: Date;
  /** Whether `dueAt` passed and the tick has not closed it yet. */
  overdue: boolean;
  /** Why the tick's last close failed (it tries again at every tick), or null. */
  lastError: string | null;
}

/** Options of {@linkcode batchOverviews}. */
export interface BatchOverviewsOptions {
  /** The time `overdue` is judged at; the SQL core's clock (`clock_now()`) by default. */
  now?: Date;
}

type Row = {
  started_as: string;
  batch_key: string;
  run_id: string;
  size: number;
  max_size: number;
  opened_at: Date;
  due_at: Date;
  overdue: boolean;
  last_error: string | null;
};

/**
 * The open batches, the most overdue (the earliest due) first, then the oldest; at most 100
 * (`switchyard.dashboard_batches`, docs/design/batching.md): what the dashboard's open batches
 * section shows. An invalid `now` is refused (`22023`, rule `instant_invalid`).
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { batchOverviews } from '../ops.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * for (const b of await batchOverviews(sql)) {
 *   console.log(b.alias, b.batchKey, `${b.size}/${b.maxSize}`, b.overdue ? 'overdue' : b.dueAt);
 * }
 * await sql.end();
 * ```
 */
export async function batchOverviews(
  source: SqlSource,
  options: BatchOverviewsOptions = {},
): Promise<BatchOverview[]> {
  const sql = sqlOf(source);
  const now = options.now;
  if (now !== undefined && !(now instanceof Date && Number.isFinite(now.getTime()))) {
    throw new OperationError(
      `batchOverviews: now ${String(now)} is not a valid date: pass a Date with a time, or none ` +
        'for the clock',
      '22023',
      undefined,
      { detail: { rule: 'instant_invalid', argument: 'now', value: String(now) } },
    );
  }
  const rows = await call(
    sql,
    () =>
      now === undefined
        ? sql<Row[]>`select * from switchyard.dashboard_batches()`
        : sql<Row[]>`select * from switchyard.dashboard_batches(${now.toISOString()}::timestamptz)`,
  );
  return rows.map((r) => ({
    alias: r.started_as,
    batchKey: r.batch_key,
    runId: r.run_id,
    size: r.size,
    maxSize: r.max_size,
    openedAt: r.opened_at,
    dueAt: r.due_at,
    overdue: r.overdue,
    lastError: r.last_error,
  }));
}
