/**
 * Operations on queue functions (DESIGN.md §6): keep-alive, pause and resume,
 * the fenced rollout and version drain status. Typed wrappers over the SQL core
 * (`switchyard.keep_alive`, `pause_function`, `fence_begin`, `drain_status`, …);
 * every decision stays in SQL. The `deno task pause|resume|fence|drain` scripts
 * are thin command lines over this module.
 *
 * Every function takes a postgres.js client, or anything with one as `sql`
 * (the {@linkcode Client} of `connect()`).
 *
 * @example
 * ```ts
 * import { connect, fenceBegin, fenceEnd, waitForFence } from './mod.ts';
 *
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * await fenceBegin(client, ['classify-threads-worker', 'notifications-worker']);
 * await waitForFence(client, { onProgress: (s) => console.log(s.functions) });
 * // ... deploy the replacement registries while the functions are disabled ...
 * await fenceEnd(client);
 * await client.close();
 * ```
 *
 * @module
 */
import type postgres from 'postgres';
import type { Client } from './client.ts';
import { SwitchyardError } from './errors.ts';
import { sqlErrorDetail } from './worker/queries.ts';

/** A postgres.js client, or an object that carries one (such as a {@linkcode Client}). */
export type SqlSource = postgres.Sql | Pick<Client, 'sql'>;

function sqlOf(source: SqlSource): postgres.Sql {
  return typeof source === 'function' ? source : source.sql;
}

// ---------------------------------------------------------------------------
// Errors

/**
 * An operation the database refused: the message names the value and the rule,
 * `code` is the SQLSTATE and `hint` the server's hint, when it gave one.
 *
 * @example
 * ```ts
 * import { OperationError } from './operations.ts';
 * const e = new OperationError('keep_alive: debounce_seconds -1 is invalid', '22023');
 * console.assert(e.code === '22023');
 * ```
 */
export class OperationError extends SwitchyardError {
  /** The SQLSTATE the server raised. */
  readonly code: string;
  /** What to do about it, when the server said. */
  readonly hint: string | undefined;
  /** Creates the error from the server's message, SQLSTATE and hint. */
  constructor(message: string, code: string, hint?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OperationError';
    this.code = code;
    this.hint = hint;
  }
}

/**
 * A function name that no `switchyard.worker_functions` row has.
 *
 * @example
 * ```ts
 * import { UnknownFunctionError } from './operations.ts';
 * const e = new UnknownFunctionError(['nope-worker'], 'unknown function "nope-worker"');
 * console.assert(e.functionNames[0] === 'nope-worker');
 * ```
 */
export class UnknownFunctionError extends OperationError {
  /** Every unknown name. */
  readonly functionNames: string[];
  /** Creates the error for the unknown names, with the server's message. */
  constructor(functionNames: string[], message: string, options?: ErrorOptions) {
    super(message, 'SY003', undefined, options);
    this.name = 'UnknownFunctionError';
    this.functionNames = functionNames;
  }
}

/**
 * A fence operation out of order: `fence_begin` while a fence is open (fences do
 * not nest), or `fence_end` while none is.
 *
 * @example
 * ```ts
 * import { FenceStateError } from './operations.ts';
 * const e = new FenceStateError('fence_end: no fence is open', 'SY011');
 * console.assert(e.fenceOpen === false);
 * ```
 */
export class FenceStateError extends OperationError {
  /** True when the refusal was because a fence is open, false because none is. */
  readonly fenceOpen: boolean;
  /** Creates the error; `SY010`: a fence is open, `SY011`: none is. */
  constructor(message: string, code: 'SY010' | 'SY011', hint?: string, options?: ErrorOptions) {
    super(message, code, hint, options);
    this.name = 'FenceStateError';
    this.fenceOpen = code === 'SY010';
  }
}

/**
 * `waitForFence` ran out of time: some fenced function still has a live worker
 * or a started task of one. The fence stays open.
 *
 * @example
 * ```ts
 * import { FenceTimeoutError } from './operations.ts';
 * const e = new FenceTimeoutError(5_000, null);
 * console.assert(e.timeoutMs === 5_000);
 * ```
 */
export class FenceTimeoutError extends SwitchyardError {
  /** How long the wait lasted. */
  readonly timeoutMs: number;
  /** The last status read (null when the fence was closed meanwhile). */
  readonly status: FenceStatus | null;
  /** Creates the error naming every function that is not quiet yet. */
  constructor(timeoutMs: number, status: FenceStatus | null) {
    const busy = status?.functions.filter((f) => !f.quiet) ?? [];
    super(
      `fence ${status?.fenceId ?? '(closed)'} is not quiet after ${timeoutMs / 1000} s: ` +
        (busy.length
          ? busy.map((f) =>
            `"${f.functionName}" has ${f.liveWorkers} live worker(s) and ${f.startedTasks} started task(s)`
          ).join('; ')
          : 'the fence was closed meanwhile') +
        '; the fence stays open: wait again, or find the worker that does not stop',
    );
    this.name = 'FenceTimeoutError';
    this.timeoutMs = timeoutMs;
    this.status = status;
  }
}

/**
 * `schedule_keep_alive` needs pg_cron in the current database.
 *
 * @example
 * ```ts
 * import { PgCronMissingError } from './operations.ts';
 * const e = new PgCronMissingError('schedule_keep_alive: pg_cron is not installed in database "app"');
 * console.assert(e.code === 'SY020');
 * ```
 */
export class PgCronMissingError extends OperationError {
  /** Creates the error from the server's message and hint. */
  constructor(message: string, hint?: string, options?: ErrorOptions) {
    super(message, 'SY020', hint, options);
    this.name = 'PgCronMissingError';
  }
}

/**
 * Turns the SQL core's refusals into the classes above, by SQLSTATE and the JSON detail
 * (docs/ARCHITECTURE.md §10); anything else passes through.
 */
function translate(e: unknown): unknown {
  const err = e as { code?: string; message?: string; hint?: string };
  if (typeof err?.code !== 'string' || typeof err.message !== 'string') return e;
  const message = err.message;
  const hint = err.hint || undefined;
  switch (err.code) {
    case 'SY003': {
      const names = sqlErrorDetail(e).function_names;
      return new UnknownFunctionError(
        Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [],
        message,
        { cause: e },
      );
    }
    case 'SY010':
    case 'SY011':
      return new FenceStateError(message, err.code, hint, { cause: e });
    case 'SY020':
      return new PgCronMissingError(message, hint, { cause: e });
    case '22023':
      return new OperationError(message, err.code, hint, { cause: e });
  }
  return e;
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw translate(e);
  }
}

// ---------------------------------------------------------------------------
// Queue functions: state, pause and resume

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
  /** Workers that have not stopped, are not deprecated and heart-beat within the window. */
  liveWorkers: number;
}

/**
 * Reads one function's flags; null when the function is unknown.
 *
 * @example
 * ```ts
 * import { connect, functionState } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * const state = await functionState(client, 'classify-threads-worker');
 * console.log(state?.pauseReason ?? 'not paused');
 * await client.close();
 * ```
 */
export async function functionState(
  source: SqlSource,
  functionName: string,
  { heartbeatWindowSeconds = 15 } = {},
): Promise<FunctionState | null> {
  return (await functionStates(source, functionName, heartbeatWindowSeconds))[0] ?? null;
}

/**
 * Every registered queue function with its flags, by name.
 *
 * @example
 * ```ts
 * import { connect, listFunctions } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * for (const f of await listFunctions(client)) console.log(f.functionName, f.enabled);
 * await client.close();
 * ```
 */
export async function listFunctions(
  source: SqlSource,
  { heartbeatWindowSeconds = 15 } = {},
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
  const rows = await call(() =>
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
        from switchyard.function_states(${functionName}::text, ${heartbeatWindowSeconds}::int)`
  );
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
 * import { connect, pauseFunction } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
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
  const sql = sqlOf(source);
  return await call(() =>
    sql.begin(async (tx) => {
      const [{ changed }] = await tx<{ changed: boolean }[]>`
        select switchyard.pause_function(${functionName}::text, ${reason}::text) as changed`;
      const [row] = await tx<{ paused_at: Date; pause_reason: string }[]>`
        select paused_at, pause_reason from switchyard.worker_functions
         where function_name = ${functionName}`;
      return { functionName, changed, pausedAt: row.paused_at, reason: row.pause_reason };
    })
  );
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
 * import { connect, resumeFunction } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
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
  return await call(() =>
    sql.begin(async (tx) => {
      const before = await tx<{ pause_reason: string | null }[]>`
        select pause_reason from switchyard.worker_functions
         where function_name = ${functionName} for update`;
      const [{ changed }] = await tx<{ changed: boolean }[]>`
        select switchyard.resume_function(${functionName}::text) as changed`;
      return { functionName, changed, previousReason: before[0]?.pause_reason ?? null };
    })
  );
}

// ---------------------------------------------------------------------------
// Keep-alive

/** One wake the keep-alive made (`switchyard.keep_alive`). */
export interface WakeRequest {
  /** The function woken. */
  functionName: string;
  /** Its queue. */
  queueName: string;
  /** The function's URL (or its gateway path `/functions/v1/<name>` without a base URL). */
  url: string;
  /** `pg_net` when an HTTP request went out, `recorded` when pg_net is not installed. */
  via: 'pg_net' | 'recorded';
  /** pg_net's request id. */
  requestId: bigint | null;
}

/** Options of {@linkcode keepAlive}. */
export interface KeepAliveOptions {
  /** e.g. `https://<project-ref>.supabase.co`; default: the `functions_base_url` setting. */
  baseUrl?: string;
  /** A function woken less than this many seconds ago is skipped (default 30). */
  debounceSeconds?: number;
  /** A worker without a heartbeat for this long no longer counts as live (default 15). */
  heartbeatWindowSeconds?: number;
}

/**
 * Wakes every function that is enabled, unpaused and has no live worker, unless it
 * was woken within the debounce window; returns the wakes. The pg_cron job made by
 * {@linkcode scheduleKeepAlive} runs the same SQL function.
 *
 * @example
 * ```ts
 * import { connect, keepAlive } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * for (const wake of await keepAlive(client, { debounceSeconds: 60 })) {
 *   console.log(`woke ${wake.functionName} via ${wake.via}`);
 * }
 * await client.close();
 * ```
 */
export async function keepAlive(
  source: SqlSource,
  { baseUrl, debounceSeconds = 30, heartbeatWindowSeconds = 15 }: KeepAliveOptions = {},
): Promise<WakeRequest[]> {
  const sql = sqlOf(source);
  const rows = await call(() =>
    sql<
      {
        function_name: string;
        queue_name: string;
        url: string;
        via: 'pg_net' | 'recorded';
        request_id: string | null;
      }[]
    >`
      select function_name, queue_name, url, via, request_id::text as request_id
        from switchyard.keep_alive(${baseUrl ?? null}::text, ${debounceSeconds}::int,
                                   ${heartbeatWindowSeconds}::int)
       order by function_name`
  );
  return rows.map((r) => ({
    functionName: r.function_name,
    queueName: r.queue_name,
    url: r.url,
    via: r.via,
    requestId: r.request_id === null ? null : BigInt(r.request_id),
  }));
}

/**
 * The SQL statement a cron job runs for the keep-alive. Use it with
 * `cron.schedule_in_database(...)` where pg_cron lives in another database.
 *
 * @example
 * ```ts
 * import { connect, keepAliveCommand } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * console.log(await keepAliveCommand(client, { debounceSeconds: 30 }));
 * await client.close();
 * ```
 */
export async function keepAliveCommand(
  source: SqlSource,
  { baseUrl, debounceSeconds = 30 }: Omit<KeepAliveOptions, 'heartbeatWindowSeconds'> = {},
): Promise<string> {
  const sql = sqlOf(source);
  const [row] = await call(() =>
    sql<{ command: string }[]>`
      select switchyard.keep_alive_command(${
      baseUrl ?? null
    }::text, ${debounceSeconds}::int) as command`
  );
  return row.command;
}

/**
 * Creates or updates the pg_cron job `switchyard_keep_alive` in the connected
 * database (the one pg_cron is installed in, as on Supabase); returns its job id.
 *
 * @throws {PgCronMissingError} when pg_cron is not installed in this database
 *
 * @example
 * ```ts
 * import { connect, scheduleKeepAlive } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * const jobId = await scheduleKeepAlive(client, { schedule: '* * * * *' });
 * console.log(`keep-alive job ${jobId}`);
 * await client.close();
 * ```
 */
export async function scheduleKeepAlive(
  source: SqlSource,
  { schedule = '* * * * *', baseUrl, debounceSeconds = 30 }: {
    schedule?: string;
    baseUrl?: string;
    debounceSeconds?: number;
  } = {},
): Promise<number> {
  const sql = sqlOf(source);
  const [row] = await call(() =>
    sql<{ job: string }[]>`
      select switchyard.schedule_keep_alive(${schedule}::text, ${baseUrl ?? null}::text,
                                            ${debounceSeconds}::int)::text as job`
  );
  return Number(row.job);
}

/**
 * Removes the keep-alive job; false when there was none (or no pg_cron).
 *
 * @example
 * ```ts
 * import { connect, unscheduleKeepAlive } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * await unscheduleKeepAlive(client);
 * await client.close();
 * ```
 */
export async function unscheduleKeepAlive(source: SqlSource): Promise<boolean> {
  const sql = sqlOf(source);
  const [row] = await call(() =>
    sql<{ removed: boolean }[]>`select switchyard.unschedule_keep_alive() as removed`
  );
  return row.removed;
}

/** Settings the keep-alive reads. The bearer is better kept in Supabase Vault. */
export type KeepAliveSetting = 'functions_base_url' | 'functions_bearer';

/**
 * Sets (or with `null` removes) a keep-alive setting. On Supabase prefer a Vault
 * secret named `switchyard_functions_bearer` for the bearer: it wins over the setting.
 *
 * @example
 * ```ts
 * import { connect, setKeepAliveSetting } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * await setKeepAliveSetting(client, 'functions_base_url', 'https://abcd.supabase.co');
 * await client.close();
 * ```
 */
export async function setKeepAliveSetting(
  source: SqlSource,
  name: KeepAliveSetting,
  value: string | null,
): Promise<void> {
  const sql = sqlOf(source);
  await call(() => sql`select switchyard.set_setting(${name}::text, ${value}::text)`);
}

// ---------------------------------------------------------------------------
// Fenced rollout

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

/** One fenced function in {@linkcode FenceStatus}. */
export interface FenceFunctionStatus {
  /** The fenced function. */
  functionName: string;
  /** Its queue. */
  queueName: string;
  /** Its `enabled` value before the fence. */
  wasEnabled: boolean;
  /** Its `enabled` value now (false during the fence unless changed by hand). */
  enabled: boolean;
  /** Whether it is paused (a fence never changes that). */
  paused: boolean;
  /** Workers not stopped that heart-beat within the window (deprecated ones count until they stop). */
  liveWorkers: number;
  /** Tasks still `started` by those live workers. */
  startedTasks: number;
  /** Tasks still `started` by workers that stopped or went silent: stall recovery requeues them. */
  stalledTasks: number;
  /** No live worker and no started task of one. */
  quiet: boolean;
}

/** The open fence. */
export interface FenceStatus {
  /** The fence. */
  fenceId: number;
  /** When `fenceBegin` opened it. */
  openedAt: Date;
  /** One entry per fenced function, by name. */
  functions: FenceFunctionStatus[];
  /** Every member is quiet: deploy the replacement registries, then end the fence. */
  quiet: boolean;
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
 * import { connect, fenceBegin } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
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
  const rows = await call(() =>
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
          select jsonb_array_elements_text(${sql.json([...functionNames])}::jsonb)))`
  );
  return rows.map((r) => ({
    fenceId: Number(r.fence_id),
    functionName: r.function_name,
    wasEnabled: r.was_enabled,
    deprecatedWorkers: r.deprecated_workers,
  }));
}

/**
 * The open fence with per-function progress, or null when no fence is open.
 *
 * @example
 * ```ts
 * import { connect, fenceStatus } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * const status = await fenceStatus(client);
 * console.log(status ? (status.quiet ? 'quiet' : 'waiting') : 'no fence');
 * await client.close();
 * ```
 */
export async function fenceStatus(
  source: SqlSource,
  { heartbeatWindowSeconds = 15 } = {},
): Promise<FenceStatus | null> {
  const sql = sqlOf(source);
  const rows = await call(() =>
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
        from switchyard.fence_status(${heartbeatWindowSeconds}::int)`
  );
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
  /** Seconds without a heartbeat after which a worker no longer counts as live (default 15). */
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
 * import { connect, waitForFence } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * const status = await waitForFence(client, { timeoutMs: 120_000 });
 * console.log(`fence ${status.fenceId} is quiet`);
 * await client.close();
 * ```
 */
export async function waitForFence(
  source: SqlSource,
  { timeoutMs = 600_000, intervalMs = 500, heartbeatWindowSeconds = 15, onProgress }:
    WaitForFenceOptions = {},
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
 * import { connect, fenceEnd } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * for (const f of await fenceEnd(client)) console.log(f.functionName, f.enabled);
 * await client.close();
 * ```
 */
export async function fenceEnd(source: SqlSource): Promise<FenceEndResult[]> {
  const sql = sqlOf(source);
  const rows = await call(() =>
    sql<{ fence_id: string; function_name: string; was_enabled: boolean; enabled: boolean }[]>`
      select fence_id::text, function_name, was_enabled, enabled from switchyard.fence_end()`
  );
  return rows.map((r) => ({
    fenceId: Number(r.fence_id),
    functionName: r.function_name,
    wasEnabled: r.was_enabled,
    enabled: r.enabled,
  }));
}

// ---------------------------------------------------------------------------
// Drain status

/** One queue × concrete version from `switchyard.drain_status`. */
export interface DrainState {
  /** The physical queue. */
  queueName: string;
  /** The concrete flow version. */
  flowSlug: string;
  /** The alias the version belongs to (null for none). */
  alias: string | null;
  /** `active`: an alias target (or its own alias); `draining`: work remains; `drained`: none. */
  state: 'active' | 'draining' | 'drained';
  /** Started runs that may still reach the queue. */
  startedRuns: number;
  /** Executable (queued) tasks of started runs on the queue. */
  queuedTasks: number;
  /** Recoverable (started) tasks of started runs on the queue. */
  startedTasks: number;
}

/**
 * Per queue and concrete version: active, draining (with counts) or drained.
 * An old version's handlers may leave a registry once it is drained on every queue.
 *
 * @example
 * ```ts
 * import { connect, drainStatus } from './mod.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * const old = (await drainStatus(client)).filter((d) => d.flowSlug === 'threadsV1');
 * console.log(old.every((d) => d.state === 'drained') ? 'remove threadsV1' : 'still draining');
 * await client.close();
 * ```
 */
export async function drainStatus(source: SqlSource, queueName?: string): Promise<DrainState[]> {
  const sql = sqlOf(source);
  const rows = await call(() =>
    sql<
      {
        queue_name: string;
        flow_slug: string;
        alias: string | null;
        state: DrainState['state'];
        started_runs: number;
        queued_tasks: number;
        started_tasks: number;
      }[]
    >`
      select queue_name, flow_slug, alias, state, started_runs::int, queued_tasks::int,
             started_tasks::int
        from switchyard.drain_status(${queueName ?? null}::text)`
  );
  return rows.map((r) => ({
    queueName: r.queue_name,
    flowSlug: r.flow_slug,
    alias: r.alias,
    state: r.state,
    startedRuns: r.started_runs,
    queuedTasks: r.queued_tasks,
    startedTasks: r.started_tasks,
  }));
}

/**
 * Renders drain states as an aligned text table, one line per queue and version.
 *
 * @example
 * ```ts
 * import { formatDrainStatus } from './operations.ts';
 * console.log(formatDrainStatus([{
 *   queueName: 'classify_threads', flowSlug: 'threadsV1', alias: 'threads', state: 'draining',
 *   startedRuns: 2, queuedTasks: 1, startedTasks: 1,
 * }]));
 * ```
 */
export function formatDrainStatus(states: readonly DrainState[]): string {
  return formatTable(
    ['queue', 'version', 'alias', 'state', 'started runs', 'queued tasks', 'started tasks'],
    states.map((d) => [
      d.queueName,
      d.flowSlug,
      d.alias ?? '-',
      d.state,
      String(d.startedRuns),
      String(d.queuedTasks),
      String(d.startedTasks),
    ]),
  );
}

/**
 * Renders a fence status as an aligned text table, one line per fenced function.
 *
 * @example
 * ```ts
 * import { formatFenceStatus } from './operations.ts';
 * console.log(formatFenceStatus({
 *   fenceId: 1, openedAt: new Date(), quiet: false,
 *   functions: [{ functionName: 'classify-worker', queueName: 'classify', wasEnabled: true,
 *     enabled: false, paused: false, liveWorkers: 1, startedTasks: 2, stalledTasks: 0, quiet: false }],
 * }));
 * ```
 */
export function formatFenceStatus(status: FenceStatus): string {
  return formatTable(
    [
      'function',
      'queue',
      'was enabled',
      'enabled',
      'paused',
      'live workers',
      'started tasks',
      'stalled tasks',
      'state',
    ],
    status.functions.map((f) => [
      f.functionName,
      f.queueName,
      f.wasEnabled ? 'yes' : 'no',
      f.enabled ? 'yes' : 'no',
      f.paused ? 'yes' : 'no',
      String(f.liveWorkers),
      String(f.startedTasks),
      String(f.stalledTasks),
      f.quiet ? 'quiet' : 'waiting',
    ]),
  );
}

function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
