/**
 * The worker's timers (docs/ARCHITECTURE.md §9): the heartbeat, whose answer also tells
 * the worker to stop when it was deprecated or its queue function paused or disabled, and
 * the stall sweep, which requeues started tasks of workers that went silent.
 *
 * @module
 */
import type { WorkerQueries } from '../sql/worker_queries.ts';
import type { Lifecycle } from './lifecycle.ts';
import { errorText, type WorkerLogger } from './persist.ts';

/** What {@linkcode startMaintenance} needs. */
export interface MaintenanceOptions {
  q: WorkerQueries;
  /** The heartbeat's own client (docs/ARCHITECTURE.md §9, `maxConnections`); default `q`. */
  heartbeatQ?: WorkerQueries;
  lifecycle: Lifecycle;
  log: WorkerLogger;
  workerId: string;
  queueName: string;
  heartbeatIntervalMs: number;
  stallCheckIntervalMs: number;
  heartbeatWindowSeconds: number;
}

/** Starts the heartbeat and the stall sweep; the returned function stops both. */
export function startMaintenance(o: MaintenanceOptions): () => void {
  const heartbeat = setInterval(async () => {
    try {
      const state = await (o.heartbeatQ ?? o.q).heartbeat(o.workerId);
      if (state !== 'ok' && o.lifecycle.requestStop(`function ${state}`)) {
        o.log.info(`stopping: function ${state}`);
      }
    } catch (e) {
      o.log.warn(`heartbeat failed: ${errorText(e)}`);
    }
  }, o.heartbeatIntervalMs);
  const stallSweep = setInterval(async () => {
    try {
      const n = await o.q.recoverStalled(o.queueName, o.heartbeatWindowSeconds);
      if (n > 0) o.log.info(`recovered ${n} stalled task(s)`);
    } catch (e) {
      o.log.warn(`stall recovery failed: ${errorText(e)}`);
    }
  }, o.stallCheckIntervalMs);
  return () => {
    clearInterval(heartbeat);
    clearInterval(stallSweep);
  };
}
