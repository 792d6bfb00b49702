/**
 * The worker's timers (docs/design/worker.md#worker-states-and-parts): the heartbeat, whose answer
 * also tells
 * the worker to stop when it was deprecated or its queue function paused or disabled, and
 * names the runs of its running handlers that were cancelled or failed meanwhile (and, while
 * spans are recorded, records the spans of traced runs that ended), and
 * the stall sweep, which requeues started tasks of workers that went silent.
 *
 * The heartbeat has its own queries object (its own connection when the worker opened its
 * pool), so reads, claims and completions waiting for a busy pool never hold it back. A tick
 * whose previous call is still running is skipped: a blocked database costs one connection per
 * timer, never one per tick.
 *
 * @module
 */
import type { EndedRun, WorkerQueries } from '../sql/worker_queries.ts';
import type { Lifecycle } from './lifecycle.ts';
import { errorText, type WorkerLogger } from './persist.ts';
import { recordRunSpan, spansRecorded } from '../tracing.ts';

/** What {@linkcode startMaintenance} needs. */
export interface MaintenanceOptions {
  /** The worker's queries, for the stall sweep. */
  q: WorkerQueries;
  /** The heartbeat's queries: its own connection where the worker opened the pool. */
  heartbeatQ: WorkerQueries;
  lifecycle: Lifecycle;
  log: WorkerLogger;
  workerId: string;
  queueName: string;
  /** The queue function, named with its pause reason when a pause stops the worker. */
  functionName: string;
  heartbeatIntervalMs: number;
  stallCheckIntervalMs: number;
  heartbeatWindowSeconds: number;
  /** Runs of this worker's started tasks that ended (cancelled or failed): abort their handlers. */
  onEndedRuns: (runs: EndedRun[]) => void;
}

/** Runs `fn` every `ms`, skipping a tick while the previous run is still going. */
function every(ms: number, fn: () => Promise<void>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    fn().finally(() => (running = false));
  }, ms);
  return () => clearInterval(timer);
}

/** Starts the heartbeat and the stall sweep; the returned function stops both. */
export function startMaintenance(o: MaintenanceOptions): () => void {
  let lastBeat = Date.now();
  let warnedIds = false;
  const stopHeartbeat = every(o.heartbeatIntervalMs, async () => {
    // A handler that keeps the event loop busy delays this timer; past the window, other
    // workers' sweeps may already have requeued this worker's tasks
    // (docs/design/worker.md#worker-states-and-parts: CPU-bound handlers).
    const silent = Date.now() - lastBeat;
    if (silent > o.heartbeatWindowSeconds * 1000) {
      o.log.warn(
        `no heartbeat for ${silent} ms, longer than the heartbeat window ` +
          `(${o.heartbeatWindowSeconds} s): the event loop was blocked (a CPU-bound handler?) or ` +
          "the database was slow to answer; other workers may have recovered this worker's tasks",
      );
    }
    try {
      const { state, ended_runs } = await o.heartbeatQ.heartbeatWithRuns(o.workerId);
      lastBeat = Date.now();
      if (ended_runs.length > 0) o.onEndedRuns(ended_runs);
      if (state !== 'ok' && o.lifecycle.requestStop(`function ${state}`)) {
        if (state === 'paused') {
          // A pause from elsewhere (an operator, another instance's unsupported work): this
          // function's log says why, as its refused starts do
          // (docs/design/worker.md#refusals-are-seen-where-operators-look).
          const flags = await o.heartbeatQ.functionFlags(o.functionName).catch(() => null);
          o.log.warn(
            `stopping: function "${o.functionName}" is paused: ` +
              `${flags?.pause_reason ?? '(the reason could not be read)'}`,
          );
        } else {
          o.log.info(`stopping: function ${state}`);
        }
      }
    } catch (e) {
      o.log.warn(`heartbeat failed: ${errorText(e)}`);
    }
    // Run spans (docs/design/observability.md#metrics-traces-and-charts): while spans are recorded
    // here, the spans of traced
    // runs that ended, whichever path ended them, each taken by one worker.
    if (spansRecorded()) {
      try {
        const ended = await o.heartbeatQ.takeRunSpans();
        let foreign = 0;
        for (const r of ended) if (!recordRunSpan(r)) foreign++;
        if (foreign > 0 && !warnedIds) {
          warnedIds = true;
          o.log.warn(
            `${foreign} run span(s) got an id of the SDK's, not the one their tasks name as ` +
              'parent: give the tracer provider `idGenerator: runSpanIdGenerator()` (from ' +
              'switchyard) so the tasks and child runs of a run are under its span',
          );
        }
      } catch (e) {
        o.log.warn(`recording run spans failed: ${errorText(e)}`);
      }
    }
  });
  const stopSweep = every(o.stallCheckIntervalMs, async () => {
    try {
      const n = await o.q.recoverStalled(o.queueName);
      if (n > 0) o.log.info(`recovered ${n} stalled task(s)`);
    } catch (e) {
      o.log.warn(`stall recovery failed: ${errorText(e)}`);
    }
  });
  return () => {
    stopHeartbeat();
    stopSweep();
  };
}
