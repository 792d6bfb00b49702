/**
 * Text tables for the command line: drain states, fence progress and metrics.
 *
 * @module
 */
import type { DrainState } from '../sql/drain.ts';
import type { FenceStatus } from '../sql/fence.ts';
import type { Metrics } from '../sql/metrics.ts';

/**
 * Renders drain states as an aligned text table, one line per queue and version.
 *
 * @example
 * ```ts
 * import { formatDrainStatus } from './format.ts';
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
 * Renders the metrics (docs/design/observability.md) as two aligned text tables: one line per
 * queue, then one per step with activity in the window.
 *
 * @example
 * ```ts
 * import { formatMetrics } from './format.ts';
 * console.log(formatMetrics({
 *   at: new Date(), windowSeconds: 60,
 *   queues: [{ queueName: 'classify', functions: ['classify-worker'], depth: 3, hidden: 1,
 *     lagSeconds: 0.4, oldestAgeSeconds: 2, claims: 60, completions: 58, failures: 2, retries: 1,
 *     claimsPerSecond: 1, completionsPerSecond: 0.97, failuresPerSecond: 0.03 }],
 *   steps: [],
 * }));
 * ```
 */
export function formatMetrics(m: Metrics): string {
  const n = (v: number | null, digits = 0) => (v === null ? '-' : v.toFixed(digits));
  const queues = formatTable(
    ['queue', 'functions', 'depth', 'hidden', 'lag s', 'claims/s', 'done/s', 'failed/s', 'retries'],
    m.queues.map((q) => [
      q.queueName,
      q.functions.join(',') || '-',
      n(q.depth),
      n(q.hidden),
      n(q.lagSeconds, 1),
      n(q.claimsPerSecond, 2),
      n(q.completionsPerSecond, 2),
      n(q.failuresPerSecond, 2),
      String(q.retries),
    ]),
  );
  const steps = m.steps.length === 0
    ? `no task was claimed, completed or failed in the last ${m.windowSeconds} s`
    : formatTable(
      [
        'queue',
        'flow',
        'step',
        'claims',
        'done',
        'failed',
        'retries',
        'p50 ms',
        'p95 ms',
        'p99 ms',
        'attempts',
      ],
      m.steps.map((s) => [
        s.queueName,
        s.flowSlug,
        s.stepSlug,
        String(s.claims),
        String(s.completions),
        String(s.failures),
        String(s.retries),
        n(s.p50Ms, 1),
        n(s.p95Ms, 1),
        n(s.p99Ms, 1),
        s.attemptsAvg === null ? '-' : `${s.attemptsAvg.toFixed(2)} (max ${s.attemptsMax})`,
      ]),
    );
  return `window: the last ${m.windowSeconds} s, at ${m.at.toISOString()}\n\n${queues}\n\n${steps}`;
}

/**
 * Renders a fence status as an aligned text table, one line per fenced function.
 *
 * @example
 * ```ts
 * import { formatFenceStatus } from './format.ts';
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
