/**
 * The metrics (docs/ARCHITECTURE.md §16) in Prometheus' text exposition format (version
 * 0.0.4), as the dashboard serves them at `GET /metrics`: every family with its `# HELP` and
 * `# TYPE`, label values escaped, non-finite values never written (a missing percentile is
 * left out, not `NaN`).
 *
 * @module
 */
import type { Metrics } from '../sql/metrics.ts';

/** The content type of the text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  samples: { labels: Labels; value: number | null }[];
}

/** A label value as the format writes it: backslash, double quote and newline escaped. */
function labelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function sample(name: string, labels: Labels, value: number): string {
  const l = Object.entries(labels).map(([k, v]) => `${k}="${labelValue(v)}"`).join(',');
  return `${name}${l ? `{${l}}` : ''} ${value}`;
}

/**
 * The metrics document as Prometheus text: gauges per queue (`queue` label), per step
 * (`queue`, `flow`, `step`), the step durations with a `quantile` label, and one
 * `switchyard_queue_function_info` sample per queue function.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { metrics, prometheusText } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(prometheusText(await metrics(client)));
 * await client.close();
 * ```
 */
export function prometheusText(m: Metrics): string {
  const q = (
    name: string,
    help: string,
    pick: (x: Metrics['queues'][number]) => number | null,
  ) => ({
    name: `switchyard_queue_${name}`,
    help,
    samples: m.queues.map((x) => ({ labels: { queue: x.queueName }, value: pick(x) })),
  });
  const s = (name: string, help: string, pick: (x: Metrics['steps'][number]) => number | null) => ({
    name: `switchyard_step_${name}`,
    help,
    samples: m.steps.map((x) => ({
      labels: { queue: x.queueName, flow: x.flowSlug, step: x.stepSlug },
      value: pick(x),
    })),
  });
  const w = `in the last ${m.windowSeconds} s`;
  const families: Family[] = [
    {
      name: 'switchyard_metrics_window_seconds',
      help: 'The window the rates and counts are measured over.',
      samples: [{ labels: {}, value: m.windowSeconds }],
    },
    {
      name: 'switchyard_queue_function_info',
      help: 'A queue function polling the queue (always 1).',
      samples: m.queues.flatMap((x) =>
        x.functions.map((f) => ({ labels: { queue: x.queueName, function: f }, value: 1 }))
      ),
    },
    q('depth', 'Messages visible now.', (x) => x.depth),
    q('hidden', 'Messages hidden now (claimed, or waiting for a delay).', (x) => x.hidden),
    q('lag_seconds', 'How long the oldest visible message has been visible.', (x) => x.lagSeconds),
    q(
      'oldest_age_seconds',
      'Age of the oldest message, visible or not.',
      (x) => x.oldestAgeSeconds,
    ),
    q('claims_per_second', `Tasks claimed per second ${w}.`, (x) => x.claimsPerSecond),
    q('completions_per_second', `Tasks completed per second ${w}.`, (x) => x.completionsPerSecond),
    q(
      'failures_per_second',
      `Failed attempts (a throw, a timeout, a stall) per second ${w}.`,
      (x) => x.failuresPerSecond,
    ),
    q('retries', `Tasks claimed again after a failed attempt ${w}.`, (x) => x.retries),
    s('claims', `Tasks claimed ${w}.`, (x) => x.claims),
    s('completions', `Tasks completed ${w}.`, (x) => x.completions),
    s('failures', `Failed attempts (a throw, a timeout, a stall) ${w}.`, (x) => x.failures),
    s('retries', `Tasks claimed again after a failed attempt ${w}.`, (x) => x.retries),
    s('attempts_avg', `Mean attempts of the tasks finished ${w}.`, (x) => x.attemptsAvg),
    s('attempts_max', `Most attempts of a task finished ${w}.`, (x) => x.attemptsMax),
    {
      name: 'switchyard_step_duration_seconds',
      help: `Duration quantiles (claim to completion) of the tasks completed ${w}.`,
      samples: m.steps.flatMap((x) => {
        const labels = { queue: x.queueName, flow: x.flowSlug, step: x.stepSlug };
        return ([['0.5', x.p50Ms], ['0.95', x.p95Ms], ['0.99', x.p99Ms]] as const).map((
          [quantile, ms],
        ) => ({ labels: { ...labels, quantile }, value: ms === null ? null : ms / 1000 }));
      }),
    },
  ];
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} gauge`);
    for (const x of f.samples) {
      if (x.value !== null && Number.isFinite(x.value)) {
        lines.push(sample(f.name, x.labels, x.value));
      }
    }
  }
  return lines.join('\n') + '\n';
}
