/**
 * Retention (`switchyard.prune`, its pg_cron job; docs/design/versions.md): deletes finished
 * runs with their step states, tasks and PGMQ archive rows, in bounded batches that are safe
 * while workers run. Every decision stays in SQL.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/** What one prune batch removed (`switchyard.prune`), or the sum over several. */
export interface PruneResult {
  /** Completed and failed runs deleted. */
  runs: number;
  /** Their step states. */
  stepStates: number;
  /** Their tasks. */
  stepTasks: number;
  /** PGMQ archive rows of their messages (`pgmq.a_<queue>`). */
  archiveRows: number;
  /** Their stale messages that were still on a queue (nobody held them). */
  queueMessages: number;
  /**
   * Runs old enough but left for a later batch: someone held one of their rows, or a message
   * of theirs was still held on a queue (a task of a failed run still running elsewhere).
   */
  heldRuns: number;
  /** Keep-alive wake records older than the cutoff. */
  wakeRequests: number;
  /** Rows of workers that stopped or went silent before the cutoff. */
  workers: number;
}

/** Options of {@linkcode prune}. */
export interface PruneOptions {
  /**
   * A PostgreSQL interval, at least one hour: runs that finished before `now() - olderThan`
   * are deleted, such as `'7 days'` or `'36 hours'`.
   */
  olderThan: string;
  /** At most this many runs per batch (1-10000, default 1000). */
  batchSize?: number;
}

type PruneRow = {
  runs: string;
  step_states: string;
  step_tasks: string;
  archive_rows: string;
  queue_messages: string;
  held_runs: string;
  wake_requests: string;
  workers: string;
};

/** A result with every count zero. */
function emptyResult(): PruneResult {
  return {
    runs: 0,
    stepStates: 0,
    stepTasks: 0,
    archiveRows: 0,
    queueMessages: 0,
    heldRuns: 0,
    wakeRequests: 0,
    workers: 0,
  };
}

/**
 * Runs one bounded batch of retention: at most `batchSize` runs that completed or failed
 * before `now() - olderThan`, with every row they left (step states, tasks, the PGMQ
 * archive rows of their messages), and as many old wake records and dead worker rows.
 * Never touches an open run, and never waits for a lock the claim path holds.
 *
 * @throws {OperationError} when `olderThan` is under an hour or `batchSize` is outside 1-10000
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { prune } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const removed = await prune(client, { olderThan: '7 days', batchSize: 500 });
 * console.log(`${removed.runs} runs, ${removed.archiveRows} archived messages`);
 * await client.close();
 * ```
 */
export async function prune(
  source: SqlSource,
  { olderThan, batchSize = 1000 }: PruneOptions,
): Promise<PruneResult> {
  const sql = sqlOf(source);
  const [r] = await call(sql, () =>
    sql<PruneRow[]>`
      select runs::text, step_states::text, step_tasks::text, archive_rows::text,
             queue_messages::text, held_runs::text, wake_requests::text, workers::text
        from switchyard.prune(${olderThan}::interval, ${batchSize}::int)`);
  return {
    runs: Number(r.runs),
    stepStates: Number(r.step_states),
    stepTasks: Number(r.step_tasks),
    archiveRows: Number(r.archive_rows),
    queueMessages: Number(r.queue_messages),
    heldRuns: Number(r.held_runs),
    wakeRequests: Number(r.wake_requests),
    workers: Number(r.workers),
  };
}

/** Options of {@linkcode pruneAll}. */
export interface PruneAllOptions extends PruneOptions {
  /** Called after every batch with that batch, the running total and the batch number. */
  onBatch?: (batch: PruneResult, total: PruneResult, index: number) => void;
  /** Stops after the current batch when aborted. */
  signal?: AbortSignal;
}

/**
 * Runs {@linkcode prune} batch after batch, each its own transaction, until a batch finds
 * nothing more to remove (or only held runs); returns the totals. Held runs are counted by
 * the last batch only, since every batch meets them again.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { pruneAll } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const total = await pruneAll(client, {
 *   olderThan: '30 days',
 *   onBatch: (batch, sum, i) => console.log(`batch ${i}: ${batch.runs} runs (${sum.runs} so far)`),
 * });
 * console.log(`removed ${total.runs} runs`);
 * await client.close();
 * ```
 */
export async function pruneAll(
  source: SqlSource,
  { olderThan, batchSize = 1000, onBatch, signal }: PruneAllOptions,
): Promise<PruneResult> {
  const total = emptyResult();
  for (let index = 1;; index++) {
    const batch = await prune(source, { olderThan, batchSize });
    for (const key of Object.keys(total) as (keyof PruneResult)[]) {
      total[key] = key === 'heldRuns' ? batch[key] : total[key] + batch[key];
    }
    onBatch?.(batch, { ...total }, index);
    // A full batch may have more behind it; a batch of held runs only would repeat itself.
    const more = (batch.runs > 0 && batch.runs + batch.heldRuns >= batchSize) ||
      batch.wakeRequests >= batchSize || batch.workers >= batchSize;
    if (!more || signal?.aborted) return total;
  }
}

/** Options of {@linkcode schedulePrune} and {@linkcode pruneCommand}. */
export interface SchedulePruneOptions {
  /** A PostgreSQL interval of at least one hour (default `'7 days'`). */
  olderThan?: string;
  /** pg_cron schedule (default `'* * * * *'`, every minute); each run is one batch. */
  schedule?: string;
  /** Runs per batch (default 1000). */
  batchSize?: number;
}

/**
 * The SQL statement the retention job runs. Use it with `cron.schedule_in_database(...)`
 * where pg_cron lives in another database.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { pruneCommand } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(await pruneCommand(client, { olderThan: '14 days' }));
 * await client.close();
 * ```
 */
export async function pruneCommand(
  source: SqlSource,
  { olderThan = '7 days', batchSize = 1000 }: Omit<SchedulePruneOptions, 'schedule'> = {},
): Promise<string> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ command: string }[]>`
      select switchyard.prune_command(${olderThan}::interval, ${batchSize}::int) as command`);
  return row.command;
}

/**
 * Creates or updates the pg_cron job `switchyard_prune` in the connected database (the one
 * pg_cron is installed in, as on Supabase); returns its job id. Each run removes one batch,
 * so the defaults (every minute, 1000 runs) keep up with 1.4 million finished runs a day.
 *
 * @throws {PgCronMissingError} when pg_cron is not installed in this database
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { schedulePrune } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const jobId = await schedulePrune(client, { olderThan: '7 days' });
 * console.log(`retention job ${jobId}`);
 * await client.close();
 * ```
 */
export async function schedulePrune(
  source: SqlSource,
  { olderThan = '7 days', schedule = '* * * * *', batchSize = 1000 }: SchedulePruneOptions = {},
): Promise<number> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ job: string }[]>`
      select switchyard.schedule_prune(${olderThan}::interval, ${schedule}::text,
                                       ${batchSize}::int)::text as job`);
  return Number(row.job);
}

/**
 * Removes the retention job; false when there was none (or no pg_cron).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { unschedulePrune } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * await unschedulePrune(client);
 * await client.close();
 * ```
 */
export async function unschedulePrune(source: SqlSource): Promise<boolean> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ removed: boolean }[]>`select switchyard.unschedule_prune() as removed`,
  );
  return row.removed;
}
