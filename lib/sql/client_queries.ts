/**
 * The client for applications (docs/design/client.md): `createClient(registry, ...)` starts
 * runs by alias with inputs typed from the registry, waits for their typed outputs and
 * follows their events, all without polling: it waits on PostgreSQL notifications and reads
 * state only when one arrives (or after a reconnect). It also signals, cancels and retries runs.
 *
 * @module
 */

import { RunFailedError, RunNotFoundError, RunTimeoutError, SwitchyardError } from '../errors.ts';
import type {
  AliasInput,
  AliasOf,
  AliasOutput,
  AliasSignals,
  AliasStepOutputs,
  AliasStepSlugs,
  Registry,
  RegistrySignals,
} from '../dsl/aliases.ts';
import {
  connectionOrigin,
  NO_CONNECTION_MESSAGE,
  openSql,
  parseConnectionString,
  resolveConnectionString,
  type Sql,
} from './connection.ts';
import { RunNotifications } from './notifications.ts';
import {
  type ActorOption,
  type BulkAction,
  bulkRunAction,
  type BulkRunOptions,
  type BulkRunOutcome,
  type ForkOptions,
  type ForkResult,
  forkRun,
  moveRun,
  pauseRun,
  type RerunOptions,
  type RerunResult,
  rerunRun,
  resumeRun,
  type RunControlResult,
} from './run_controls.ts';
import {
  type CancelResult,
  cancelRun,
  type RetryResult,
  retryRun,
  type RunEvent,
  runEvents,
  runResult,
  type RunStatus,
  runStatus,
  runStepOutputs,
  type SignalResult,
  signalRun,
  startRun,
  type StartRunOptions,
} from './runs.ts';

/**
 * How {@linkcode createClient} reaches the database: a connection string (else
 * `SWITCHYARD_DB_URL`, `SUPABASE_DB_URL`, `DATABASE_URL`) for a pool the client opens and closes, or an
 * existing postgres.js client, which the client uses and leaves open.
 *
 * @example
 * ```ts
 * import type { ClientConnection } from './client_queries.ts';
 *
 * const byUrl: ClientConnection = { connectionString: 'postgres://localhost/app', max: 4 };
 * ```
 */
export type ClientConnection =
  & (
    | { readonly connectionString?: string; readonly max?: number; readonly sql?: undefined }
    | { readonly sql: Sql }
  )
  & {
    /**
     * Only for connections that cannot receive notifications (a transaction pooler such as
     * Supavisor's port 6543, or PGlite's socket, which shares one session among all
     * connections): waits also read again every `fallbackPollMs`. Unset (the default),
     * nothing polls.
     */
    readonly fallbackPollMs?: number;
  };

/**
 * Options of a wait: a deadline and a signal that gives up early.
 *
 * @example
 * ```ts
 * import type { WaitOptions } from './client_queries.ts';
 *
 * const options: WaitOptions = { timeoutMs: 30_000, signal: AbortSignal.timeout(60_000) };
 * ```
 */
export interface WaitOptions {
  /** How long to wait before rejecting with `RunTimeoutError`. Default 30,000 ms. */
  timeoutMs?: number;
  /** Aborting it rejects the wait with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode RunHandle.events}.
 *
 * @example
 * ```ts
 * import type { EventsOptions } from './client_queries.ts';
 *
 * const options: EventsOptions = { after: 41 }; // resume after event 41
 * ```
 */
export interface EventsOptions {
  /** Yield only events after this event id (0, the default: from the run's start). */
  after?: number;
  /**
   * Follow a failed run through its retries (`retried`, then the retry's steps): end only at
   * the run's `completed` or `cancelled`, or when `signal` aborts. Default false: end at the
   * run's first `completed`, `failed` or `cancelled`.
   */
  throughRetries?: boolean;
  /** Aborting it ends the iteration with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * One run, as the client follows it.
 *
 * @typeParam Output the run's output once completed: its leaf steps' outputs by slug
 * @typeParam StepSlug the run's step slugs
 * @typeParam Signals each wait step's payload by slug
 * @typeParam Steps each step's output by slug
 *
 * @example
 * ```ts
 * import type { RunHandle } from './client_queries.ts';
 *
 * async function follow(run: RunHandle<{ notify: boolean }>) {
 *   for await (const e of run.events()) console.log(e.stepSlug ?? 'run', e.event);
 *   return (await run.output()).notify;
 * }
 * ```
 */
export interface RunHandle<
  Output = unknown,
  StepSlug extends string = string,
  Signals extends Record<string, unknown> = Record<string, unknown>,
  Steps extends Record<string, unknown> = Record<StepSlug, unknown>,
> {
  /** The run id. */
  readonly runId: string;
  /** The run's status with its steps, or null when there is no such run. */
  status(): Promise<RunStatus<Output, StepSlug> | null>;
  /**
   * Waits until the run ends. Resolves with its output when it completed; rejects with
   * `RunFailedError` when it failed or was cancelled (`status`, `error`), `RunNotFoundError`
   * when there is no such run, `RunTimeoutError` after `timeoutMs`. Reads the run once, then
   * once per notification of the run (and after a reconnect); never polls.
   */
  output(options?: WaitOptions): Promise<Output>;
  /**
   * The run's events in order, as they happen: the run's `started`, each step's
   * `started`/`completed`/`failed`/`skipped`/`cancelled`, a `retried`, and the run's end. Ends
   * after the run's `completed`, `failed` or `cancelled` event; with `throughRetries` a failed
   * run is followed through its retries until it completes or is cancelled (or `signal`
   * aborts). Throws `RunNotFoundError` when there is no such run.
   */
  events(options?: EventsOptions): AsyncIterableIterator<RunEvent<StepSlug>>;
  /**
   * The output of every step that completed so far, by step slug (a map step's is its elements'
   * outputs in order; a skipped or unfinished step is absent), typed per step. Unlike
   * `output()`, which holds the leaf steps only, this reads any step, and does not wait:
   * `await run.output()` first for a finished run's. Null when there is no such run.
   */
  stepOutputs(): Promise<Partial<Steps> | null>;
  /** Cancels the run (see {@linkcode SwitchyardClient.cancel}). */
  cancel(reason: string): Promise<CancelResult>;
  /** Retries the failed run (see {@linkcode SwitchyardClient.retry}). */
  retry(): Promise<RetryResult>;
  /** Signals one of the run's wait steps (see {@linkcode SwitchyardClient.signal}). */
  signal<S extends keyof Signals & string>(
    step: S,
    payload: Signals[S],
    options?: SignalOptions,
  ): Promise<SignalResult>;
}

/**
 * Options of a signal.
 *
 * @example
 * ```ts
 * import type { SignalOptions } from './client_queries.ts';
 *
 * const options: SignalOptions = { key: 'approval-42' };
 * ```
 */
export interface SignalOptions {
  /** Makes the signal idempotent: a signal with the same key again is a no-op. */
  key?: string;
}

/**
 * The client {@linkcode createClient} returns, typed by the registry.
 *
 * @typeParam R the registry (`as const`)
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import { createClient, type SwitchyardClient } from './client_queries.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'threadsV1' }).step({ slug: 'a' }, () => 1);
 * const registry = [defineDeployedFlow(v1, { alias: 'threads' })] as const;
 * const client: SwitchyardClient<typeof registry> = createClient(registry, {});
 * await client.close();
 * ```
 */
export interface SwitchyardClient<R extends Registry> {
  /** The postgres.js client; operator calls (`lib/ops.ts`) accept the client itself. */
  readonly sql: Sql;
  /**
   * Starts a run of an alias's active version (`switchyard.start_flow`). The alias must be
   * one the registry deploys, and the input that alias's input type (the union over the
   * versions the registry lists). With `runId` the start is idempotent
   * (docs/design/runs.md#starting-a-run); `owner` records the user the run is for (row-level
   * security on its events).
   */
  start<A extends AliasOf<R>>(
    alias: A,
    input: AliasInput<R, A>,
    options?: StartRunOptions,
  ): Promise<
    RunHandle<AliasOutput<R, A>, AliasStepSlugs<R, A>, AliasSignals<R, A>, AliasStepOutputs<R, A>>
  >;
  /** A handle on an existing run, typed as a run of alias `A` (all aliases by default). */
  run<A extends AliasOf<R> = AliasOf<R>>(
    runId: string,
  ): RunHandle<AliasOutput<R, A>, AliasStepSlugs<R, A>, AliasSignals<R, A>, AliasStepOutputs<R, A>>;
  /**
   * Signals a wait step of a run (`switchyard.signal_run`, docs/design/waits.md): the
   * step is one of the registry's wait steps and the payload its type. The payload becomes
   * the step's output and the run goes on; a signal sent before the step is ready is kept
   * until it is, and with `key` a repeat is a no-op (`outcome` `duplicate`). Refused
   * (`OperationError`, nothing changed): an unknown run, a step that is not a wait step, a
   * payload over `max_output_bytes`, a run that ended, a step already signalled, a wait
   * that timed out.
   */
  signal<S extends keyof RegistrySignals<R> & string>(
    runId: string,
    step: S,
    payload: RegistrySignals<R>[S],
    options?: SignalOptions,
  ): Promise<SignalResult>;
  /**
   * Cancels a started run (`switchyard.cancel_run`): its queued tasks are archived, tasks a
   * worker is running finish but their answers change nothing, and the run ends
   * `cancelled` without starting another step. `changed` is false when it already was.
   */
  cancel(runId: string, reason: string): Promise<CancelResult>;
  /**
   * Retries a failed run (`switchyard.retry_run`): its failed steps are queued again with
   * fresh attempts and the run continues; completed steps are not run again.
   */
  retry(runId: string): Promise<RetryResult>;
  /**
   * Reruns an ended run in place from a step (`switchyard.rerun_run`,
   * docs/design/rerun.md): that step and its dependents run again with fresh attempts, other
   * outputs are kept.
   */
  rerun(runId: string, fromStep: string, options?: RerunOptions): Promise<RerunResult>;
  /**
   * Forks a run from a step (`switchyard.fork_run`): a new run with lineage that keeps the
   * outputs not depending on the step, on the same or a proven-compatible version.
   */
  fork(runId: string, fromStep: string, options?: ForkOptions): Promise<ForkResult>;
  /** Moves a started run onto a newer version of its alias when proven (`switchyard.move_run`). */
  move(runId: string, toFlow: string, options?: ActorOption): Promise<RunControlResult>;
  /** Pauses a started run (`switchyard.pause_run`): nothing of it is claimed until resumed. */
  pause(runId: string, options?: ActorOption & { reason?: string }): Promise<RunControlResult>;
  /** Resumes a paused run (`switchyard.resume_run`), retrying a step paused on exhaustion. */
  resume(runId: string, options?: ActorOption): Promise<RunControlResult & { requeued: number }>;
  /**
   * Does `action` over the runs a filter matches (`switchyard.bulk_run_action`,
   * docs/design/rerun.md), as `bulkRunAction` of `switchyard/ops` does: a dry run unless
   * `apply: true` (each action done and rolled back, so `would …` rows count exactly what would
   * change), at most `maxRuns` runs per call, going on after `afterRun`; one run's refusal is
   * that run's row, never the call's.
   */
  bulk(action: BulkAction, options?: BulkRunOptions): Promise<BulkRunOutcome[]>;
  /** Stops listening and closes the pool it opened (a postgres.js client passed in stays open). */
  close(): Promise<void>;
}

/**
 * Creates the typed client of a registry: `start` takes the registry's aliases (they
 * autocomplete) with their input types, `output()` resolves with the typed leaf outputs.
 * The registry is used for its type only; no flow is compiled and no handler runs here. An
 * app that must not load the handlers' code passes the type alone:
 * `import type { registry } from '...'; createClient<typeof registry>({ connectionString })`.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow, routeFlow } from '../mod.ts';
 * import { createClient } from './client_queries.ts';
 *
 * const threadsV1 = new Flow<{ threadId: string }>({ slug: 'threadsV1' })
 *   .step({ slug: 'classify' }, (input) => ({ urgent: input.threadId.startsWith('!') }))
 *   .step({ slug: 'notify', dependsOn: ['classify'] }, (input) => input.classify.urgent);
 * const registry = [
 *   defineDeployedFlow(routeFlow(threadsV1, { queues: { classify: 'io', notify: 'io' } }), {
 *     alias: 'threads',
 *   }),
 * ] as const;
 *
 * const client = createClient(registry, { connectionString: Deno.env.get('DATABASE_URL') });
 * const run = await client.start('threads', { threadId: 't1' }, { runId: crypto.randomUUID() });
 * for await (const event of run.events()) console.log(event.stepSlug ?? 'run', event.event);
 * const { notify } = await run.output({ timeoutMs: 30_000 }); // notify: boolean
 * console.log(notify);
 * await client.close();
 * ```
 */
export function createClient<const R extends Registry>(
  registry: R,
  connection?: ClientConnection,
): SwitchyardClient<R>;
/** The same client, typed by a registry's type alone (`createClient<typeof registry>(...)`). */
export function createClient<R extends Registry>(
  connection?: ClientConnection,
): SwitchyardClient<R>;
export function createClient<R extends Registry>(
  registryOrConnection?: R | ClientConnection,
  maybeConnection?: ClientConnection,
): SwitchyardClient<R> {
  const connection: ClientConnection =
    (Array.isArray(registryOrConnection) ? maybeConnection : registryOrConnection) ?? {};
  const own = connection.sql === undefined;
  let sql: Sql;
  let cannotListen: string | undefined;
  if (connection.sql !== undefined) {
    sql = connection.sql;
  } else {
    const url = resolveConnectionString(connection.connectionString);
    if (!url) throw new SwitchyardError(NO_CONNECTION_MESSAGE);
    if (parseConnectionString(url).kind === 'transaction_pooler') {
      cannotListen = 'the connection string names a transaction pooler (port 6543), which does ' +
        'not deliver notifications: use the direct connection or the session pooler (port ' +
        '5432) to wait, or set fallbackPollMs';
    }
    sql = openSql(url, {
      max: connection.max ?? 5,
      origin: connectionOrigin(connection.connectionString),
    });
  }
  const pollMs = connection.fallbackPollMs;
  if (pollMs !== undefined && (!Number.isInteger(pollMs) || pollMs < 10)) {
    throw new SwitchyardError(
      `createClient: fallbackPollMs ${pollMs} is invalid: use an integer of at least 10 ` +
        '(milliseconds), or leave it unset to wait on notifications only',
    );
  }
  const notifications = new RunNotifications(
    sql,
    pollMs,
    pollMs === undefined ? cannotListen : undefined,
  );
  const handle = (runId: string): RunHandle<never, never, never, never> =>
    runHandle(sql, notifications, runId);
  return {
    sql,
    async start(alias, input, options) {
      return handle(await startRun(sql, alias, input, options));
    },
    run: (runId) => handle(runId),
    cancel: (runId, reason) => cancelRun(sql, runId, reason),
    retry: (runId) => retryRun(sql, runId),
    rerun: (runId, fromStep, options) => rerunRun(sql, runId, fromStep, options),
    fork: (runId, fromStep, options) => forkRun(sql, runId, fromStep, options),
    move: (runId, toFlow, options) => moveRun(sql, runId, toFlow, options),
    pause: (runId, options) => pauseRun(sql, runId, options),
    resume: (runId, options) => resumeRun(sql, runId, options),
    bulk: (action, options) => bulkRunAction(sql, action, options),
    signal: (runId, step, payload, options) => signalRun(sql, runId, step, payload, options),
    async close() {
      await notifications.close();
      if (own) await sql.end({ timeout: 5 });
    },
  };
}

function runHandle<
  Output,
  StepSlug extends string,
  Signals extends Record<string, unknown>,
  Steps extends Record<string, unknown>,
>(
  sql: Sql,
  notifications: RunNotifications,
  runId: string,
): RunHandle<Output, StepSlug, Signals, Steps> {
  return {
    runId,
    status: () => runStatus<Output>(sql, runId) as Promise<RunStatus<Output, StepSlug> | null>,
    output: (options) => waitForEnd(sql, notifications, runId, options),
    events: (options) =>
      followEvents(sql, notifications, runId, options) as AsyncIterableIterator<
        RunEvent<StepSlug>
      >,
    stepOutputs: () => runStepOutputs(sql, runId) as Promise<Partial<Steps> | null>,
    cancel: (reason) => cancelRun(sql, runId, reason),
    retry: () => retryRun(sql, runId),
    signal: (step, payload, options) => signalRun(sql, runId, step, payload, options),
  };
}

/**
 * A run's wake-ups as a counter: a notification (or a reconnect) came after a read when
 * `version()` changed since just before it; `next()` waits for the next wake-up, the deadline
 * or the signal.
 */
interface Wakes {
  version(): number;
  next(deadline: number, signal: AbortSignal | undefined): Promise<'woken' | 'timeout'>;
  end(): void;
}

async function subscribe(notifications: RunNotifications, runId: string): Promise<Wakes> {
  let count = 0;
  let wakeUp: (() => void) | undefined;
  const unsubscribe = await notifications.subscribe(runId, () => {
    count++;
    wakeUp?.();
  });
  return {
    version: () => count,
    next(deadline, signal) {
      return new Promise((resolve, reject) => {
        const done = (outcome: 'woken' | 'timeout' | { aborted: unknown }) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          wakeUp = undefined;
          if (typeof outcome === 'object') reject(outcome.aborted);
          else resolve(outcome);
        };
        const onAbort = () => done({ aborted: signal!.reason ?? new Error('aborted') });
        const left = deadline - Date.now();
        const poll = notifications.fallbackPollMs;
        const timer = poll !== undefined && poll < left
          ? setTimeout(() => done('woken'), poll)
          : Number.isFinite(left)
          ? setTimeout(() => done('timeout'), Math.max(0, left))
          : undefined;
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        wakeUp = () => done('woken');
      });
    },
    end: unsubscribe,
  };
}

/**
 * Reads the run until `read` has a value: once, then again on each wake-up (a notification
 * for the run, a reconnect, the fallback poll); a wake-up during a read reads again at once.
 * It listens before the first read, so no transition falls between the two. At the deadline
 * it throws `timedOut(status)`, with the status of the last read.
 */
async function untilRunSettles<T>(
  notifications: RunNotifications,
  runId: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  read: () => Promise<{ value: T } | { waiting: string }>,
  timedOut: (status: string) => Error,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const wakes = await subscribe(notifications, runId);
  try {
    for (;;) {
      const seen = wakes.version();
      const result = await read();
      if ('value' in result) return result.value;
      if (wakes.version() !== seen) continue; // woken during the read
      if (await wakes.next(deadline, signal) === 'timeout') throw timedOut(result.waiting);
    }
  } finally {
    wakes.end();
  }
}

async function waitForEnd<Output>(
  sql: Sql,
  notifications: RunNotifications,
  runId: string,
  { timeoutMs = 30_000, signal }: WaitOptions = {},
): Promise<Output> {
  signal?.throwIfAborted();
  return await untilRunSettles<Output>(notifications, runId, timeoutMs, signal, async () => {
    const result = await runResult(sql, runId);
    if (result === null) throw new RunNotFoundError(runId);
    if (result.status === 'completed') return { value: result.output as Output };
    if (result.status === 'failed' || result.status === 'cancelled') {
      throw new RunFailedError(runId, result.status, result.error);
    }
    return { waiting: result.status };
  }, (status) => new RunTimeoutError(runId, timeoutMs, status));
}

const RUN_ENDS = new Set(['completed', 'failed', 'cancelled']);
/** The ends a retry cannot undo. */
const FOR_GOOD = new Set(['completed', 'cancelled']);

async function* followEvents(
  sql: Sql,
  notifications: RunNotifications,
  runId: string,
  { after = 0, signal, throughRetries = false }: EventsOptions = {},
): AsyncGenerator<RunEvent> {
  const ends = throughRetries ? FOR_GOOD : RUN_ENDS;
  signal?.throwIfAborted();
  const wakes = await subscribe(notifications, runId);
  try {
    let last = after;
    let checkedExists = false;
    for (;;) {
      const seen = wakes.version();
      const events = await runEvents(sql, runId, { after: last });
      if (events.length === 0 && !checkedExists) {
        const result = await runResult(sql, runId);
        if (result === null) throw new RunNotFoundError(runId);
        // A run that ended before `after` (or before events were recorded): nothing comes,
        // unless a failed run is followed through a retry that may come.
        if (result.status !== 'started' && (!throughRetries || result.status !== 'failed')) return;
      }
      checkedExists = true;
      for (const event of events) {
        last = event.eventId;
        yield event;
        if (event.stepSlug === null && ends.has(event.event)) return;
      }
      if (events.length > 0 || wakes.version() !== seen) continue;
      await wakes.next(Infinity, signal);
    }
  } finally {
    wakes.end();
  }
}
