/**
 * Metrics (docs/design/observability.md): `switchyard.metrics` per queue and step over a recent
 * window, read through an index from the tasks of the window, and
 * `switchyard.dashboard_metrics_history`, the dashboard's charts per queue and minute,
 * differences of the counters' per-minute samples
 * (docs/design/observability.md#counters-histograms-and-levels). Neither reads the history.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/**
 * One queue's metrics over the window (`switchyard.metrics`).
 *
 * @example
 * ```ts
 * import type { QueueMetrics } from './metrics.ts';
 * const behind = (q: QueueMetrics) => q.lagSeconds > 30;
 * ```
 */
export interface QueueMetrics {
  /** The canonical queue name. */
  queueName: string;
  /** The queue functions polling it. */
  functions: string[];
  /** Messages visible now (null when PGMQ has no table for the queue). */
  depth: number | null;
  /** Messages hidden now: claimed, or waiting for a delay. */
  hidden: number | null;
  /** How long the oldest visible message has been visible, in seconds (0: none). */
  lagSeconds: number;
  /** The age of the oldest message on the queue, visible or not, in seconds (0: none). */
  oldestAgeSeconds: number;
  /** Tasks whose latest claim is in the window. */
  claims: number;
  /** Tasks completed in the window. */
  completions: number;
  /**
   * Failed attempts in the window (a throw, a timeout, a stall; retried or not): a task that
   * failed five times counts five.
   */
  failures: number;
  /** Tasks claimed in the window after a failed attempt. */
  retries: number;
  /** `claims` per second of the window. */
  claimsPerSecond: number;
  /** `completions` per second of the window. */
  completionsPerSecond: number;
  /** `failures` per second of the window. */
  failuresPerSecond: number;
}

/**
 * One step's metrics over the window (`switchyard.metrics`); a step with no task claimed,
 * completed or failed in the window has none.
 *
 * @example
 * ```ts
 * import type { StepMetrics } from './metrics.ts';
 * const slow = (s: StepMetrics) => (s.p95Ms ?? 0) > 1000;
 * ```
 */
export interface StepMetrics {
  /** The queue of the step's tasks. */
  queueName: string;
  /** The concrete flow. */
  flowSlug: string;
  /** The step. */
  stepSlug: string;
  /** As {@linkcode QueueMetrics}, for this step. */
  claims: number;
  /** As {@linkcode QueueMetrics}, for this step. */
  completions: number;
  /** As {@linkcode QueueMetrics}, for this step. */
  failures: number;
  /** As {@linkcode QueueMetrics}, for this step. */
  retries: number;
  /** Median duration (claim to completion of the last attempt) of the completed tasks, ms. */
  p50Ms: number | null;
  /** 95th percentile of the same durations, ms (interpolated, as `percentile_cont`). */
  p95Ms: number | null;
  /** 99th percentile of the same durations, ms. */
  p99Ms: number | null;
  /** Mean attempts of the tasks that finished (completed, or failed for good) in the window. */
  attemptsAvg: number | null;
  /** The most attempts one of them used. */
  attemptsMax: number | null;
}

/**
 * The metrics document.
 *
 * @example
 * ```ts
 * import type { Metrics } from './metrics.ts';
 * const failing = (m: Metrics) => m.queues.filter((q) => q.failures > 0);
 * ```
 */
export interface Metrics {
  /** When the database measured them. */
  at: Date;
  /** The window's length in seconds. */
  windowSeconds: number;
  /** Every catalogued queue, by name. */
  queues: QueueMetrics[];
  /** The steps with activity in the window, by queue, flow and step. */
  steps: StepMetrics[];
}

/** The longest window `metrics` accepts, in seconds (one day). */
export const MAX_METRICS_WINDOW_SECONDS = 86400;

/**
 * The metrics of every queue and step over the last `windowSeconds` (1 to 86400, default 60);
 * a window out of range is refused by the SQL core with the rule (`OperationError`).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { metrics } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const m = await metrics(client, { windowSeconds: 300 });
 * for (const q of m.queues) console.log(q.queueName, q.depth, q.lagSeconds, q.completionsPerSecond);
 * await client.close();
 * ```
 */
export async function metrics(
  source: SqlSource,
  { windowSeconds = 60 }: { windowSeconds?: number } = {},
): Promise<Metrics> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ m: Record<string, unknown> }[]>`
      select switchyard.metrics(${windowSeconds}::int) as m`);
  const m = row.m as {
    at: string;
    window_seconds: number;
    queues: Record<string, unknown>[];
    steps: Record<string, unknown>[];
  };
  const num = (v: unknown) => Number(v);
  const opt = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    at: new Date(m.at),
    windowSeconds: m.window_seconds,
    queues: m.queues.map((q) => ({
      queueName: String(q.queue_name),
      functions: q.functions as string[],
      depth: opt(q.depth),
      hidden: opt(q.hidden),
      lagSeconds: num(q.lag_seconds),
      oldestAgeSeconds: num(q.oldest_age_seconds),
      claims: num(q.claims),
      completions: num(q.completions),
      failures: num(q.failures),
      retries: num(q.retries),
      claimsPerSecond: num(q.claims_per_second),
      completionsPerSecond: num(q.completions_per_second),
      failuresPerSecond: num(q.failures_per_second),
    })),
    steps: m.steps.map((s) => ({
      queueName: String(s.queue_name),
      flowSlug: String(s.flow_slug),
      stepSlug: String(s.step_slug),
      claims: num(s.claims),
      completions: num(s.completions),
      failures: num(s.failures),
      retries: num(s.retries),
      p50Ms: opt(s.p50_ms),
      p95Ms: opt(s.p95_ms),
      p99Ms: opt(s.p99_ms),
      attemptsAvg: opt(s.attempts_avg),
      attemptsMax: opt(s.attempts_max),
    })),
  };
}

/**
 * One queue's chart series (`switchyard.dashboard_metrics_history`), one entry per minute,
 * oldest first; the last is the current minute.
 *
 * @example
 * ```ts
 * import type { QueueHistory } from './metrics.ts';
 * const worstLag = (h: QueueHistory) =>
 *   Math.max(0, ...h.lagSeconds.filter((v): v is number => v !== null));
 * ```
 */
export interface QueueHistory {
  /** The queue. */
  queueName: string;
  /** The first minute (its start). */
  from: Date;
  /**
   * The queue's lag at each minute's end, in seconds: how long its oldest visible message had
   * been visible (the gauge `switchyard_queue_lag_seconds`, sampled; null: no sample ended the
   * minute; docs/design/observability.md#counters-histograms-and-levels).
   */
  lagSeconds: (number | null)[];
  /**
   * The 95th percentile of the durations of the tasks completed per minute, interpolated in the
   * `task_duration` histogram's buckets as `histogram_quantile` does (null: none completed).
   */
  p95Ms: (number | null)[];
  /** Failed attempts in the minute (a task that failed five times counts five). */
  failures: number[];
  /** Tasks completed in the minute. */
  completions: number[];
}

/**
 * Per queue and minute over the last `minutes` (1-1440, default 60): lag, p95 duration,
 * failures and completions, as the dashboard's charts draw them: differences of the counters'
 * per-minute samples (`switchyard.sample_metrics`, taken by workers' heartbeats and the
 * keep-alive tick), so they add up to what `/metrics` serves.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { metricsHistory } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const h of await metricsHistory(client, { minutes: 60 })) {
 *   console.log(h.queueName, h.lagSeconds.at(-1), h.failures.reduce((a, b) => a + b, 0));
 * }
 * await client.close();
 * ```
 */
export async function metricsHistory(
  source: SqlSource,
  { minutes = 60 }: { minutes?: number } = {},
): Promise<QueueHistory[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        queue_name: string;
        minute: Date;
        lag_seconds: number | null;
        p95_ms: number | null;
        failures: number;
        completions: number;
      }[]
    >`
      select queue_name, minute, lag_seconds, p95_ms, failures, completions
        from switchyard.dashboard_metrics_history(${minutes}::int)`);
  const out = new Map<string, QueueHistory>();
  for (const r of rows) {
    let h = out.get(r.queue_name);
    if (!h) {
      h = {
        queueName: r.queue_name,
        from: r.minute,
        lagSeconds: [],
        p95Ms: [],
        failures: [],
        completions: [],
      };
      out.set(r.queue_name, h);
    }
    h.lagSeconds.push(r.lag_seconds === null ? null : Number(r.lag_seconds));
    h.p95Ms.push(r.p95_ms === null ? null : Number(r.p95_ms));
    h.failures.push(r.failures);
    h.completions.push(r.completions);
  }
  return [...out.values()];
}
