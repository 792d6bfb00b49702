/**
 * The metrics (docs/design/observability.md) in Prometheus' text exposition format (version
 * 0.0.4), as the dashboard serves them at `GET /metrics`: counters (`_total`), histograms and
 * gauges, every family with its `# HELP` and `# TYPE`, label values escaped, non-finite values
 * never written (a missing percentile is left out, not `NaN`).
 *
 * @module
 */
import type { Metrics } from '../sql/metrics.ts';
import type { MetricBucket, MetricCounter, MetricSnapshot } from '../sql/metric_snapshot.ts';

/** The content type of the text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  samples: { suffix?: string; labels: Labels; value: number | null }[];
}

/** A label value as the format writes it: backslash, double quote and newline escaped. */
function labelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function sample(name: string, labels: Labels, value: number): string {
  const l = Object.entries(labels).map(([k, v]) => `${k}="${labelValue(v)}"`).join(',');
  return `${name}${l ? `{${l}}` : ''} ${value}`;
}

/** The counters of the snapshot as Prometheus families: `[name, help, metric, labels, pick]`. */
const COUNTERS: readonly [
  string,
  string,
  string,
  readonly string[],
  ((c: MetricCounter) => boolean)?,
][] = [
  ['switchyard_task_claims_total', 'Task attempts claimed.', 'claims', [
    'queue',
    'flow',
    'version',
    'step',
  ]],
  [
    'switchyard_task_retries_total',
    'Task attempts claimed after a failed attempt.',
    'retries',
    ['queue', 'flow', 'version', 'step'],
  ],
  [
    'switchyard_task_failed_attempts_total',
    'Failed task attempts (a throw, a timeout, a stall; retried or not).',
    'failed_attempts',
    ['queue', 'flow', 'version', 'step'],
  ],
  [
    'switchyard_task_completions_total',
    'Tasks completed.',
    'task_duration',
    ['queue', 'flow', 'version', 'step'],
  ],
  [
    'switchyard_claims_throttled_total',
    'Tasks a claim held back for flow control (a rate limit, a keyed concurrency).',
    'throttled',
    ['queue'],
  ],
  ['switchyard_runs_started_total', 'Runs started.', 'runs_started', ['flow', 'version']],
  [
    'switchyard_runs_completed_total',
    'Runs completed.',
    'run_duration',
    ['flow', 'version'],
    (c) => c.outcome === 'completed',
  ],
  [
    'switchyard_runs_failed_total',
    'Runs failed.',
    'run_duration',
    ['flow', 'version'],
    (c) => c.outcome === 'failed',
  ],
  [
    'switchyard_runs_cancelled_total',
    'Runs cancelled (by a caller, a deadline, a parent).',
    'run_duration',
    ['flow', 'version'],
    (c) => c.outcome === 'cancelled',
  ],
  ['switchyard_runs_retried_total', 'Failed runs started again.', 'runs_retried', [
    'flow',
    'version',
  ]],
  [
    'switchyard_signals_total',
    'Signals accepted by wait steps (outcome delivered, or kept for a step not waiting yet).',
    'signals',
    ['flow', 'version', 'step', 'outcome'],
  ],
  [
    'switchyard_refused_starts_total',
    "Refusals of a queue function's worker (to start, or to take work), by kind.",
    'refused_starts',
    ['queue', 'function', 'refusal'],
  ],
];

const HISTOGRAMS: readonly [string, string, string, readonly string[]][] = [
  [
    'switchyard_task_duration_seconds',
    'Durations of completed tasks, claim of the last attempt to completion.',
    'task_duration',
    ['queue', 'flow', 'version', 'step'],
  ],
  [
    'switchyard_task_queue_wait_seconds',
    'Waits of first attempts, from when their message could run to their claim.',
    'queue_wait',
    ['queue', 'flow', 'version', 'step'],
  ],
  [
    'switchyard_run_duration_seconds',
    'Durations of ended runs, start to end, by outcome.',
    'run_duration',
    ['flow', 'version', 'outcome'],
  ],
];

const GAUGES: readonly [string, string, string, readonly string[]][] = [
  [
    'switchyard_workers_live',
    'Live workers of a queue function.',
    'workers_live',
    ['queue', 'function'],
  ],
  [
    'switchyard_function_paused',
    'Whether a queue function is paused (1) or not (0).',
    'function_paused',
    ['queue', 'function'],
  ],
  ['switchyard_runs_active', 'Runs started and not ended.', 'runs_active', ['flow', 'version']],
  [
    'switchyard_runs_waiting',
    'Started runs with a wait, sleep or flow step waiting.',
    'runs_waiting',
    ['flow', 'version'],
  ],
  [
    'switchyard_waits_overdue',
    'Waiting steps past their timeout that nothing has ended yet (expire_waits).',
    'waits_overdue',
    ['flow', 'version'],
  ],
];

/** A label of a snapshot row, by its Prometheus name. */
function label(
  x: {
    queueName: string;
    flow: string;
    version: string;
    outcome?: string;
    step?: string;
    functionName?: string;
  },
  name: string,
): string {
  switch (name) {
    case 'queue':
      return x.queueName;
    case 'function':
      return x.functionName ?? '';
    case 'flow':
      return x.flow;
    case 'version':
      return x.version;
    case 'step':
      return x.step ?? '';
    default: // outcome, refusal
      return x.outcome ?? '';
  }
}

function labelsOf(x: Parameters<typeof label>[0], names: readonly string[]): Labels {
  return Object.fromEntries(names.map((n) => [n, label(x, n)]));
}

/** A Prometheus sample value: integers as they are, +Inf spelled as the format wants. */
function leText(le: number): string {
  return le === Infinity ? '+Inf' : String(le);
}

/**
 * The metrics as Prometheus text: with a snapshot (`metricSnapshot`), the monotonic counters
 * (`_total`), the histograms (`_bucket`, `_sum`, `_count`) and the levels of
 * docs/design/observability.md#counters-histograms-and-levels, computed
 * from the database so every scrape from any instance agrees; and the window figures of the
 * metrics document (`switchyard_window_*`: counts, rates and duration quantiles over the last
 * `windowSeconds`), with the queue levels (`switchyard_queue_depth`, `_hidden`, `_lag_seconds`,
 * `_oldest_age_seconds`) and one `switchyard_queue_function_info` sample per queue function.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { metrics, metricSnapshot, prometheusText } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(prometheusText(await metrics(client), await metricSnapshot(client)));
 * await client.close();
 * ```
 */
export function prometheusText(m: Metrics, snapshot?: MetricSnapshot): string {
  const q = (
    name: string,
    help: string,
    pick: (x: Metrics['queues'][number]) => number | null,
  ): Family => ({
    name,
    help,
    type: 'gauge',
    samples: m.queues.map((x) => ({ labels: { queue: x.queueName }, value: pick(x) })),
  });
  const s = (
    name: string,
    help: string,
    pick: (x: Metrics['steps'][number]) => number | null,
  ): Family => ({
    name: `switchyard_window_step_${name}`,
    help,
    type: 'gauge',
    samples: m.steps.map((x) => ({
      labels: { queue: x.queueName, flow: x.flowSlug, step: x.stepSlug },
      value: pick(x),
    })),
  });
  const w = `in the last ${m.windowSeconds} s (a window figure)`;
  const families: Family[] = [];
  if (snapshot) {
    for (const [name, help, metric, names, pick] of COUNTERS) {
      families.push({
        name,
        help,
        type: 'counter',
        samples: snapshot.counters
          .filter((c) => c.metric === metric && (!pick || pick(c)))
          .map((c) => ({ labels: labelsOf(c, names), value: c.n })),
      });
    }
    // Each histogram's buckets by label set, so a scrape stays linear in the series.
    const key = (x: Omit<MetricBucket, 'le' | 'count' | 'flow'>) =>
      JSON.stringify([x.metric, x.queueName, x.version, x.step, x.outcome]);
    const buckets = new Map<string, MetricBucket[]>();
    for (const b of snapshot.histograms) {
      const k = key(b);
      const list = buckets.get(k);
      if (list) list.push(b);
      else buckets.set(k, [b]);
    }
    for (const [name, help, metric, names] of HISTOGRAMS) {
      const samples: Family['samples'] = [];
      for (const c of snapshot.counters.filter((x) => x.metric === metric)) {
        const labels = labelsOf(c, names);
        for (const b of buckets.get(key(c)) ?? []) {
          samples.push({
            suffix: '_bucket',
            labels: { ...labels, le: leText(b.le) },
            value: b.count,
          });
        }
        samples.push({ suffix: '_sum', labels, value: c.total });
        samples.push({ suffix: '_count', labels, value: c.n });
      }
      families.push({ name, help, type: 'histogram', samples });
    }
    for (const [name, help, gauge, names] of GAUGES) {
      families.push({
        name,
        help,
        type: 'gauge',
        samples: snapshot.gauges.filter((g) => g.gauge === gauge).map((g) => ({
          labels: labelsOf(g, names),
          value: g.value,
        })),
      });
    }
  }
  families.push(
    {
      name: 'switchyard_queue_function_info',
      help: 'A queue function polling the queue (always 1).',
      type: 'gauge',
      samples: m.queues.flatMap((x) =>
        x.functions.map((f) => ({ labels: { queue: x.queueName, function: f }, value: 1 }))
      ),
    },
    q('switchyard_queue_depth', 'Messages visible now.', (x) => x.depth),
    q(
      'switchyard_queue_hidden',
      'Messages hidden now (claimed, or waiting for a delay).',
      (x) => x.hidden,
    ),
    q(
      'switchyard_queue_lag_seconds',
      'How long the oldest visible message has been visible.',
      (x) => x.lagSeconds,
    ),
    q(
      'switchyard_queue_oldest_age_seconds',
      'Age of the oldest message, visible or not.',
      (x) => x.oldestAgeSeconds,
    ),
    {
      name: 'switchyard_window_seconds',
      help: 'The window the switchyard_window_* figures are measured over.',
      type: 'gauge',
      samples: [{ labels: {}, value: m.windowSeconds }],
    },
    q(
      'switchyard_window_queue_claims_per_second',
      `Tasks claimed per second ${w}.`,
      (x) => x.claimsPerSecond,
    ),
    q(
      'switchyard_window_queue_completions_per_second',
      `Tasks completed per second ${w}.`,
      (x) => x.completionsPerSecond,
    ),
    q(
      'switchyard_window_queue_failures_per_second',
      `Failed attempts (a throw, a timeout, a stall) per second ${w}.`,
      (x) => x.failuresPerSecond,
    ),
    q(
      'switchyard_window_queue_retries',
      `Tasks claimed again after a failed attempt ${w}.`,
      (x) => x.retries,
    ),
    s('claims', `Tasks claimed ${w}.`, (x) => x.claims),
    s('completions', `Tasks completed ${w}.`, (x) => x.completions),
    s('failures', `Failed attempts (a throw, a timeout, a stall) ${w}.`, (x) => x.failures),
    s('retries', `Tasks claimed again after a failed attempt ${w}.`, (x) => x.retries),
    s('attempts_avg', `Mean attempts of the tasks finished ${w}.`, (x) => x.attemptsAvg),
    s('attempts_max', `Most attempts of a task finished ${w}.`, (x) => x.attemptsMax),
    {
      name: 'switchyard_window_step_duration_seconds',
      help: `Duration quantiles (claim to completion) of the tasks completed ${w}.`,
      type: 'gauge',
      samples: m.steps.flatMap((x) => {
        const labels = { queue: x.queueName, flow: x.flowSlug, step: x.stepSlug };
        return ([['0.5', x.p50Ms], ['0.95', x.p95Ms], ['0.99', x.p99Ms]] as const).map((
          [quantile, ms],
        ) => ({ labels: { ...labels, quantile }, value: ms === null ? null : ms / 1000 }));
      }),
    },
  );
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
    for (const x of f.samples) {
      if (x.value !== null && Number.isFinite(x.value)) {
        lines.push(sample(f.name + (x.suffix ?? ''), x.labels, x.value));
      }
    }
  }
  return lines.join('\n') + '\n';
}
