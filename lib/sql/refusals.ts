/**
 * What refused and what failed to wake
 * (docs/design/worker.md#refusals-are-seen-where-operators-look and docs/design/versions.md): the
 * refusals queue
 * functions recorded (`switchyard.refusals`, one row per function and kind) and the keep-alive's
 * wakes whose HTTP answer was an error (`switchyard.wake_failures`, from pg_net's responses).
 * The dashboard and `deno task doctor` read them.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/**
 * A refusal a queue function recorded: why its worker did not start (the error of its answer),
 * or paused on unsupported work; the latest message, when first and last, how often.
 *
 * @example
 * ```ts
 * import type { FunctionRefusal } from './refusals.ts';
 * const line = (r: FunctionRefusal) => `${r.functionName} ${r.refusal} ×${r.count}: ${r.message}`;
 * ```
 */
export interface FunctionRefusal {
  /** The queue function. */
  functionName: string;
  /**
   * `function_paused`, `function_disabled`, `coverage`, `worker_config`, `start_failed` (a start
   * refused with that error), or `unsupported_work` (a pause on a batch it could not run).
   */
  refusal: string;
  /** The latest message, as the function logged it (at most 2000 characters). */
  message: string;
  /** The first time. */
  firstAt: Date;
  /** The latest time. */
  lastAt: Date;
  /** How often. */
  count: number;
}

/**
 * The recorded refusals, the latest first; only one function's with `functionName`.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { functionRefusals } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const r of await functionRefusals(client)) console.log(r.functionName, r.refusal, r.message);
 * await client.close();
 * ```
 */
export async function functionRefusals(
  source: SqlSource,
  { functionName }: { functionName?: string } = {},
): Promise<FunctionRefusal[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        function_name: string;
        refusal: string;
        message: string;
        first_at: Date;
        last_at: Date;
        count: string;
      }[]
    >`
      select function_name, refusal, message, first_at, last_at, count::text as count
        from switchyard.refusals
       where ${functionName ?? null}::text is null or function_name = ${functionName ?? null}::text
       order by last_at desc, function_name, refusal`);
  return rows.map((r) => ({
    functionName: r.function_name,
    refusal: r.refusal,
    message: r.message,
    firstAt: r.first_at,
    lastAt: r.last_at,
    count: Number(r.count),
  }));
}

/**
 * A function whose keep-alive wakes were answered with an error (`switchyard.wake_failures`).
 *
 * @example
 * ```ts
 * import type { WakeFailure } from './refusals.ts';
 * const failing = (w: WakeFailure) => w.lastOkAt === null || w.lastFailedAt > w.lastOkAt;
 * ```
 */
export interface WakeFailure {
  /** The queue function woken. */
  functionName: string;
  /** Wakes in the window that failed. */
  failures: number;
  /** The latest failed wake. */
  lastFailedAt: Date;
  /** Its HTTP status (null: no answer — a timeout, a network error, or pg_net refused it). */
  lastStatus: number | null;
  /** What went wrong: `HTTP 409: <body>` (cut at 300 characters), `timed out`, pg_net's error. */
  lastError: string;
  /** The latest wake in the window answered without error, or null. */
  lastOkAt: Date | null;
}

/**
 * Functions whose keep-alive wakes failed over the last `sinceSeconds` (default 6 hours, how
 * long pg_net keeps its responses by default).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { wakeFailures } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const w of await wakeFailures(client)) console.log(w.functionName, w.lastError);
 * await client.close();
 * ```
 */
export async function wakeFailures(
  source: SqlSource,
  { sinceSeconds = 21600 }: { sinceSeconds?: number } = {},
): Promise<WakeFailure[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        function_name: string;
        failures: string;
        last_failed_at: Date;
        last_status: number | null;
        last_error: string;
        last_ok_at: Date | null;
      }[]
    >`
      select function_name, failures::text as failures, last_failed_at, last_status, last_error,
             last_ok_at
        from switchyard.wake_failures(${sinceSeconds}::int)`);
  return rows.map((r) => ({
    functionName: r.function_name,
    failures: Number(r.failures),
    lastFailedAt: r.last_failed_at,
    lastStatus: r.last_status,
    lastError: r.last_error,
    lastOkAt: r.last_ok_at,
  }));
}
