/**
 * The counters, histograms and levels of the metrics
 * (docs/design/observability.md#counters-histograms-and-levels):
 * `switchyard.metric_snapshot`, the rows of the views `metrics_counters`, `metrics_histograms`
 * and `metrics_gauges` read in one snapshot. Counters only go up (pruning runs never lowers
 * them); histograms count observations by bucket; gauges are levels now.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/**
 * One counter or histogram, summed over its shards and buckets.
 *
 * @example
 * ```ts
 * import type { MetricCounter } from './metric_snapshot.ts';
 * const claims = (c: MetricCounter[]) => c.filter((x) => x.metric === 'claims');
 * ```
 */
export interface MetricCounter {
  /**
   * The figure: `claims`, `retries`, `failed_attempts`, `throttled`, `task_duration`,
   * `queue_wait`, `runs_started`, `runs_retried`, `run_duration`, `signals` or
   * `refused_starts`.
   */
  metric: string;
  /** The queue ('' when the figure has none). */
  queueName: string;
  /** The queue function (`refused_starts` only, else ''). */
  functionName: string;
  /** The flow: its alias, else its slug ('' when none). */
  flow: string;
  /** The concrete flow slug ('' when none). */
  version: string;
  /** The step ('' when none). */
  step: string;
  /** A run's end, a signal's outcome, a refusal's kind ('' when none). */
  outcome: string;
  /** How many were counted (a histogram: its observations). */
  n: number;
  /** A histogram's sum of observations, in seconds (0 for a counter). */
  total: number;
}

/**
 * One cumulative bucket of a histogram: the observations at or below `le` seconds.
 *
 * @example
 * ```ts
 * import type { MetricBucket } from './metric_snapshot.ts';
 * const inf = (b: MetricBucket) => b.le === Infinity;
 * ```
 */
export interface MetricBucket {
  /** The histogram: `task_duration`, `queue_wait` or `run_duration`. */
  metric: string;
  /** As {@linkcode MetricCounter}. */
  queueName: string;
  /** As {@linkcode MetricCounter}. */
  flow: string;
  /** As {@linkcode MetricCounter}. */
  version: string;
  /** As {@linkcode MetricCounter}. */
  step: string;
  /** As {@linkcode MetricCounter}. */
  outcome: string;
  /** The upper bound in seconds (`Infinity` for the last). */
  le: number;
  /** Observations at or below it. */
  count: number;
}

/**
 * One level now.
 *
 * @example
 * ```ts
 * import type { MetricGauge } from './metric_snapshot.ts';
 * const idle = (g: MetricGauge) => g.gauge === 'workers_live' && g.value === 0;
 * ```
 */
export interface MetricGauge {
  /**
   * `queue_depth`, `queue_hidden`, `queue_oldest_visible_age_seconds`,
   * `queue_oldest_age_seconds`, `workers_live`, `function_paused`, `runs_active`,
   * `runs_waiting` or `waits_overdue`.
   */
  gauge: string;
  /** The queue ('' when none). */
  queueName: string;
  /** The queue function ('' when none). */
  functionName: string;
  /** The flow: its alias, else its slug ('' when none). */
  flow: string;
  /** The concrete flow slug ('' when none). */
  version: string;
  /** The level. */
  value: number;
}

/**
 * The snapshot: counters, histogram buckets and gauges.
 *
 * @example
 * ```ts
 * import type { MetricSnapshot } from './metric_snapshot.ts';
 * const total = (s: MetricSnapshot) => s.counters.reduce((a, c) => a + c.n, 0);
 * ```
 */
export interface MetricSnapshot {
  /** Every counter and histogram with its count and sum. */
  counters: MetricCounter[];
  /** Every histogram's cumulative buckets. */
  histograms: MetricBucket[];
  /** Every level. */
  gauges: MetricGauge[];
}

/**
 * The counters, histograms and levels now, from one snapshot of the database: every caller, on
 * any instance, reads the same figures.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { metricSnapshot } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const s = await metricSnapshot(client);
 * console.log(s.counters.filter((c) => c.metric === 'runs_started'));
 * await client.close();
 * ```
 */
export async function metricSnapshot(source: SqlSource): Promise<MetricSnapshot> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ s: Record<string, Record<string, unknown>[]> }[]>`
      select switchyard.metric_snapshot() as s`);
  const str = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  // jsonb writes a double's infinity as the string "Infinity".
  const num = (v: unknown) => (v === 'Infinity' ? Infinity : Number(v));
  return {
    counters: row.s.counters.map((c) => ({
      metric: str(c.metric),
      queueName: str(c.queue_name),
      functionName: str(c.function_name),
      flow: str(c.flow),
      version: str(c.version),
      step: str(c.step),
      outcome: str(c.outcome),
      n: num(c.n),
      total: num(c.total),
    })),
    histograms: row.s.histograms.map((h) => ({
      metric: str(h.metric),
      queueName: str(h.queue_name),
      flow: str(h.flow),
      version: str(h.version),
      step: str(h.step),
      outcome: str(h.outcome),
      le: num(h.le),
      count: num(h.count),
    })),
    gauges: row.s.gauges.map((g) => ({
      gauge: str(g.gauge),
      queueName: str(g.queue_name),
      functionName: str(g.function_name),
      flow: str(g.flow),
      version: str(g.version),
      value: num(g.value),
    })),
  };
}
