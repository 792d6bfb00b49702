/**
 * `startWorker()`: one worker polls one physical queue and dispatches tasks of
 * every flow and version its registry lists. `EdgeWorker.start()` runs this same
 * implementation inside a Supabase Edge Function.
 *
 * Start-up (DESIGN.md §4): normalize → reject duplicate concrete slugs → compile
 * or verify every deployment and sync aliases → derive the pairs routed to the
 * queue → coverage check → register → poll.
 *
 * @module
 */
import postgres from 'postgres';
import type { AnyFlow, StepSlugs } from '../flow.ts';
import type { QueueNamesOf, WorkerTarget } from '../placement.ts';
import type { StepQueuedFlow } from '../with_step_queues.ts';
import { assertJson } from '../slugs.ts';
import {
  CoverageError,
  FunctionDisabledError,
  FunctionPausedError,
  UnsupportedWorkError,
  WorkerConfigError,
} from './errors.ts';
import { pgArray, Queries, sqlErrorDetail, type TaskClaim } from './queries.ts';
import { Registry, selectQueue } from './registry.ts';

/** Where a worker writes its log lines. */
export interface WorkerLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options every worker accepts. */
export interface CommonWorkerOptions {
  /** The function whose pause flag the worker obeys and sets; default `<queue-with-dashes>-worker`. */
  functionName?: string;
  /** Connection string; default `SUPABASE_DB_URL`, then `DATABASE_URL`. */
  connectionString?: string;
  /** Tasks run at once (default 10). */
  maxConcurrent?: number;
  /** Messages read per poll (default `maxConcurrent`, never more than free slots). */
  batchSize?: number;
  /** Seconds a read message stays hidden before it is claimed (default 5). */
  visibilityTimeout?: number;
  /** Seconds one read waits for messages (default 2). */
  maxPollSeconds?: number;
  /** Milliseconds between reads inside one poll (default 100). */
  pollIntervalMs?: number;
  /** Milliseconds between heartbeats (default 2000). */
  heartbeatIntervalMs?: number;
  /** Milliseconds between stall-recovery sweeps of the queue (default 5000). */
  stallCheckIntervalMs?: number;
  /** Seconds without a heartbeat after which a worker's started tasks are recovered (default 15). */
  heartbeatWindowSeconds?: number;
  /** Log sink; default console at the level in `SWITCHYARD_LOG` (info, warn, error, silent; default warn). */
  logger?: WorkerLogger;
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
  readonly workerId: string;
  readonly queueName: string;
  readonly functionName: string;
  /** Stops claiming, lets in-flight tasks finish, records the stop. */
  stop(): Promise<void>;
  /** Settles when the worker has stopped: resolves after stop() or deprecation, rejects on a fatal stop. */
  readonly done: Promise<void>;
}

const DEFAULTS = {
  maxConcurrent: 10,
  visibilityTimeout: 5,
  maxPollSeconds: 2,
  pollIntervalMs: 100,
  heartbeatIntervalMs: 2000,
  stallCheckIntervalMs: 5000,
  heartbeatWindowSeconds: 15,
};

/** The function name the scaffold gives a queue's function. */
export function defaultFunctionName(queueName: string): string {
  return `${queueName.replaceAll('_', '-')}-worker`;
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

function intOption(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new WorkerConfigError(
      `${name} ${String(v)} is invalid: use an integer from ${min} to ${max}`,
    );
  }
  return v;
}

function connectionFrom(option: string | undefined): string {
  let url = option;
  try {
    url ??= Deno.env.get('SUPABASE_DB_URL') ?? Deno.env.get('DATABASE_URL');
  } catch { /* no env permission */ }
  if (!url) {
    throw new WorkerConfigError(
      'no database connection: pass connectionString or set SUPABASE_DB_URL or DATABASE_URL',
    );
  }
  return url;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  try {
    return `non-Error thrown: ${JSON.stringify(e)}`;
  } catch {
    return `non-Error thrown: ${String(e)}`;
  }
}

/**
 * True for errors that mean the connection (not the statement) failed, and for a deadlock or
 * serialization failure, after which the whole statement can simply be repeated.
 */
function isConnectionError(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? '';
  return /^(ECONN|EPIPE|ETIMEDOUT|CONNECTION_|57P0[123]|08|40P01$|40001$)/.test(code) ||
    /connection|terminat|ECONNRESET|broken pipe/i.test(String((e as Error)?.message ?? ''));
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
export function startWorker<F extends AnyFlow>(
  flow: StepQueuedFlow<F>,
  options: StepWorkerOptions<F>,
): Promise<Worker>;
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

/** The untyped implementation shared by `startWorker` and `EdgeWorker.start`. */
export async function startWorkerImpl(
  target: WorkerTarget | readonly WorkerTarget[],
  options: CommonWorkerOptions & { queueName?: string; stepSlug?: string; sql?: postgres.Sql },
): Promise<Worker> {
  // 1-2: normalize and reject duplicate concrete slugs.
  const registry = new Registry(Array.isArray(target) ? target : [target as WorkerTarget]);
  const queueName = selectQueue(registry, options);
  const functionName = options.functionName ?? defaultFunctionName(queueName);
  const maxConcurrent = intOption(
    'maxConcurrent',
    options.maxConcurrent,
    DEFAULTS.maxConcurrent,
    1,
    1000,
  );
  const batchSize = intOption('batchSize', options.batchSize, maxConcurrent, 1, 1000);
  const visibilityTimeout = intOption(
    'visibilityTimeout',
    options.visibilityTimeout,
    DEFAULTS.visibilityTimeout,
    1,
    3600,
  );
  const maxPollSeconds = intOption(
    'maxPollSeconds',
    options.maxPollSeconds,
    DEFAULTS.maxPollSeconds,
    1, // PGMQ's read_with_poll checks its deadline before reading: 0 would never read
    60,
  );
  const pollIntervalMs = intOption(
    'pollIntervalMs',
    options.pollIntervalMs,
    DEFAULTS.pollIntervalMs,
    10,
    10_000,
  );
  const heartbeatIntervalMs = intOption(
    'heartbeatIntervalMs',
    options.heartbeatIntervalMs,
    DEFAULTS.heartbeatIntervalMs,
    100,
    60_000,
  );
  const stallCheckIntervalMs = intOption(
    'stallCheckIntervalMs',
    options.stallCheckIntervalMs,
    DEFAULTS.stallCheckIntervalMs,
    100,
    600_000,
  );
  const heartbeatWindowSeconds = intOption(
    'heartbeatWindowSeconds',
    options.heartbeatWindowSeconds,
    DEFAULTS.heartbeatWindowSeconds,
    1,
    3600,
  );
  const log = options.logger ?? consoleLogger(`[switchyard ${functionName}]`);

  const ownsClient = options.sql === undefined;
  const sql = options.sql ??
    postgres(connectionFrom(options.connectionString), {
      prepare: false, // works behind Supabase's transaction pooler
      max: Math.min(maxConcurrent + 3, 20),
      onnotice: () => {},
      connect_timeout: 10,
      idle_timeout: 30,
    });
  const q = new Queries(sql);
  const workerId = crypto.randomUUID();
  const pairs = registry.pairsFor(queueName);

  try {
    // A paused or disabled function starts nothing, not even compilation.
    const flags = await q.functionFlags(functionName);
    if (flags?.paused_at) throw new FunctionPausedError(functionName, flags.pause_reason ?? '');
    if (flags && !flags.enabled) throw new FunctionDisabledError(functionName);

    // 3: compile or verify every complete deployment, then move aliases.
    for (const p of registry.placements) await q.ensureFlow(p.shape);
    for (const [alias, versions] of registry.aliases()) {
      const result = await q.syncAlias(alias, versions);
      if (result === 'activated') {
        log.info(`alias "${alias}" now points at "${versions[versions.length - 1]}"`);
      }
    }
    // 4-5: coverage of the exact pairs routed to this queue.
    const gaps = await q.coverageGaps(queueName, pairs);
    if (gaps.length > 0) {
      throw new CoverageError(
        queueName,
        gaps.map((g) => ({ flowSlug: g.flow_slug, stepSlug: g.step_slug, reasons: g.reasons })),
      );
    }
    // 6: register against the physical queue (re-checks pause and enabled atomically).
    await q.registerWorker(workerId, queueName, functionName, pairs);
  } catch (e) {
    if (ownsClient) await sql.end({ timeout: 1 }).catch(() => {});
    throw translateStartupError(e, functionName);
  }
  log.info(`worker ${workerId} polling "${queueName}" for ${pairs.length} flow/step pair(s)`);
  return runLoop({
    q,
    sql,
    ownsClient,
    registry,
    workerId,
    queueName,
    functionName,
    pairs,
    maxConcurrent,
    batchSize,
    visibilityTimeout,
    maxPollSeconds,
    pollIntervalMs,
    heartbeatIntervalMs,
    stallCheckIntervalMs,
    heartbeatWindowSeconds,
    log,
  });
}

function translateStartupError(e: unknown, functionName: string): unknown {
  const err = e as { code?: string };
  if (err?.code === 'SY001') {
    const { reason } = sqlErrorDetail(e);
    return new FunctionPausedError(functionName, typeof reason === 'string' ? reason : '');
  }
  if (err?.code === 'SY002') return new FunctionDisabledError(functionName);
  return e;
}

interface LoopState {
  q: Queries;
  sql: postgres.Sql;
  ownsClient: boolean;
  registry: Registry;
  workerId: string;
  queueName: string;
  functionName: string;
  pairs: string[];
  maxConcurrent: number;
  batchSize: number;
  visibilityTimeout: number;
  maxPollSeconds: number;
  pollIntervalMs: number;
  heartbeatIntervalMs: number;
  stallCheckIntervalMs: number;
  heartbeatWindowSeconds: number;
  log: WorkerLogger;
}

function runLoop(s: LoopState): Worker {
  const { q, log } = s;
  // Handlers running (bounded by maxConcurrent), and completions waiting to be written
  // (the handler is done; the write holds no handler slot but is bounded too).
  const inflight = new Set<Promise<void>>();
  const writes = new Set<Promise<void>>();
  const controllers = new Set<AbortController>();
  let stopping = false;
  let fatal: unknown = null;
  let stopReason = 'stopped';
  let wakeCapacity: (() => void) | null = null;

  const requestStop = (reason: string) => {
    if (!stopping) {
      stopping = true;
      stopReason = reason;
      log.info(`stopping: ${reason}`);
    }
    wakeCapacity?.();
  };

  const heartbeat = setInterval(async () => {
    try {
      const state = await q.heartbeat(s.workerId);
      if (state !== 'ok') requestStop(`function ${state}`);
    } catch (e) {
      log.warn(`heartbeat failed: ${errorText(e)}`);
    }
  }, s.heartbeatIntervalMs);
  const stallSweep = setInterval(async () => {
    try {
      const n = await q.recoverStalled(s.queueName, s.heartbeatWindowSeconds);
      if (n > 0) log.info(`recovered ${n} stalled task(s)`);
    } catch (e) {
      log.warn(`stall recovery failed: ${errorText(e)}`);
    }
  }, s.stallCheckIntervalMs);

  // Retries a completion/failure write across connection loss: the SQL side
  // accepts only the holding attempt, so a repeat is harmless.
  const persist = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    for (let attempt = 1;; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!isConnectionError(e) || attempt >= 30) {
          log.error(`${what} failed: ${errorText(e)}`);
          return undefined;
        }
        await sleep(Math.min(200 * attempt, 2000));
      }
    }
  };

  // Completions are written in batches: while one write is in flight, finished tasks queue
  // up and go together in the next (one round trip, one transaction). An idle worker's
  // single completion is written on the next turn of the event loop (no timer delay).
  type Completion = { runId: string; stepSlug: string; attempt: number; output: unknown };
  const pending: { item: Completion; settle: () => void }[] = [];
  let flushing = false;
  const flush = async () => {
    flushing = true;
    while (pending.length > 0) {
      const batch = pending.splice(0, 100);
      const items = batch.map((b) => b.item);
      const done = await persist('complete_tasks', () => q.completeTasks(items));
      // A batch that failed for another reason than the connection: write each item on
      // its own, so one bad completion cannot hold back the others.
      if (done === undefined && items.length > 1) {
        for (const c of items) {
          await persist(
            'complete_task',
            () => q.completeTask(c.runId, c.stepSlug, c.attempt, c.output),
          );
        }
      }
      for (const b of batch) b.settle();
    }
    flushing = false;
  };
  let flushScheduled = false;
  const complete = (item: Completion) =>
    new Promise<void>((settle) => {
      pending.push({ item, settle });
      if (flushing || flushScheduled) return;
      // The write starts on the next turn of the event loop, so the tasks of a batch that
      // finish in the same turn (fast handlers) are written together.
      flushScheduled = true;
      setTimeout(() => {
        flushScheduled = false;
        if (!flushing) flush();
      }, 0);
    });

  const execute = async (task: TaskClaim) => {
    const flowSlug = task.flow_slug!, stepSlug = task.step_slug!, runId = task.run_id!;
    const attempt = task.attempt!;
    const step = s.registry.step(flowSlug, stepSlug)!;
    const controller = new AbortController();
    controllers.add(controller);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeoutMs = (task.timeout ?? 60) * 1000;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const e = new Error(`step "${stepSlug}" timed out after ${task.timeout}s`);
          controller.abort(e);
          reject(e);
        }, timeoutMs);
      });
      const output = await Promise.race([
        Promise.resolve().then(() =>
          step.handler(task.input, {
            runId,
            flowSlug,
            stepSlug,
            attempt,
            flowInput: task.flow_input,
            signal: controller.signal,
          })
        ),
        timedOut,
      ]);
      const value = output === undefined ? null : output;
      assertJson(value, `output of ${flowSlug}/${stepSlug}`);
      // The handler's slot is free once its completion is queued; the write goes with the
      // next batch while the worker claims more work.
      const written: Promise<void> = complete({ runId, stepSlug, attempt, output: value })
        .finally(() => {
          writes.delete(written);
          wakeCapacity?.();
        });
      writes.add(written);
    } catch (e) {
      const result = await persist(
        'fail_task',
        () => q.failTask(runId, stepSlug, attempt, errorText(e)),
      );
      log.warn(
        `${flowSlug}/${stepSlug} attempt ${attempt} of run ${runId} failed (${result}): ${
          errorText(e)
        }`,
      );
    } finally {
      clearTimeout(timer);
      controllers.delete(controller);
    }
  };

  const poll = async () => {
    let backoff = 0;
    while (!stopping) {
      const free = s.maxConcurrent - inflight.size;
      if (free <= 0 || writes.size >= s.maxConcurrent) {
        await new Promise<void>((r) => (wakeCapacity = r));
        wakeCapacity = null;
        continue;
      }
      try {
        const ids = await q.readWithPoll(
          s.queueName,
          s.visibilityTimeout,
          Math.min(s.batchSize, free),
          s.maxPollSeconds,
          s.pollIntervalMs,
        );
        backoff = 0;
        if (ids.length === 0) continue;
        if (stopping) {
          // Read after a stop request: let the messages reappear now rather than after the timeout.
          await s.sql`select pgmq.set_vt(${s.queueName}::text, id, 0)
                        from unnest(${pgArray(ids)}::bigint[]) id`;
          break;
        }
        // The supported pairs were stored at registration; the claim uses that exact set.
        // (Read and claim stay two transactions: a claim holding the read's row locks could
        // deadlock with a completion archiving a duplicate's message.)
        const claims = await q.startTasks(s.queueName, ids, s.workerId, null);
        const unsupported = claims.filter((c) => c.disposition === 'unsupported');
        if (unsupported.length > 0) {
          fatal = new UnsupportedWorkError(
            s.queueName,
            s.functionName,
            unsupported.map((c) => c.message_id),
            [
              ...new Set(
                unsupported.map((c) => c.flow_slug ? `${c.flow_slug}/${c.step_slug}` : '(no task)'),
              ),
            ],
          );
          log.error((fatal as Error).message);
          requestStop('unsupported work');
          break;
        }
        for (const claim of claims) {
          if (claim.disposition !== 'claimed') continue;
          const p = execute(claim).finally(() => {
            inflight.delete(p);
            wakeCapacity?.();
          });
          inflight.add(p);
        }
      } catch (e) {
        // Connection loss (a database restart) or a transient error: back off and retry.
        backoff = Math.min(backoff + 1, 10);
        log.warn(`poll failed (retrying): ${errorText(e)}`);
        await sleep(200 * backoff);
      }
    }
  };

  let stopped: Promise<void> | undefined;
  const done = (async () => {
    try {
      await poll();
    } finally {
      while (inflight.size > 0 || writes.size > 0) {
        await Promise.allSettled([...inflight, ...writes]);
      }
      clearInterval(heartbeat);
      clearInterval(stallSweep);
      const reason = fatal ? (fatal as Error).message : stopReason;
      await persist('worker_stopped', () => q.workerStopped(s.workerId, reason));
      if (s.ownsClient) await s.sql.end({ timeout: 5 }).catch(() => {});
      log.info(`worker ${s.workerId} stopped: ${reason}`);
    }
    if (fatal) throw fatal;
  })();
  // Keep an unhandled rejection from crashing callers that only await stop().
  done.catch(() => {});

  return {
    workerId: s.workerId,
    queueName: s.queueName,
    functionName: s.functionName,
    done,
    stop() {
      requestStop('stop requested');
      stopped ??= done.then(() => {}, () => {});
      return stopped;
    },
  };
}
