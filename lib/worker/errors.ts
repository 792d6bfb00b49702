/**
 * Errors a worker raises at start-up or when it stops fatally. All extend
 * {@linkcode SwitchyardError} so callers can match the family or one class.
 *
 * @module
 */
import { SwitchyardError } from '../errors.ts';

/** A `flow/step` pair as the SQL core names it. */
export type FlowStepPair = `${string}/${string}`;

/**
 * The worker's configuration is wrong (duplicate concrete slugs, a queue no
 * deployment routes to, a missing or forbidden selector, a bad number).
 *
 * @example
 * ```ts
 * import { WorkerConfigError } from './errors.ts';
 * const e = new WorkerConfigError('maxConcurrent 0 is invalid: use an integer from 1 to 1000');
 * console.assert(e instanceof WorkerConfigError);
 * ```
 */
export class WorkerConfigError extends SwitchyardError {
  constructor(message: string) {
    super(message);
    this.name = 'WorkerConfigError';
  }
}

/**
 * Start-up refused: work on the queue needs (flow, step) pairs the registry lacks.
 *
 * @example
 * ```ts
 * import { CoverageError } from './errors.ts';
 * const e = new CoverageError('classify', [
 *   { flowSlug: 'threadsV3', stepSlug: 'classify', reasons: 'active target of alias threads' },
 * ]);
 * console.assert(e.missingPairs[0] === 'threadsV3/classify');
 * ```
 */
export class CoverageError extends SwitchyardError {
  /** The queue the worker was to poll. */
  readonly queueName: string;
  /** Every missing pair as `flow/step`. */
  readonly missingPairs: FlowStepPair[];
  /** Each missing pair with why it is needed. */
  readonly missing: { flowSlug: string; stepSlug: string; reasons: string }[];
  constructor(
    queueName: string,
    missing: { flowSlug: string; stepSlug: string; reasons: string }[],
  ) {
    super(
      `worker for queue "${queueName}" refuses to start: its registry lacks ${missing.length} ` +
        `flow/step pair(s) that work on the queue needs: ${
          missing.map((m) => `${m.flowSlug}/${m.stepSlug} (${m.reasons})`).join(', ')
        }; add those deployments to the registry`,
    );
    this.name = 'CoverageError';
    this.queueName = queueName;
    this.missing = missing;
    this.missingPairs = missing.map((m) => `${m.flowSlug}/${m.stepSlug}` as FlowStepPair);
  }
}

/**
 * A batch held work the worker cannot run. Nothing was claimed, the batch is
 * visible again, no attempt was used, and the function is paused.
 *
 * @example
 * ```ts
 * import { UnsupportedWorkError } from './errors.ts';
 * const e = new UnsupportedWorkError('classify', 'classify-worker', [41n, 42n], ['threadsV2/classify']);
 * console.assert(e.messageIds.length === 2);
 * ```
 */
export class UnsupportedWorkError extends SwitchyardError {
  readonly queueName: string;
  readonly functionName: string;
  readonly messageIds: bigint[];
  /** `flow/step` pairs, or `(no task)` for messages that belong to no task. */
  readonly unsupportedPairs: string[];
  constructor(
    queueName: string,
    functionName: string,
    messageIds: bigint[],
    unsupportedPairs: string[],
  ) {
    super(
      `unsupported work on queue "${queueName}": message ids [${messageIds.join(', ')}], ` +
        `unsupported flow/step pairs [${unsupportedPairs.join(', ')}]; nothing was claimed, ` +
        `the batch is visible again and function "${functionName}" is paused ` +
        `(resume it with switchyard.resume_function after fixing the registry)`,
    );
    this.name = 'UnsupportedWorkError';
    this.queueName = queueName;
    this.functionName = functionName;
    this.messageIds = messageIds;
    this.unsupportedPairs = unsupportedPairs;
  }
}

/**
 * The worker's function is paused; it starts nothing until resumed.
 *
 * @example
 * ```ts
 * import { FunctionPausedError } from './errors.ts';
 * const e = new FunctionPausedError('classify-worker', 'unsupported work on queue classify');
 * console.assert(e.reason.startsWith('unsupported'));
 * ```
 */
export class FunctionPausedError extends SwitchyardError {
  readonly functionName: string;
  readonly reason: string;
  constructor(functionName: string, reason: string) {
    super(`function "${functionName}" is paused: ${reason}`);
    this.name = 'FunctionPausedError';
    this.functionName = functionName;
    this.reason = reason;
  }
}

/**
 * The worker's function is disabled (for example inside a fenced rollout).
 *
 * @example
 * ```ts
 * import { FunctionDisabledError } from './errors.ts';
 * console.assert(new FunctionDisabledError('classify-worker').functionName === 'classify-worker');
 * ```
 */
export class FunctionDisabledError extends SwitchyardError {
  readonly functionName: string;
  constructor(functionName: string) {
    super(`function "${functionName}" is disabled; a fenced rollout re-enables it when it ends`);
    this.name = 'FunctionDisabledError';
    this.functionName = functionName;
  }
}
