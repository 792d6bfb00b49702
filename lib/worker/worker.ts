/**
 * `startWorker()`: one worker polls one physical queue and dispatches tasks of
 * every flow and version its registry lists. `EdgeWorker.start()` runs this same
 * implementation inside a Supabase Edge Function.
 *
 * Start-up (docs/design/worker.md#worker-start-up): normalize → reject duplicate concrete slugs →
 * compile or verify every deployment and sync aliases → derive the pairs routed to the
 * queue → coverage check → register → poll. The running worker is its parts
 * (docs/design/worker.md#worker-states-and-parts): a lifecycle, the poller, the executor, the
 * completion
 * writer and the maintenance timers.
 *
 * @module
 */
import type { AnyFlow, StepSlugs } from '../dsl/flow.ts';
import type { QueueNamesOf, WorkerTarget } from '../dsl/placement.ts';
import type { StepQueuedFlow } from '../dsl/with_step_queues.ts';
import {
  CoverageError,
  FunctionDisabledError,
  FunctionPausedError,
  WorkerConfigError,
} from '../errors.ts';
import { fromSqlError } from '../sql/sql_errors.ts';
import {
  connectionFailure,
  connectionOrigin,
  NO_CONNECTION_MESSAGE,
  openSql,
  resolveConnectionString,
  type Sql,
} from '../sql/connection.ts';
import { WorkerQueries } from '../sql/worker_queries.ts';
import { coreVersionProblem } from '../sql/core_version.ts';
import { localDevelopment } from './development.ts';
import { coverageAdvice } from './coverage_advice.ts';
import { CompletionWriter } from './completion_writer.ts';
import { DispatchIndex, selectQueue } from './dispatch_index.ts';
import { Executor } from './executor.ts';
import { type HandlerResources, openHandlerResources } from './handler_resources.ts';
import { Lifecycle, type WorkerState } from './lifecycle.ts';
import { startMaintenance } from './maintenance.ts';
import { errorText, persist, type WorkerLogger } from './persist.ts';
import { poll } from './poller.ts';
import { resolveSettings, type WorkerSettings } from './settings.ts';
import { recordRefusal, refusalText, startRefusal } from './refusal.ts';
import { defaultFunctionName } from '../dsl/queue_names.ts';

export type { WorkerLogger } from './persist.ts';
export type { WorkerState } from './lifecycle.ts';

/** Options every worker accepts: the tuning of {@linkcode WorkerSettings}, and these. */
export interface CommonWorkerOptions extends Partial<WorkerSettings> {
  /** The function whose pause flag the worker obeys and sets; default `<queue-with-dashes>-worker`. */
  functionName?: string;
  /** Connection string; default `SWITCHYARD_DB_URL`, then `SUPABASE_DB_URL`, then `DATABASE_URL`. */
  connectionString?: string;
  /** Log sink; default console at the level in `SWITCHYARD_LOG` (info, warn, error, silent; default warn). */
  logger?: WorkerLogger;
  /**
   * Local development: a changed shape of a concrete flow is recompiled (its runs deleted, a log
   * line says so) instead of refused with SY004. Default: `SWITCHYARD_DEVELOPMENT=true` (which
   * `deno task serve` sets). Only against a local database (loopback, a dotless container name)
   * and never on the hosted runtime, whatever is given
   * (docs/design/worker.md#compiling-at-deploy-and-in-local-development).
   */
  development?: boolean;
}

/** Options of a plain-flow worker: the queue is the flow's own; no selector. */
export type PlainWorkerOptions = CommonWorkerOptions & { queueName?: never; stepSlug?: never };

/** Options of a `withStepQueues()` worker: `stepSlug` selects the step queue. */
export type StepWorkerOptions<F extends AnyFlow> = CommonWorkerOptions & {
  stepSlug: StepSlugs<F>;
  queueName?: never;
};

/** Options of a routed/deployed registry worker: `queueName` is one of the routed queues. */
export type QueueWorkerOptions<Q extends string> = CommonWorkerOptions & {
  queueName: Q;
  stepSlug?: never;
};

/** A running worker. */
export interface Worker {
  /** Its id (`switchyard.workers.worker_id`). */
  readonly workerId: string;
  /** The physical queue it polls. */
  readonly queueName: string;
  /** The queue function whose pause and enabled flags it obeys. */
  readonly functionName: string;
  /** Where it is in its lifecycle (docs/design/worker.md#worker-states-and-parts). */
  readonly state: WorkerState;
  /** Stops claiming, lets in-flight tasks finish, records the stop. */
  stop(): Promise<void>;
  /** Settles when the worker has stopped: resolves after stop() or deprecation, rejects on a fatal stop. */
  readonly done: Promise<void>;
}

function readDenoEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no env permission
  }
}

export { defaultFunctionName };

/** Characters a function name may have (the SQL core's max_function_name_chars, docs/design/limits.md). */
const MAX_FUNCTION_NAME_CHARS = 63;

/** The function name rule, checked before anything is compiled (SQL checks it again). */
function assertFunctionName(name: string): void {
  const shown = name.length > 80 ? `${JSON.stringify(name.slice(0, 80))}...` : JSON.stringify(name);
  if (!/^[a-z][a-z0-9_-]*$/.test(name)) {
    throw new WorkerConfigError(
      `functionName ${shown} is invalid: use lower-case letters, digits, "-" and "_" ` +
        '(^[a-z][a-z0-9_-]*$)',
    );
  }
  if (name.length > MAX_FUNCTION_NAME_CHARS) {
    throw new WorkerConfigError(
      `functionName ${shown} is ${name.length} characters long, over the limit of ` +
        `${MAX_FUNCTION_NAME_CHARS} characters`,
    );
  }
}

/** A console logger honouring `SWITCHYARD_LOG` (info, warn, error, silent; default warn). */
export function consoleLogger(prefix: string): WorkerLogger {
  let level = 'warn';
  try {
    level = Deno.env.get('SWITCHYARD_LOG') ?? 'warn';
  } catch { /* no env permission */ }
  const rank: Record<string, number> = { info: 0, warn: 1, error: 2, silent: 3 };
  const at = rank[level] ?? 1;
  return {
    info: (m) => at <= 0 && console.log(`${prefix} ${m}`),
    warn: (m) => at <= 1 && console.warn(`${prefix} ${m}`),
    error: (m) => at <= 2 && console.error(`${prefix} ${m}`),
  };
}

/** A logger whose methods never throw: a log line must not turn into an escaped rejection. */
function guardedLogger(log: WorkerLogger): WorkerLogger {
  const guard = (write: (m: string) => void) => (m: string) => {
    try {
      write.call(log, m);
    } catch { /* a throwing logger loses the line, never the worker */ }
  };
  return { info: guard(log.info), warn: guard(log.warn), error: guard(log.error) };
}

/**
 * Starts a worker on one queue.
 *
 * - a plain flow: `startWorker(flow)` polls the flow's own queue;
 * - a `withStepQueues()` flow: `startWorker(stepQueued, { stepSlug })`;
 * - a registry of routed/deployed flows: `startWorker([v1, v2], { queueName })`.
 *
 * Resolves once the worker is registered and polling; rejects when start-up is
 * refused (coverage, pause, configuration).
 *
 * @example
 * ```ts
 * import { Flow, routeFlow, defineDeployedFlow, startWorker } from '../mod.ts';
 *
 * const flow = new Flow<{ text: string }>({ slug: 'threadsV1' })
 *   .step({ slug: 'classify' }, (input) => ({ label: input.text.length > 3 ? 'long' : 'short' }));
 * const v1 = defineDeployedFlow(routeFlow(flow, { queues: { classify: 'classify_threads' } }), {
 *   alias: 'threads',
 * });
 * const worker = await startWorker([v1], { queueName: 'classify_threads', maxConcurrent: 4 });
 * await worker.stop();
 * ```
 */
export function startWorker(flow: AnyFlow, options?: PlainWorkerOptions): Promise<Worker>;
/** Starts the worker of one step queue of a `withStepQueues()` flow (`stepSlug` selects it). */
export function startWorker<F extends AnyFlow>(
  flow: StepQueuedFlow<F>,
  options: StepWorkerOptions<F>,
): Promise<Worker>;
/** Starts the worker of one routed queue for a registry of deployments (`queueName` selects it). */
export function startWorker<const R extends readonly WorkerTarget[]>(
  registry: R,
  options: QueueWorkerOptions<QueueNamesOf<R> extends never ? string : QueueNamesOf<R>>,
): Promise<Worker>;
export function startWorker(
  target: WorkerTarget | readonly WorkerTarget[],
  options: CommonWorkerOptions & { queueName?: string; stepSlug?: string } = {},
): Promise<Worker> {
  return startWorkerImpl(target, options);
}

/** Options of the implementation behind `startWorker` and `EdgeWorker.start`. */
export interface WorkerImplOptions extends CommonWorkerOptions {
  queueName?: string;
  stepSlug?: string;
  /** An existing client to use instead of opening a pool (the caller closes it). */
  sql?: Sql;
  /** Settings not given as options are read from these variables (queue functions). */
  env?: (name: string) => string | undefined;
}

/**
 * The queue function a worker of `target` with `options` would obey, or null when the target or
 * options are wrong (no function can be named).
 */
export function workerFunctionName(
  target: WorkerTarget | readonly WorkerTarget[],
  options: CommonWorkerOptions & { queueName?: string; stepSlug?: string },
): string | null {
  try {
    const index = new DispatchIndex(Array.isArray(target) ? target : [target as WorkerTarget]);
    const name = options.functionName ?? defaultFunctionName(selectQueue(index, options));
    assertFunctionName(name);
    return name;
  } catch {
    return null;
  }
}

/**
 * The untyped implementation shared by `startWorker` and `EdgeWorker.start`. A refused start,
 * once the function is known, is recorded in `switchyard.refusals` (best effort, with the text
 * of its answer; docs/design/worker.md#refusals-are-seen-where-operators-look) before the error is
 * thrown.
 */
export async function startWorkerImpl(
  target: WorkerTarget | readonly WorkerTarget[],
  options: WorkerImplOptions,
): Promise<Worker> {
  // 1-2: normalize and reject duplicate concrete slugs.
  const index = new DispatchIndex(Array.isArray(target) ? target : [target as WorkerTarget]);
  const queueName = selectQueue(index, options);
  const functionName = options.functionName ?? defaultFunctionName(queueName);
  assertFunctionName(functionName);
  const log = guardedLogger(options.logger ?? consoleLogger(`[switchyard ${functionName}]`));
  try {
    return await startChecked(index, queueName, functionName, log, options);
  } catch (e) {
    const refusal = startRefusal(e);
    await recordRefusal(functionName, refusal.error, refusalText(refusal), {
      sql: options.sql,
      connectionString: options.connectionString,
      env: options.env,
      log,
    }, e);
    throw e;
  }
}

/** Start-up from the settings on (docs/design/worker.md#worker-start-up), for {@linkcode startWorkerImpl}. */
async function startChecked(
  index: DispatchIndex,
  queueName: string,
  functionName: string,
  log: WorkerLogger,
  options: WorkerImplOptions,
): Promise<Worker> {
  const settings = resolveSettings(options, options.env);

  const ownsClient = options.sql === undefined;
  const workerId = crypto.randomUUID();
  let sql = options.sql;
  let url: string | undefined;
  // The heartbeat gets a connection of its own (one more than the pool): reads, claims,
  // completions and sweeps waiting for a busy pool never delay it past the heartbeat window
  // (docs/design/worker.md#worker-states-and-parts). The pool is `maxConnections` (default 4),
  // whatever
  // `maxConcurrent`. With a client passed in, the caller owns the connections and the heartbeat
  // shares them.
  let heartbeatSql = sql;
  if (sql === undefined) {
    url = resolveConnectionString(options.connectionString, options.env);
    if (!url) throw new WorkerConfigError(NO_CONNECTION_MESSAGE);
    const origin = connectionOrigin(options.connectionString, options.env);
    sql = openSql(url, { max: settings.maxConnections, origin });
    heartbeatSql = openSql(url, {
      max: 1,
      applicationName: `switchyard heartbeat ${workerId}`,
      origin,
    });
  }
  const q = new WorkerQueries(sql);
  const closeHeartbeat = () =>
    ownsClient ? heartbeatSql!.end({ timeout: 1 }).catch(() => {}) : Promise.resolve();
  let maxOutputBytes = 0;
  const pairs = index.pairsFor(queueName);
  const lifecycle = new Lifecycle();
  let resources: HandlerResources;

  try {
    // What handlers get in their context; their pool opens only when a handler uses it.
    resources = await openHandlerResources({
      env: options.env ?? readDenoEnv,
      url,
      given: options.sql,
      max: Math.min(settings.maxConcurrent, settings.maxConnections),
    });
    // A paused or disabled function starts nothing, not even compilation.
    const flags = await q.functionFlags(functionName);
    if (flags?.paused_at) throw new FunctionPausedError(functionName, flags.pause_reason ?? '');
    if (flags && !flags.enabled) throw new FunctionDisabledError(functionName);
    // A runtime deployed before its migrations refuses, instead of calling SQL that is not
    // there yet (docs/design/testing.md#upgrades-with-work-in-flight).
    const coreProblem = coreVersionProblem(await q.coreVersion());
    if (coreProblem) throw new WorkerConfigError(coreProblem);
    // The SQL core's limits (docs/design/limits.md): outputs over the limit fail here,
    // before they are sent.
    maxOutputBytes = (await q.limits()).max_output_bytes;

    // 3: compile or verify every complete deployment, then move aliases. In local development
    // a changed shape is recompiled instead of refused
    // (docs/design/worker.md#compiling-at-deploy-and-in-local-development).
    const development = localDevelopment({
      env: options.env ?? readDenoEnv,
      url,
      option: options.development,
    });
    for (const p of index.placements) {
      const result = development ? await q.recompileFlow(p.shape) : await q.ensureFlow(p.shape);
      if (result === 'updated') {
        log.info(
          `flow "${p.flow.slug}": runtime options updated for tasks created from now on ` +
            '(switchyard.flow_option_history() lists the change)',
        );
      } else if (result === 'recompiled') {
        log.warn(
          `flow "${p.flow.slug}": its shape changed, recompiled because this is local ` +
            'development (SWITCHYARD_DEVELOPMENT, a local database); its earlier runs were ' +
            'deleted. In production a changed shape is refused (SY004): deploy it under a new slug',
        );
      }
    }
    for (const [alias, versions] of index.aliases()) {
      const result = await q.syncAlias(alias, versions);
      if (result === 'activated') {
        log.info(`alias "${alias}" now points at "${versions[versions.length - 1]}"`);
      }
    }
    // 4-5: coverage of the exact pairs routed to this queue.
    const gaps = await q.coverageGaps(queueName, pairs);
    if (gaps.length > 0) {
      // Versions the registry does not list at all: say how to move their alias or drain them.
      const unlisted = [...new Set(gaps.map((g) => g.flow_slug))].filter((s) => !index.get(s));
      throw new CoverageError(
        queueName,
        gaps.map((g) => ({ flowSlug: g.flow_slug, stepSlug: g.step_slug, reasons: g.reasons })),
        unlisted.length === 0
          ? []
          : coverageAdvice(index.aliases(), await q.flowsAliases(unlisted)),
      );
    }
    // 6: register against the physical queue (re-checks pause and enabled atomically).
    await q.registerWorker(
      workerId,
      queueName,
      functionName,
      pairs,
      settings.heartbeatWindowSeconds,
    );
  } catch (e) {
    if (ownsClient) await sql.end({ timeout: 1 }).catch(() => {});
    await closeHeartbeat();
    throw connectionFailure(fromSqlError(e), sql);
  }
  lifecycle.started();
  log.info(`worker ${workerId} polling "${queueName}" for ${pairs.length} flow/step pair(s)`);

  const wake = () => lifecycle.wake();
  const writer = new CompletionWriter(q, log, wake);
  // When this instance ends: its wall clock (wallClockMs), or the end of a stop's grace period.
  const startedAt = Date.now();
  const endsAt = () =>
    Math.min(
      settings.wallClockMs > 0 ? startedAt + settings.wallClockMs : Infinity,
      lifecycle.stopRequestedAt === null
        ? Infinity
        : lifecycle.stopRequestedAt + settings.shutdownGraceMs,
    );
  const executor = new Executor(
    q,
    index,
    writer,
    log,
    wake,
    resources,
    { maxOutputBytes },
    endsAt,
    workerId,
  );
  // A stop request, whatever its cause, reaches the handlers at once through ctx.signal.
  lifecycle.onStopRequested((reason) => executor.shutdown(reason));
  // The wall clock stops the worker as beforeunload would, a grace period before it ends.
  const wallClock = settings.wallClockMs > 0
    ? setTimeout(() => {
      if (lifecycle.requestStop('wall clock')) {
        log.info(`stopping: the wall clock of ${settings.wallClockMs} ms is nearly over`);
      }
    }, settings.wallClockMs - settings.shutdownGraceMs)
    : undefined;
  lifecycle.onStopRequested(() => clearTimeout(wallClock));
  const stopMaintenance = startMaintenance({
    q,
    heartbeatQ: new WorkerQueries(heartbeatSql!),
    lifecycle,
    log,
    workerId,
    queueName,
    functionName,
    ...settings,
    onEndedRuns: (runs) => executor.cancelRuns(runs),
  });
  const client = sql;

  const done = (async () => {
    try {
      await poll({
        q,
        lifecycle,
        executor,
        writer,
        log,
        workerId,
        queueName,
        functionName,
        ...settings,
      });
    } catch (e) {
      // Not expected (the poller handles its own errors), but never an escaped rejection:
      // the worker fails, drains and records its stop like any fatal stop.
      lifecycle.fail(e instanceof Error ? e : new Error(errorText(e)));
    } finally {
      // Handlers that finish within the grace period complete (or fail) as usual; the rest
      // are released: their outcome is dropped and their tasks go back to the queue.
      await executor.drain((lifecycle.stopRequestedAt ?? Date.now()) + settings.shutdownGraceMs);
      const cut = executor.release();
      await writer.drain();
      // Every task this worker still holds (cut off, stopped for the shutdown, or claimed
      // while stopping): visible again at once. SQL refunds the attempt of work handed back
      // (named here, or checkpointed since its claim), within its bounds; the rest count.
      const released = await persist(
        log,
        'release_tasks',
        () => q.releaseTasks(workerId, executor.handedBack()),
      );
      if (released) {
        log.info(
          `released ${released} task(s) on shutdown` +
            (cut ? ` (${cut} handler(s) still running after ${settings.shutdownGraceMs} ms)` : ''),
        );
      }
      stopMaintenance();
      await resources.close();
      const reason = lifecycle.reason;
      await persist(log, 'worker_stopped', () => q.workerStopped(workerId, reason));
      if (ownsClient) await client.end({ timeout: 5 }).catch(() => {});
      await closeHeartbeat();
      lifecycle.finish();
      log.info(`worker ${workerId} stopped: ${reason}`);
    }
    if (lifecycle.fatal) throw lifecycle.fatal;
  })();
  // Keep an unhandled rejection from crashing callers that only await stop().
  done.catch(() => {});

  let stopped: Promise<void> | undefined;
  return {
    workerId,
    queueName,
    functionName,
    get state() {
      return lifecycle.state;
    },
    done,
    stop() {
      if (lifecycle.requestStop('stop requested')) log.info('stopping: stop requested');
      stopped ??= done.then(() => {}, () => {});
      return stopped;
    },
  };
}
