/**
 * The dashboard's reads (`switchyard.dashboard_queues`, `dashboard_functions`,
 * `dashboard_runs`, `dashboard_run_origins`, `dashboard_throughput`, `dashboard_row_triggers`,
 * `dashboard_batches`, plus the operator commands' own
 * `drain_status` and `fence_status`; docs/design/versions.md). Nothing here writes: the
 * dashboard's actions are {@linkcode pauseFunction}, {@linkcode resumeFunction},
 * {@linkcode cancelRun} and {@linkcode retryRun}, and a run's events come from
 * {@linkcode runEvents}.
 *
 * @module
 */
import { pgArray } from './worker_queries.ts';
import { listSchedules, type Schedule } from './schedules.ts';
import { type DrainState, drainStatus } from './drain.ts';
import { fenceStatus } from './fence.ts';
import { type FlowOptionChange, flowOptionHistory } from './flow_options.ts';
import type { FunctionState } from './function_state.ts';
import { type FunctionRefusal, functionRefusals } from './refusals.ts';
import type { FenceStatus } from './fence_status.ts';
import { metricsHistory, type QueueHistory } from './metrics.ts';
import { metricSnapshot } from './metric_snapshot.ts';
import type { RunOrigin } from './runs.ts';
import { type RowTriggerOverview, rowTriggerOverviews } from './row_triggers.ts';
import { type BatchOverview, batchOverviews } from './batches.ts';
import { call, sqlOf, type SqlSource } from './source.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from './windows.ts';

/**
 * A catalogued queue's depth (`switchyard.dashboard_queues`).
 *
 * @example
 * ```ts
 * import type { QueueDepth } from './dashboard_queries.ts';
 * const backlog = (d: QueueDepth) => (d.visible ?? 0) + (d.hidden ?? 0);
 * ```
 */
export interface QueueDepth {
  /** The canonical queue name. */
  queueName: string;
  /** Its exact spelling in PGMQ. */
  pgmqName: string;
  /** `shared` (routed) or `private` (one owner flow). */
  ownership: 'shared' | 'private';
  /** The owning flow of a private queue. */
  ownerFlow: string | null;
  /** Messages readable now (null when PGMQ has no table for the queue). */
  visible: number | null;
  /** Messages hidden: read or claimed, or waiting for a retry's delay. */
  hidden: number | null;
  /** When the oldest message still on the queue was sent. */
  oldestEnqueuedAt: Date | null;
}

/**
 * Every catalogued queue with its visible and hidden messages.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { queueDepths } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const q of await queueDepths(client)) console.log(q.queueName, q.visible, q.hidden);
 * await client.close();
 * ```
 */
export async function queueDepths(source: SqlSource): Promise<QueueDepth[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        queue_name: string;
        pgmq_name: string;
        ownership: 'shared' | 'private';
        owner_flow: string | null;
        visible: number | null;
        hidden: number | null;
        oldest_enqueued_at: Date | null;
      }[]
    >`
      select queue_name, pgmq_name, ownership, owner_flow, visible::int, hidden::int,
             oldest_enqueued_at
        from switchyard.dashboard_queues()`);
  return rows.map((r) => ({
    queueName: r.queue_name,
    pgmqName: r.pgmq_name,
    ownership: r.ownership,
    ownerFlow: r.owner_flow,
    visible: r.visible,
    hidden: r.hidden,
    oldestEnqueuedAt: r.oldest_enqueued_at,
  }));
}

/**
 * An unstopped worker of a queue function.
 *
 * @example
 * ```ts
 * import type { FunctionWorker } from './dashboard_queries.ts';
 * const silentFor = (w: FunctionWorker) => Date.now() - Date.parse(w.lastHeartbeatAt);
 * ```
 */
export interface FunctionWorker {
  /** `switchyard.workers.worker_id`. */
  workerId: string;
  /** When it registered. */
  startedAt: string;
  /** Its last heartbeat. */
  lastHeartbeatAt: string;
  /** When it was asked to stop (a fence, or a pause it has not seen yet), if it was. */
  deprecatedAt: string | null;
  /**
   * Not deprecated and heart-beat within its own window, or the caller's larger one
   * (docs/design/versions.md).
   */
  live: boolean;
}

/**
 * A queue function with its flags and workers (`switchyard.dashboard_functions`).
 *
 * @example
 * ```ts
 * import type { FunctionOverview } from './dashboard_queries.ts';
 * const line = (f: FunctionOverview) => `${f.functionName}: ${f.pauseReason ?? 'running'}`;
 * ```
 */
export interface FunctionOverview extends FunctionState {
  /** Its unstopped workers, newest first (at most 20), each with its last heartbeat. */
  workers: FunctionWorker[];
  /**
   * The refusals it recorded (`switchyard.refusals`: refused starts and pauses on unsupported
   * work, docs/design/worker.md#refusals-are-seen-where-operators-look), the latest first.
   */
  refusals: FunctionRefusal[];
}

/**
 * Every queue function with its flags, its unstopped workers and the refusals it recorded.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { functionOverviews } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const f of await functionOverviews(client)) {
 *   console.log(f.functionName, f.pauseReason ?? 'running', f.workers.map((w) => w.lastHeartbeatAt));
 * }
 * await client.close();
 * ```
 */
export async function functionOverviews(
  source: SqlSource,
  { heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS } = {},
): Promise<FunctionOverview[]> {
  const sql = sqlOf(source);
  const refusals = await functionRefusals(source);
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
        workers: {
          worker_id: string;
          started_at: string;
          last_heartbeat_at: string;
          deprecated_at: string | null;
          live: boolean;
        }[];
      }[]
    >`
      select function_name, queue_name, enabled, paused_at, pause_reason, last_woken_at,
             live_workers, workers
        from switchyard.dashboard_functions(${heartbeatWindowSeconds}::int)`);
  return rows.map((r) => ({
    functionName: r.function_name,
    queueName: r.queue_name,
    enabled: r.enabled,
    pausedAt: r.paused_at,
    pauseReason: r.pause_reason,
    lastWokenAt: r.last_woken_at,
    liveWorkers: r.live_workers,
    workers: r.workers.map((w) => ({
      workerId: w.worker_id,
      startedAt: w.started_at,
      lastHeartbeatAt: w.last_heartbeat_at,
      deprecatedAt: w.deprecated_at,
      live: w.live,
    })),
    refusals: refusals.filter((x) => x.functionName === r.function_name),
  }));
}

/**
 * One step of a run in {@linkcode RunOverview}: a timeline entry.
 *
 * @example
 * ```ts
 * import type { RunStepOverview } from './dashboard_queries.ts';
 * const ran = (s: RunStepOverview) =>
 *   s.startedAt && s.finishedAt ? Date.parse(s.finishedAt) - Date.parse(s.startedAt) : null;
 * ```
 */
export interface RunStepOverview {
  /** The step. */
  stepSlug: string;
  /** Its index in the flow. */
  stepIndex: number;
  /** The step state: created, started, completed, failed or skipped. */
  status: 'created' | 'started' | 'completed' | 'failed' | 'skipped' | 'cancelled';
  /** The task's queue snapshot (the step's queue before it has a task). */
  queueName: string;
  /** Its tasks: one for an ordinary step, one per element for a map step, 0 before it has any. */
  tasks: number;
  /** Attempts used (a map step: the most any element used). */
  attempts: number;
  /** Attempts allowed (null before the step has a task and the step sets none). */
  maxAttempts: number | null;
  /** When the step became ready (its task was queued), or null. */
  queuedAt: string | null;
  /** When its latest attempt was claimed, or null. */
  startedAt: string | null;
  /** When it completed or failed, or null. */
  finishedAt: string | null;
  /** The task's last error (a map step: the first element's with one), or null. */
  error: string | null;
  /**
   * How the step runs: `single`, `map`, or one with no task that waits
   * (docs/design/waits.md): `wait` (for a signal), `sleep`, `flow` (a child run). Its `queueName`
   * is then `''`.
   */
  kind: 'single' | 'map' | 'wait' | 'sleep' | 'flow';
  /** A started wait or sleep step: when its timeout is due (null: none, or not waiting). */
  waitDeadline: string | null;
}

/**
 * A run with its steps (`switchyard.dashboard_runs`).
 *
 * @example
 * ```ts
 * import type { RunOverview } from './dashboard_queries.ts';
 * const why = (r: RunOverview) => (r.status === 'failed' ? `${r.failedStep}: ${r.error}` : null);
 * ```
 */
export interface RunOverview {
  /** The run. */
  runId: string;
  /** The concrete version it runs. */
  flowSlug: string;
  /** What the caller started: an alias or a concrete slug. */
  startedAs: string;
  /** Where it is. */
  status: 'started' | 'completed' | 'failed' | 'cancelled';
  /** When it started. */
  startedAt: Date;
  /** When it completed or failed, or null. */
  finishedAt: Date | null;
  /** Start to finish (to now for a started run), in milliseconds. */
  durationMs: number;
  /** Why it failed. */
  error: string | null;
  /** The step that failed it. */
  failedStep: string | null;
  /** How often it was retried (`retry_run`); 0 when never. */
  retries: number;
  /** The run it was forked from (`fork_run`, docs/design/rerun.md), or null. */
  forkedFrom: string | null;
  /** The step it was forked from, or null. */
  fromStep: string | null;
  /** When it was paused (`pause_run`), or null while it is not. */
  pausedAt: Date | null;
  /** Why it is paused, or null. */
  pauseReason: string | null;
  /** The other concrete versions of its alias: what a move or a fork may name. */
  versions: string[];
  /**
   * Where it came from (a row trigger, a backfill, a webhook; docs/design/origins.md), or null
   * for a plain start.
   */
  origin: RunOrigin | null;
  /** Every step in step order. */
  steps: RunStepOverview[];
}

/**
 * Which runs {@linkcode recentRuns} reads.
 *
 * @example
 * ```ts
 * import type { RecentRunsOptions } from './dashboard_queries.ts';
 * const failedOnClassify: RecentRunsOptions = { status: 'failed', queueName: 'classify_threads' };
 * ```
 */
export interface RecentRunsOptions {
  /** At most this many, newest first (1-200, default 25). */
  limit?: number;
  /** Only runs in this status. */
  status?: RunOverview['status'];
  /** Only runs of flows with a step on this queue. */
  queueName?: string;
  /** Only this run. */
  runId?: string;
}

/**
 * Recent runs, newest first, with duration, error, failing step and steps.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { recentRuns } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const run of await recentRuns(client, { status: 'failed', limit: 5 })) {
 *   console.log(run.startedAs, run.flowSlug, run.failedStep, run.error);
 * }
 * await client.close();
 * ```
 */
export async function recentRuns(
  source: SqlSource,
  { limit = 25, status, queueName, runId }: RecentRunsOptions = {},
): Promise<RunOverview[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        run_id: string;
        flow_slug: string;
        started_as: string;
        status: RunOverview['status'];
        started_at: Date;
        finished_at: Date | null;
        duration_ms: number;
        error: string | null;
        failed_step: string | null;
        steps: {
          step_slug: string;
          step_index: number;
          status: RunStepOverview['status'];
          queue_name: string | null;
          tasks: number;
          attempts: number;
          max_attempts: number | null;
          queued_at: string | null;
          started_at: string | null;
          finished_at: string | null;
          error: string | null;
          kind: RunStepOverview['kind'];
          wait_deadline: string | null;
        }[];
      }[]
    >`
      select run_id, flow_slug, started_as, status, started_at, finished_at,
             duration_ms::float8 as duration_ms, error, failed_step, steps
        from switchyard.dashboard_runs(${limit}::int, ${status ?? null}::text,
                                       ${queueName ?? null}::text, ${runId ?? null}::uuid)`);
  const retried = rows.length === 0
    ? []
    : await call(sql, () =>
      sql<{ run_id: string; retries: number }[]>`
      select run_id, retries from switchyard.dashboard_run_retries(${
        pgArray(rows.map((r) => r.run_id))
      }::uuid[])`);
  const retries = new Map(retried.map((r) => [r.run_id, r.retries]));
  const lineage = new Map(
    (rows.length === 0 ? [] : await call(sql, () =>
      sql<
        {
          run_id: string;
          forked_from: string | null;
          from_step: string | null;
          paused_at: Date | null;
          pause_reason: string | null;
          versions: string[];
        }[]
      >`
      select run_id, forked_from, from_step, paused_at, pause_reason, versions
        from switchyard.dashboard_run_lineage(${pgArray(rows.map((r) => r.run_id))}::uuid[])`)).map(
        (l) => [l.run_id, l],
      ),
  );
  const origins = new Map(
    (rows.length === 0 ? [] : await call(sql, () =>
      sql<{ run_id: string; origin: RunOrigin }[]>`
      select run_id, origin
        from switchyard.dashboard_run_origins(${pgArray(rows.map((r) => r.run_id))}::uuid[])`))
      .map((o) => [o.run_id, o.origin]),
  );
  return rows.map((r) => ({
    retries: retries.get(r.run_id) ?? 0,
    origin: origins.get(r.run_id) ?? null,
    forkedFrom: lineage.get(r.run_id)?.forked_from ?? null,
    fromStep: lineage.get(r.run_id)?.from_step ?? null,
    pausedAt: lineage.get(r.run_id)?.paused_at ?? null,
    pauseReason: lineage.get(r.run_id)?.pause_reason ?? null,
    versions: lineage.get(r.run_id)?.versions ?? [],
    runId: r.run_id,
    flowSlug: r.flow_slug,
    startedAs: r.started_as,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    durationMs: r.duration_ms,
    error: r.error,
    failedStep: r.failed_step,
    steps: r.steps.map((s) => ({
      stepSlug: s.step_slug,
      stepIndex: s.step_index,
      status: s.status,
      queueName: s.queue_name ?? '',
      tasks: s.tasks,
      attempts: s.attempts,
      maxAttempts: s.max_attempts,
      queuedAt: s.queued_at,
      startedAt: s.started_at,
      finishedAt: s.finished_at,
      error: s.error,
      kind: s.kind,
      waitDeadline: s.wait_deadline,
    })),
  }));
}

/**
 * Completed tasks per minute on one queue (`switchyard.dashboard_throughput`: the completions of
 * the counters' per-minute samples, docs/design/observability.md#counters-histograms-and-levels).
 *
 * @example
 * ```ts
 * import type { QueueThroughput } from './dashboard_queries.ts';
 * const lastMinute = (t: QueueThroughput) => t.perMinute.at(-1) ?? 0;
 * ```
 */
export interface QueueThroughput {
  /** The queue. */
  queueName: string;
  /** The first minute of the window (start of the minute). */
  from: Date;
  /** Completed tasks per minute, oldest first; the last entry is the current minute. */
  perMinute: number[];
  /** Their sum. */
  total: number;
}

/**
 * Completed tasks per minute and queue over the last `minutes` minutes (1-1440, default 60).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { throughput } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const t of await throughput(client, { minutes: 60 })) console.log(t.queueName, t.total);
 * await client.close();
 * ```
 */
export async function throughput(
  source: SqlSource,
  { minutes = 60 } = {},
): Promise<QueueThroughput[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<{ queue_name: string; minute: Date; completed: number }[]>`
      select queue_name, minute, completed
        from switchyard.dashboard_throughput(${minutes}::int)`);
  const out = new Map<string, QueueThroughput>();
  for (const r of rows) {
    let t = out.get(r.queue_name);
    if (!t) {
      t = { queueName: r.queue_name, from: r.minute, perMinute: [], total: 0 };
      out.set(r.queue_name, t);
    }
    t.perMinute.push(r.completed);
    t.total += r.completed;
  }
  return [...out.values()];
}

/**
 * A rate limit shared by name (docs/design/flow-control.md#rate-limits-and-keyed-concurrency), as
 * `switchyard.rate_limit_status()`
 * reads it: its rate and tokens now, and the steps naming it. `rate` is null for a name steps
 * use that has no row (no limit).
 *
 * @example
 * ```ts
 * import type { RateLimitState } from './dashboard_queries.ts';
 * const full = (l: RateLimitState) => l.tokens !== null && l.tokens >= (l.burst ?? 0);
 * ```
 */
export interface RateLimitState {
  /** The limit's name. */
  name: string;
  /** Tokens per `perSeconds`, or null: no row, no limit. */
  rate: number | null;
  /** The refill period in seconds. */
  perSeconds: number | null;
  /** The most tokens saved up. */
  burst: number | null;
  /** Tokens now (below 0 after a `RetryAfter` drained it). */
  tokens: number | null;
  /** When the operator last set it. */
  updatedAt: Date | null;
  /** The steps naming it, `flow/step`. */
  steps: string[];
}

/**
 * The rate limits (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): every row of
 * `switchyard.rate_limits` and every
 * name a step uses, by name.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { rateLimits } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const l of await rateLimits(client)) console.log(l.name, l.tokens, l.steps);
 * await client.close();
 * ```
 */
export async function rateLimits(source: SqlSource): Promise<RateLimitState[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        name: string;
        rate: number | null;
        per_seconds: number | null;
        burst: number | null;
        tokens: number | null;
        updated_at: Date | null;
        steps: string[];
      }[]
    >`select name, rate, per_seconds, burst, tokens, updated_at, steps
        from switchyard.rate_limit_status()`);
  return rows.map((r) => ({
    name: r.name,
    rate: r.rate,
    perSeconds: r.per_seconds,
    burst: r.burst,
    tokens: r.tokens === null ? null : Number(r.tokens),
    updatedAt: r.updated_at,
    steps: r.steps,
  }));
}

/**
 * One queue as the dashboard shows it.
 *
 * @example
 * ```ts
 * import type { QueueOverview } from './dashboard_queries.ts';
 * const draining = (q: QueueOverview) => q.versions.filter((v) => v.state === 'draining');
 * ```
 */
export interface QueueOverview {
  /** The queue. */
  queueName: string;
  /** Whether the queue catalog knows it (a function may be registered before any flow). */
  catalogued: boolean;
  /** Its depth; null when it is not catalogued. */
  depth: QueueDepth | null;
  /** Its queue functions. */
  functions: FunctionOverview[];
  /** The concrete versions with steps on it: active, draining (with counts) or drained. */
  versions: DrainState[];
  /** Completed tasks per minute. */
  throughput: QueueThroughput | null;
  /** Lag, p95 duration and failures per minute (docs/design/observability.md); null: uncatalogued. */
  history: QueueHistory | null;
  /**
   * Its counters since install (docs/design/observability.md#counters-histograms-and-levels), the
   * figures `/metrics` serves as
   * `switchyard_task_*_total` and `switchyard_claims_throttled_total`, summed over its steps.
   */
  totals: QueueTotals;
}

/**
 * A queue's counters since install, read from `switchyard.metric_snapshot` (never lowered by
 * pruning).
 *
 * @example
 * ```ts
 * import type { QueueTotals } from './dashboard_queries.ts';
 * const failing = (t: QueueTotals) => t.failedAttempts / Math.max(t.claims, 1);
 * ```
 */
export interface QueueTotals {
  /** Task attempts claimed. */
  claims: number;
  /** Tasks completed. */
  completions: number;
  /** Failed attempts (a throw, a timeout, a stall). */
  failedAttempts: number;
  /** Claims of a later attempt. */
  retries: number;
  /** Tasks a claim held back for flow control. */
  throttled: number;
}

/**
 * Everything the dashboard page shows, from one moment.
 *
 * @example
 * ```ts
 * import type { DashboardSnapshot } from './dashboard_queries.ts';
 * const fenced = (s: DashboardSnapshot) => s.fence?.functions.map((f) => f.functionName) ?? [];
 * ```
 */
export interface DashboardSnapshot {
  /** When it was read (this process's clock). */
  generatedAt: Date;
  /** Queues by name: every catalogued queue and every queue a function names. */
  queues: QueueOverview[];
  /** The open fence with per-function progress, or null. */
  fence: FenceStatus | null;
  /** Recent runs, newest first. */
  runs: RunOverview[];
  /** The latest changes of flows' runtime options (at most 20), newest first. */
  optionChanges: FlowOptionChange[];
  /** Every schedule with its next tick and its latest tick's run (docs/design/schedules.md). */
  schedules: Schedule[];
  /** The rate limits by name (docs/design/flow-control.md#rate-limits-and-keyed-concurrency). */
  rateLimits: RateLimitState[];
  /**
   * Every row trigger declaration (docs/design/ingestion.md): installed or missing, its
   * backfill, the runs it started in the last hour (docs/design/origins.md).
   */
  rowTriggers: RowTriggerOverview[];
  /**
   * The open batches, the most overdue first, at most 100 (docs/design/batching.md): each one's
   * events so far, its maxSize, when it opened and when the tick closes it.
   */
  batches: BatchOverview[];
}

/**
 * What {@linkcode dashboardSnapshot} reads.
 *
 * @example
 * ```ts
 * import type { DashboardSnapshotOptions } from './dashboard_queries.ts';
 * const options: DashboardSnapshotOptions = { minutes: 30, runs: { limit: 10 } };
 * ```
 */
export interface DashboardSnapshotOptions {
  /** Seconds without a heartbeat after which a worker no longer counts as live (default 15). */
  heartbeatWindowSeconds?: number;
  /** The throughput window in minutes (default 60). */
  minutes?: number;
  /** Which runs to list. */
  runs?: RecentRunsOptions;
}

/**
 * Reads every part of the dashboard (queues, functions, versions, throughput, fence, runs)
 * and groups them by queue.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { dashboardSnapshot } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const snap = await dashboardSnapshot(client, { runs: { limit: 10 } });
 * for (const q of snap.queues) {
 *   console.log(q.queueName, q.depth?.visible, q.versions.map((v) => `${v.flowSlug} ${v.state}`));
 * }
 * await client.close();
 * ```
 */
export async function dashboardSnapshot(
  source: SqlSource,
  {
    heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS,
    minutes = 60,
    runs = {},
  }: DashboardSnapshotOptions = {},
): Promise<DashboardSnapshot> {
  const [
    depths,
    functions,
    versions,
    fence,
    recent,
    optionChanges,
    schedules,
    limits,
    histories,
    snapshot,
    rowTriggers,
    batches,
  ] = await Promise.all([
    queueDepths(source),
    functionOverviews(source, { heartbeatWindowSeconds }),
    drainStatus(source),
    fenceStatus(source, { heartbeatWindowSeconds }),
    recentRuns(source, runs),
    flowOptionHistory(source, { limit: 20 }),
    listSchedules(source),
    rateLimits(source),
    metricsHistory(source, { minutes }),
    metricSnapshot(source),
    rowTriggerOverviews(source),
    batchOverviews(source),
  ]);
  // The completed-tasks chart is the history's completions (dashboard_throughput's rows): one
  // read of the counters' samples serves every chart.
  const rates: QueueThroughput[] = histories.map((h) => ({
    queueName: h.queueName,
    from: h.from,
    perMinute: h.completions,
    total: h.completions.reduce((a, b) => a + b, 0),
  }));
  const total = (queueName: string, metric: string) =>
    snapshot.counters.filter((c) => c.queueName === queueName && c.metric === metric)
      .reduce((n, c) => n + c.n, 0);
  const names = new Set([...depths.map((d) => d.queueName), ...functions.map((f) => f.queueName)]);
  const queues = [...names].sort().map((queueName): QueueOverview => {
    const depth = depths.find((d) => d.queueName === queueName) ?? null;
    return {
      queueName,
      catalogued: depth !== null,
      depth,
      functions: functions.filter((f) => f.queueName === queueName),
      versions: versions.filter((v) => v.queueName === queueName),
      throughput: rates.find((t) => t.queueName === queueName) ?? null,
      history: histories.find((h) => h.queueName === queueName) ?? null,
      totals: {
        claims: total(queueName, 'claims'),
        completions: total(queueName, 'task_duration'),
        failedAttempts: total(queueName, 'failed_attempts'),
        retries: total(queueName, 'retries'),
        throttled: total(queueName, 'throttled'),
      },
    };
  });
  return {
    generatedAt: new Date(),
    queues,
    fence,
    runs: recent,
    optionChanges,
    schedules,
    rateLimits: limits,
    rowTriggers,
    batches,
  };
}
