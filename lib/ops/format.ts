/**
 * Text tables for the command line: drain states and fence progress.
 *
 * @module
 */
import type { DrainState } from '../sql/drain.ts';
import type { FenceStatus } from '../sql/fence.ts';

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
