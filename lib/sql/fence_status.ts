/**
 * The shape of an open fence's progress (`switchyard.fence_status`), shared by the fence
 * calls and `FenceTimeoutError`; types only, so `lib/errors.ts` can use them
 * without importing any database code.
 *
 * @module
 */

/** One fenced function in {@linkcode FenceStatus}. */
export interface FenceFunctionStatus {
  /** The fenced function. */
  functionName: string;
  /** Its queue. */
  queueName: string;
  /** Its `enabled` value before the fence. */
  wasEnabled: boolean;
  /** Its `enabled` value now (false during the fence unless changed by hand). */
  enabled: boolean;
  /** Whether it is paused (a fence never changes that). */
  paused: boolean;
  /**
   * Workers not stopped that heart-beat within their own window, or the caller's larger one
   * (deprecated ones count until they stop).
   */
  liveWorkers: number;
  /** Tasks still `started` by those live workers. */
  startedTasks: number;
  /** Tasks still `started` by workers that stopped or went silent: stall recovery requeues them. */
  stalledTasks: number;
  /** No live worker and no started task of one. */
  quiet: boolean;
}

/** The open fence. */
export interface FenceStatus {
  /** The fence. */
  fenceId: number;
  /** When `fenceBegin` opened it. */
  openedAt: Date;
  /** One entry per fenced function, by name. */
  functions: FenceFunctionStatus[];
  /** Every member is quiet: deploy the replacement registries, then end the fence. */
  quiet: boolean;
}
