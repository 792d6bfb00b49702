/**
 * Queue functions' durable flags: read them, pause and resume
 * (`switchyard.function_states`, `pause_function`, `resume_function`;
 * docs/design/versions.md). Every decision stays in SQL.
 *
 * @module
 */
import { SwitchyardError } from '../errors.ts';
import { call, sqlOf, type SqlSource } from './source.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from './windows.ts';

/**
 * The longest pause or cancel reason, in characters: the SQL core's `max_reason_chars`
 * (docs/design/limits.md). Longer reasons are refused, and a 409 shows at most this much.
 *
 * @example
 * ```ts
 * import { MAX_REASON_CHARS } from './function_state.ts';
 *
 * console.assert(MAX_REASON_CHARS === 1000);
 * ```
 */
export const MAX_REASON_CHARS = 1000;

/**
 * Refuses a pause or cancel reason PostgreSQL text cannot hold (a NUL character), naming the
 * call and the rule, before anything is sent.
 *
 * @example
 * ```ts
 * import { assertStorableReason } from './function_state.ts';
 * assertStorableReason('pause', 'maintenance');
 * ```
 */
export function assertStorableReason(what: string, reason: unknown): void {
  if (typeof reason === 'string' && reason.includes('\0')) {
    throw new SwitchyardError(
      `${what}: reason is invalid: it contains a NUL character (\\u0000), which PostgreSQL ` +
        'text cannot hold; leave it out',
    );
  }
}

/** The durable flags of one queue function (`switchyard.worker_functions`). */
export interface FunctionState {
  /** The function (Edge Function) name. */
  functionName: string;
  /** The one physical queue its workers poll. */
  queueName: string;
  /** False while a fence (or an operator) disabled it. */
  enabled: boolean;
  /** Set while paused; only a resume clears it. */
  pausedAt: Date | null;
  /** Why it was paused. */
  pauseReason: string | null;
  /** The last keep-alive wake. */
  lastWokenAt: Date | null;
  /**
   * Workers that have not stopped, are not deprecated and heart-beat within their own window,
   * or within the caller's `heartbeatWindowSeconds` (default 15) when that is larger
   * (docs/design/versions.md).
   */
  liveWorkers: number;
}

/**
 * Reads one function's flags; null when the function is unknown.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { functionState } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const state = await functionState(client, 'classify-threads-worker');
 * console.log(state?.pauseReason ?? 'not paused');
 * await client.close();
 * ```
 */
export async function functionState(
  source: SqlSource,
  functionName: string,
  { heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS } = {},
): Promise<FunctionState | null> {
  return (await functionStates(source, functionName, heartbeatWindowSeconds))[0] ?? null;
}

/**
 * Every registered queue function with its flags, by name.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { listFunctions } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const f of await listFunctions(client)) console.log(f.functionName, f.enabled);
 * await client.close();
 * ```
 */
export async function listFunctions(
  source: SqlSource,
  { heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS } = {},
): Promise<FunctionState[]> {
  return await functionStates(source, null, heartbeatWindowSeconds);
}

/** `switchyard.function_states`: every function, or the one named (none when unknown). */
async function functionStates(
  source: SqlSource,
  functionName: string | null,
  heartbeatWindowSeconds: number,
): Promise<FunctionState[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        function_name: string;
        queue_name: string;
        enabled: boolean;
        paused_at: Date | null;
        pause_reason: string | null;
        last_woken_at: Date | null;
        live_workers: number;
      }[]
    >`
      select function_name, queue_name, enabled, paused_at, pause_reason, last_woken_at,
             live_workers
        from switchyard.function_states(${functionName}::text, ${heartbeatWindowSeconds}::int)`);
  return rows.map((r) => ({
    functionName: r.function_name,
    queueName: r.queue_name,
    enabled: r.enabled,
    pausedAt: r.paused_at,
    pauseReason: r.pause_reason,
    lastWokenAt: r.last_woken_at,
    liveWorkers: r.live_workers,
  }));
}

/** What {@linkcode pauseFunction} did. */
export interface PauseResult {
  /** The function. */
  functionName: string;
  /** False when the function was already paused (its first reason is kept). */
  changed: boolean;
  /** Since when the function is paused. */
  pausedAt: Date;
  /** The reason in force: the given one, or the earlier one when it was already paused. */
  reason: string;
}

/**
 * Pauses a queue function durably (`switchyard.pause_function`): its workers stop
 * at their next heartbeat, new ones refuse to start, the keep-alive skips it.
 * Only {@linkcode resumeFunction} undoes it.
 *
 * @throws {UnknownFunctionError} when no such function is registered
 * @throws {OperationError} when the reason is empty
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { pauseFunction } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const result = await pauseFunction(client, 'classify-threads-worker', 'bad deploy, investigating');
 * console.log(result.changed ? 'paused' : `already paused: ${result.reason}`);
 * await client.close();
 * ```
 */
export async function pauseFunction(
  source: SqlSource,
  functionName: string,
  reason: string,
): Promise<PauseResult> {
  assertStorableReason('pause', reason);
  const sql = sqlOf(source);
  return await call(sql, () =>
    sql.begin(async (tx) => {
      const [{ changed }] = await tx<{ changed: boolean }[]>`
        select switchyard.pause_function(${functionName}::text, ${reason}::text) as changed`;
      const [row] = await tx<{ paused_at: Date; pause_reason: string }[]>`
        select paused_at, pause_reason from switchyard.worker_functions
         where function_name = ${functionName}`;
      return { functionName, changed, pausedAt: row.paused_at, reason: row.pause_reason };
    }));
}

/** What {@linkcode resumeFunction} did. */
export interface ResumeResult {
  /** The function. */
  functionName: string;
  /** False when the function was not paused. */
  changed: boolean;
  /** The reason the function was paused for, when it was. */
  previousReason: string | null;
}

/**
 * Resumes a paused function (`switchyard.resume_function`): clears the pause and
 * its reason. The only way back from a pause; it does not touch `enabled`.
 *
 * @throws {UnknownFunctionError} when no such function is registered
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { resumeFunction } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const { changed } = await resumeFunction(client, 'classify-threads-worker');
 * console.log(changed ? 'resumed' : 'was not paused');
 * await client.close();
 * ```
 */
export async function resumeFunction(
  source: SqlSource,
  functionName: string,
): Promise<ResumeResult> {
  const sql = sqlOf(source);
  return await call(sql, () =>
    sql.begin(async (tx) => {
      const before = await tx<{ pause_reason: string | null }[]>`
        select pause_reason from switchyard.worker_functions
         where function_name = ${functionName} for update`;
      const [{ changed }] = await tx<{ changed: boolean }[]>`
        select switchyard.resume_function(${functionName}::text) as changed`;
      return { functionName, changed, previousReason: before[0]?.pause_reason ?? null };
    }));
}
