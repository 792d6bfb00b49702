/**
 * The worker's tuning settings in one table (docs/design/worker.md#worker-states-and-parts): each
 * with its
 * default, the environment variable a queue function may set it from, and its range.
 * `startWorker()` takes them as options; `EdgeWorker.start()` also reads the variables
 * for options the code does not set.
 *
 * @module
 */
import { WorkerConfigError } from '../errors.ts';
import type { EnvReader } from '../sql/connection.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from '../sql/windows.ts';

/** The worker's tuning, every value resolved. */
export interface WorkerSettings {
  /** Tasks run at once (default 10). */
  maxConcurrent: number;
  /** Messages read per poll (default `maxConcurrent`, never more than free slots). */
  batchSize: number;
  /**
   * Seconds a read message may wait for its claim (default 5). The read hides it for this plus
   * what its claim needs (`switchyard.read_visibility_seconds`), so the claim writes it no more.
   */
  visibilityTimeout: number;
  /** Seconds one read waits for messages (default 2). */
  maxPollSeconds: number;
  /** Milliseconds between reads inside one poll (default 100). */
  pollIntervalMs: number;
  /** Milliseconds between heartbeats (default 2000). */
  heartbeatIntervalMs: number;
  /** Milliseconds between stall-recovery sweeps of the queue (default 5000). */
  stallCheckIntervalMs: number;
  /**
   * Seconds without a heartbeat after which the worker's started tasks are recovered by any
   * worker's stall sweep (default 15). Stored with the worker at registration; at least
   * {@linkcode HEARTBEAT_WINDOW_INTERVALS} heartbeat intervals.
   */
  heartbeatWindowSeconds: number;
  /**
   * Connections of the worker's pool (default 4): reads, claims, completions, failures and the
   * stall sweep. The heartbeat has one connection of its own besides.
   */
  maxConnections: number;
  /**
   * Milliseconds a stopping worker waits for its running handlers after aborting their
   * `ctx.signal` (default 5000). Tasks still running then are made visible again at once,
   * their attempt refunded.
   */
  shutdownGraceMs: number;
  /**
   * The wall clock of this runtime instance in milliseconds (default 0: none). With one, the
   * worker stops itself `shutdownGraceMs` before it ends, as on `beforeunload`, and handlers
   * read what is left as `ctx.deadline`: set it to the hosted limit of the Supabase plan (e.g.
   * 150000 or 400000) so checkpointed work is handed over before the runtime kills it.
   */
  wallClockMs: number;
}

/** One row of {@linkcode WORKER_SETTINGS}. */
export interface WorkerSetting {
  /** The environment variable a queue function may set it from. */
  readonly env: string;
  /** The default: a number, or the name of the setting whose value it takes. */
  readonly default: number | keyof WorkerSettings;
  /** The smallest accepted integer. */
  readonly min: number;
  /** The largest accepted integer. */
  readonly max: number;
  /** Why the range is what it is, when that is not obvious. */
  readonly note?: string;
}

/**
 * The heartbeat window must span at least this many heartbeat intervals, so one late or lost
 * heartbeat (a slow round trip, a busy event loop) never makes a live worker look dead.
 *
 * @example
 * ```ts
 * import { HEARTBEAT_WINDOW_INTERVALS } from './settings.ts';
 * // heartbeatIntervalMs 2000 needs heartbeatWindowSeconds >= 6.
 * console.assert(2000 * HEARTBEAT_WINDOW_INTERVALS / 1000 === 6);
 * ```
 */
export const HEARTBEAT_WINDOW_INTERVALS = 3;

/** Every worker setting: default, environment variable and range, in resolution order. */
export const WORKER_SETTINGS: Readonly<Record<keyof WorkerSettings, WorkerSetting>> = {
  maxConcurrent: { env: 'SWITCHYARD_MAX_CONCURRENT', default: 10, min: 1, max: 1000 },
  batchSize: { env: 'SWITCHYARD_BATCH_SIZE', default: 'maxConcurrent', min: 1, max: 1000 },
  visibilityTimeout: { env: 'SWITCHYARD_VISIBILITY_TIMEOUT', default: 5, min: 1, max: 3600 },
  maxPollSeconds: {
    env: 'SWITCHYARD_MAX_POLL_SECONDS',
    default: 2,
    min: 1,
    max: 60,
    note: "PGMQ's read_with_poll checks its deadline before reading: 0 would never read",
  },
  pollIntervalMs: { env: 'SWITCHYARD_POLL_INTERVAL_MS', default: 100, min: 10, max: 10_000 },
  heartbeatIntervalMs: {
    env: 'SWITCHYARD_HEARTBEAT_INTERVAL_MS',
    default: 2000,
    min: 100,
    max: 60_000,
  },
  stallCheckIntervalMs: {
    env: 'SWITCHYARD_STALL_CHECK_INTERVAL_MS',
    default: 5000,
    min: 100,
    max: 600_000,
  },
  heartbeatWindowSeconds: {
    env: 'SWITCHYARD_HEARTBEAT_WINDOW_SECONDS',
    default: DEFAULT_HEARTBEAT_WINDOW_SECONDS,
    min: 2,
    max: 3600,
    note: 'the SQL core refuses a window below switchyard.heartbeat_window_floor_seconds(), 2',
  },
  shutdownGraceMs: {
    env: 'SWITCHYARD_SHUTDOWN_GRACE_MS',
    default: 5000,
    min: 0,
    max: 600_000,
  },
  wallClockMs: {
    env: 'SWITCHYARD_WALL_CLOCK_MS',
    default: 0,
    min: 0,
    max: 86_400_000,
    note: '0: no wall clock; else at least shutdownGraceMs + 1000',
  },
  maxConnections: {
    env: 'SWITCHYARD_MAX_CONNECTIONS',
    default: 4,
    min: 2,
    max: 100,
    note: "the poller's long read holds one; the heartbeat's own connection comes on top",
  },
};

const NAMES = Object.keys(WORKER_SETTINGS) as (keyof WorkerSettings)[];

/**
 * Resolves every setting: the option when given, else (with `env`) its environment variable,
 * else its default; each checked against its range. Refusals name the value and the rule.
 *
 * @throws {WorkerConfigError} for a value outside its range, an unparsable variable, or a
 * heartbeat window shorter than {@linkcode HEARTBEAT_WINDOW_INTERVALS} heartbeat intervals
 *
 * @example
 * ```ts
 * import { resolveSettings } from './settings.ts';
 * const s = resolveSettings({ maxConcurrent: 4 });
 * console.assert(s.batchSize === 4 && s.heartbeatWindowSeconds === 15);
 * ```
 */
export function resolveSettings(
  options: Partial<WorkerSettings>,
  env?: EnvReader,
): WorkerSettings {
  const given: Partial<Record<keyof WorkerSettings, number>> = {};
  for (const name of NAMES) {
    const value = options[name] ?? (env ? fromEnv(name, env) : undefined);
    if (value !== undefined) given[name] = value;
  }
  const out = {} as WorkerSettings;
  for (const name of NAMES) {
    const spec = WORKER_SETTINGS[name];
    const value = given[name] ??
      (typeof spec.default === 'number' ? spec.default : out[spec.default]);
    if (!Number.isInteger(value) || value < spec.min || value > spec.max) {
      throw new WorkerConfigError(
        `${name} ${String(value)} is invalid: use an integer from ${spec.min} to ${spec.max}` +
          (spec.note ? ` (${spec.note})` : ''),
      );
    }
    out[name] = value;
  }
  // Validated together: heartbeats every 20 s with a 2 s window would have every other
  // worker's stall sweep requeue this worker's healthy tasks (docs/design/claim.md#stall-recovery).
  const shortest = Math.ceil(out.heartbeatIntervalMs * HEARTBEAT_WINDOW_INTERVALS / 1000);
  if (out.heartbeatWindowSeconds < shortest) {
    throw new WorkerConfigError(
      `heartbeatWindowSeconds ${out.heartbeatWindowSeconds} is invalid with heartbeatIntervalMs ` +
        `${out.heartbeatIntervalMs}: the window must be at least ${HEARTBEAT_WINDOW_INTERVALS} ` +
        `heartbeat intervals (${shortest} s); raise the window or shorten the interval`,
    );
  }
  if (out.wallClockMs > 0 && out.wallClockMs < out.shutdownGraceMs + 1000) {
    throw new WorkerConfigError(
      `wallClockMs ${out.wallClockMs} is invalid with shutdownGraceMs ${out.shutdownGraceMs}: ` +
        `the wall clock must leave at least 1000 ms of work before the grace period ` +
        `(${out.shutdownGraceMs + 1000} ms or more), or be 0 for none`,
    );
  }
  return out;
}

function fromEnv(name: keyof WorkerSettings, env: EnvReader): number | undefined {
  const variable = WORKER_SETTINGS[name].env;
  const text = env(variable);
  if (text === undefined || text === '') return undefined;
  if (!/^\d+$/.test(text.trim())) {
    throw new WorkerConfigError(
      `${variable} "${text}" is invalid: use a non-negative integer (it sets ${name})`,
    );
  }
  return Number(text);
}
