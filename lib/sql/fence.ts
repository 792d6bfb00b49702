/**
 * The fenced rollout (`switchyard.fence_begin`, `fence_status`, `fence_end`;
 * docs/design/versions.md): record and disable the affected queue functions, wait until
 * their workers stopped, deploy, re-enable exactly those that were enabled.
 *
 * @module
 */
import { FenceStateError, FenceTimeoutError } from '../errors.ts';
import type { FenceStatus } from './fence_status.ts';
import { call, sqlOf, type SqlSource } from './source.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from './windows.ts';

export type { FenceFunctionStatus, FenceStatus } from './fence_status.ts';

/** One function as {@linkcode fenceBegin} recorded it. */
export interface FenceMember {
  /** The fence. */
  fenceId: number;
  /** The fenced function. */
  functionName: string;
  /** The exact `enabled` value before the fence; {@linkcode fenceEnd} restores it. */
  wasEnabled: boolean;
  /** Workers not yet stopped that were asked to stop. */
  deprecatedWorkers: number;
}

/**
 * Opens a fence over every function a rollout affects (`switchyard.fence_begin`):
 * records each one's exact `enabled` value, disables it and deprecates its live
 * workers. One fence at a time: fences do not nest.
 *
 * @throws {UnknownFunctionError} naming every unknown function (nothing changes)
 * @throws {FenceStateError} when a fence is already open
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { fenceBegin } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const members = await fenceBegin(client, ['classify-threads-worker', 'notifications-worker']);
 * console.log(members.map((m) => `${m.functionName} was ${m.wasEnabled ? 'enabled' : 'disabled'}`));
 * await client.close();
 * ```
 */
export async function fenceBegin(
  source: SqlSource,
  functionNames: readonly string[],
): Promise<FenceMember[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        fence_id: string;
        function_name: string;
        was_enabled: boolean;
        deprecated_workers: number;
      }[]
    >`
      select fence_id::text, function_name, was_enabled, deprecated_workers
        from switchyard.fence_begin(array(
          select jsonb_array_elements_text(${sql.json([...functionNames])}::jsonb)))`);
  return rows.map((r) => ({
    fenceId: Number(r.fence_id),
    functionName: r.function_name,
    wasEnabled: r.was_enabled,
    deprecatedWorkers: r.deprecated_workers,
  }));
}

/**
 * The open fence with per-function progress, or null when no fence is open. A worker counts
 * as live within its own heartbeat window, or within `heartbeatWindowSeconds` (default 15)
 * when that is larger (docs/design/versions.md).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { fenceStatus } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const status = await fenceStatus(client);
 * console.log(status ? (status.quiet ? 'quiet' : 'waiting') : 'no fence');
 * await client.close();
 * ```
 */
export async function fenceStatus(
  source: SqlSource,
  { heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS } = {},
): Promise<FenceStatus | null> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        fence_id: string;
        opened_at: Date;
        function_name: string;
        queue_name: string;
        was_enabled: boolean;
        enabled: boolean;
        paused: boolean;
        live_workers: number;
        started_tasks: number;
        stalled_tasks: number;
        quiet: boolean;
      }[]
    >`
      select fence_id::text, opened_at, function_name, queue_name, was_enabled, enabled, paused,
             live_workers, started_tasks, stalled_tasks, quiet
        from switchyard.fence_status(${heartbeatWindowSeconds}::int)`);
  if (rows.length === 0) return null;
  const functions = rows.map((r) => ({
    functionName: r.function_name,
    queueName: r.queue_name,
    wasEnabled: r.was_enabled,
    enabled: r.enabled,
    paused: r.paused,
    liveWorkers: r.live_workers,
    startedTasks: r.started_tasks,
    stalledTasks: r.stalled_tasks,
    quiet: r.quiet,
  }));
  return {
    fenceId: Number(rows[0].fence_id),
    openedAt: rows[0].opened_at,
    functions,
    quiet: functions.every((f) => f.quiet),
  };
}

/** Options of {@linkcode waitForFence}. */
export interface WaitForFenceOptions {
  /** Give up after this long (default 600 000 ms): throws {@linkcode FenceTimeoutError}. */
  timeoutMs?: number;
  /** Milliseconds between status reads (default 500). */
  intervalMs?: number;
  /**
   * Seconds without a heartbeat after which a worker no longer counts as live (default 15): it
   * widens each worker's own window, never narrows it (docs/design/versions.md).
   */
  heartbeatWindowSeconds?: number;
  /** Called with every status read, before the wait decides. */
  onProgress?: (status: FenceStatus) => void;
}

/**
 * Polls {@linkcode fenceStatus} until every fenced function is quiet (no live
 * worker, no started task of one) and returns that status.
 *
 * @throws {FenceStateError} when no fence is open
 * @throws {FenceTimeoutError} when the fence is not quiet in time (it stays open)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { waitForFence } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const status = await waitForFence(client, { timeoutMs: 120_000 });
 * console.log(`fence ${status.fenceId} is quiet`);
 * await client.close();
 * ```
 */
export async function waitForFence(
  source: SqlSource,
  {
    timeoutMs = 600_000,
    intervalMs = 500,
    heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS,
    onProgress,
  }: WaitForFenceOptions = {},
): Promise<FenceStatus> {
  const deadline = Date.now() + timeoutMs;
  let first = true;
  for (;;) {
    const status = await fenceStatus(source, { heartbeatWindowSeconds });
    if (status === null) {
      if (first) throw new FenceStateError('waitForFence: no fence is open', 'SY011');
      throw new FenceTimeoutError(timeoutMs, null);
    }
    first = false;
    onProgress?.(status);
    if (status.quiet) return status;
    if (Date.now() >= deadline) throw new FenceTimeoutError(timeoutMs, status);
    await new Promise((r) =>
      setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - Date.now())))
    );
  }
}

/** One function as {@linkcode fenceEnd} left it. */
export interface FenceEndResult {
  /** The fence just closed. */
  fenceId: number;
  /** The function. */
  functionName: string;
  /** Its `enabled` value before the fence. */
  wasEnabled: boolean;
  /** Now equal to `wasEnabled`. */
  enabled: boolean;
}

/**
 * Closes the open fence (`switchyard.fence_end`): every member's `enabled` goes
 * back to its recorded value, so only functions enabled before are enabled.
 *
 * @throws {FenceStateError} when no fence is open
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { fenceEnd } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const f of await fenceEnd(client)) console.log(f.functionName, f.enabled);
 * await client.close();
 * ```
 */
export async function fenceEnd(source: SqlSource): Promise<FenceEndResult[]> {
  const sql = sqlOf(source);
  const rows = await call(
    sql,
    () =>
      sql<{ fence_id: string; function_name: string; was_enabled: boolean; enabled: boolean }[]>`
      select fence_id::text, function_name, was_enabled, enabled from switchyard.fence_end()`,
  );
  return rows.map((r) => ({
    fenceId: Number(r.fence_id),
    functionName: r.function_name,
    wasEnabled: r.was_enabled,
    enabled: r.enabled,
  }));
}
