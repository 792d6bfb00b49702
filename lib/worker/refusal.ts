/**
 * Refusals (docs/design/worker.md#refusals-are-seen-where-operators-look): why a worker did not
 * start, or paused on unsupported
 * work, described once — the queue function's HTTP answer, its log line and the row of
 * `switchyard.refusals` carry the same text. On a hosted project the caller of a queue function
 * is the keep-alive's pg_net, whose answers nobody reads, so the log and the database are where
 * an operator sees a refusal (the dashboard and `deno task doctor` read the rows).
 *
 * @module
 */
import {
  ConnectionStringError,
  CoverageError,
  DatabaseConnectionError,
  FunctionDisabledError,
  FunctionPausedError,
  WorkerConfigError,
} from '../errors.ts';
import { MAX_REASON_CHARS } from '../sql/function_state.ts';
import { openSql, resolveConnectionString, type Sql } from '../sql/connection.ts';
import { WorkerQueries } from '../sql/worker_queries.ts';
import { errorText, type WorkerLogger } from './persist.ts';

/**
 * What a refusal was: the error of a refused start's answer, or a pause on unsupported work.
 *
 * @example
 * ```ts
 * import type { RefusalKind } from './refusal.ts';
 * const kind: RefusalKind = 'coverage';
 * ```
 */
export type RefusalKind =
  | 'function_paused'
  | 'function_disabled'
  | 'coverage'
  | 'worker_config'
  | 'start_failed'
  | 'unsupported_work';

/**
 * A refused start as the queue function answers it.
 *
 * @example
 * ```ts
 * import { startRefusal } from './refusal.ts';
 * import { FunctionDisabledError } from '../errors.ts';
 * const r = startRefusal(new FunctionDisabledError('pings-worker'));
 * console.assert(r.status === 409 && r.error === 'function_disabled');
 * ```
 */
export interface StartRefusal {
  /** The HTTP status of the answer. */
  status: number;
  /** The answer's `error`, and the kind recorded. */
  error: Exclude<RefusalKind, 'unsupported_work'>;
  /** What was refused and what to do. */
  message: string;
  /** The answer's body (JSON), `error` and `message` included. */
  body: Record<string, unknown>;
}

/** A reason cut at {@linkcode MAX_REASON_CHARS}, with its length when it was longer. */
function clipReason(reason: string): string {
  return reason.length <= MAX_REASON_CHARS
    ? reason
    : `${reason.slice(0, MAX_REASON_CHARS)}... (${reason.length} characters)`;
}

/**
 * Describes why a start was refused, from the error `startWorker` rejected with.
 *
 * @example
 * ```ts
 * import { startRefusal } from './refusal.ts';
 * console.assert(startRefusal(new Error('boom')).error === 'start_failed');
 * ```
 */
export function startRefusal(e: unknown): StartRefusal {
  if (e instanceof FunctionPausedError) {
    // The reason once, bounded; the message does not repeat it.
    const message = `function "${e.functionName}" is paused: fix the cause, then resume it ` +
      `(npx switchyard resume ${e.functionName})`;
    return {
      status: 409,
      error: 'function_paused',
      message,
      body: {
        error: 'function_paused',
        message,
        functionName: e.functionName,
        reason: clipReason(e.reason),
      },
    };
  }
  if (e instanceof FunctionDisabledError) {
    return {
      status: 409,
      error: 'function_disabled',
      message: e.message,
      body: { error: 'function_disabled', message: e.message, functionName: e.functionName },
    };
  }
  if (e instanceof CoverageError) {
    return {
      status: 409,
      error: 'coverage',
      message: e.message,
      body: {
        error: 'coverage',
        message: e.message,
        queueName: e.queueName,
        missingPairs: e.missingPairs,
        missing: e.missing,
      },
    };
  }
  if (e instanceof WorkerConfigError || e instanceof ConnectionStringError) {
    return {
      status: 500,
      error: 'worker_config',
      message: e.message,
      body: { error: 'worker_config', message: e.message },
    };
  }
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return { status: 500, error: 'start_failed', message, body: { error: 'start_failed', message } };
}

/**
 * The text a refused start is logged and recorded with: the message, and a pause's reason.
 *
 * @example
 * ```ts
 * import { refusalText, startRefusal } from './refusal.ts';
 * import { FunctionPausedError } from '../errors.ts';
 * console.log(refusalText(startRefusal(new FunctionPausedError('pings-worker', 'maintenance'))));
 * ```
 */
export function refusalText(r: StartRefusal): string {
  const reason = r.body.reason;
  return typeof reason === 'string' ? `${r.message}; reason: ${reason}` : r.message;
}

/** How long recording a refusal may delay the answer. */
const RECORD_TIMEOUT_MS = 5_000;

/** Where {@linkcode recordRefusal} writes: the worker's client, else a connection of its own. */
export interface RefusalRecordTarget {
  /** A client to use (the caller's). */
  sql?: Sql;
  /** Else a connection string: the option, or the environment's (the one resolver). */
  connectionString?: string;
  env?: (name: string) => string | undefined;
  /** Where a refusal that could not be recorded is said. */
  log: WorkerLogger;
}

/**
 * Records a refusal in `switchyard.refusals` (`switchyard.record_refusal`), best effort: a
 * failure is logged as a warning, never thrown, and the recording gives up after 5 seconds. A
 * refusal because the database is unreachable is not tried (the function's log has it).
 *
 * @example
 * ```ts
 * import { recordRefusal } from './refusal.ts';
 * await recordRefusal('pings-worker', 'coverage', 'the registry lacks pingsV2/ping', {
 *   connectionString: Deno.env.get('DATABASE_URL'),
 *   log: console,
 * });
 * ```
 */
export async function recordRefusal(
  functionName: string,
  refusal: RefusalKind,
  message: string,
  target: RefusalRecordTarget,
  cause?: unknown,
): Promise<void> {
  if (cause instanceof DatabaseConnectionError) return;
  let sql = target.sql;
  let own: Sql | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    if (sql === undefined) {
      const url = resolveConnectionString(target.connectionString, target.env);
      if (!url) return; // the refusal says there is no database to record it in
      own = sql = openSql(url, { max: 1 });
    }
    // PostgreSQL text cannot hold a NUL character: it is written out instead.
    const text = message.replaceAll('\0', '\\u0000');
    await Promise.race([
      new WorkerQueries(sql).recordRefusal(functionName, refusal, text),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${RECORD_TIMEOUT_MS} ms`)),
          RECORD_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (e) {
    target.log.warn(
      `the refusal (${refusal}) of function "${functionName}" was not recorded in ` +
        `switchyard.refusals: ${errorText(e)}`,
    );
  } finally {
    clearTimeout(timer);
    await own?.end({ timeout: 1 }).catch(() => {});
  }
}
