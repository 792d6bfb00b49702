/**
 * `withStepQueues()`: one generated private queue per step, owned by the flow.
 *
 * Use it when each step should scale as its own Edge Function without declaring shared
 * queues. The worker then needs `{ stepSlug }` to select one step's queue.
 *
 * @module
 */

import { RouteError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { type AnyFlow, Flow, type StepSlugs } from './flow.ts';
import { stepQueueName } from './queue_names.ts';

/**
 * A flow placed on generated private per-step queues.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { type StepQueuedFlow, withStepQueues } from './with_step_queues.ts';
 *
 * const flow = new Flow({ slug: 'threads' }).step({ slug: 'fetch' }, () => 1);
 * const placed: StepQueuedFlow<typeof flow> = withStepQueues(flow);
 * console.assert(placed.queues.fetch === 'threads__fetch');
 * ```
 */
export interface StepQueuedFlow<F extends AnyFlow = AnyFlow> {
  /** Discriminates the placement. */
  readonly kind: 'step_queues';
  /** The flow, unchanged. */
  readonly flow: F;
  /** Step slug → its generated private queue name. */
  readonly queues: Readonly<Record<StepSlugs<F>, string>>;
}

/**
 * Places every step of `flow` on its own generated private queue: `lower(flow__step)` when
 * that has at most 47 characters, else `lower(flow__<stepIndex>)`. Throws
 * {@link InvalidQueueNameError} when even the index form is too long (shorten the flow slug);
 * names are never truncated or hashed. The flow itself is not modified.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { withStepQueues } from './with_step_queues.ts';
 *
 * const flow = new Flow<{ id: number }>({ slug: 'communityThreads' })
 *   .step({ slug: 'fetch' }, (input) => input.id)
 *   .step({ slug: 'classify', dependsOn: ['fetch'] }, (input) => input.fetch > 0);
 * const placed = withStepQueues(flow);
 * console.assert(placed.queues.classify === 'communitythreads__classify');
 * ```
 */
export function withStepQueues<F extends AnyFlow>(flow: F): StepQueuedFlow<F> {
  if (!(flow instanceof Flow)) {
    throw new RouteError(
      `withStepQueues(${describeValue(flow)}) is invalid: pass a Flow (not a placement or ` +
        'deployment)',
    );
  }
  const queues = Object.fromEntries(
    flow.steps.map((step) => [step.slug, stepQueueName(flow.slug, step.slug, step.index)]),
  ) as Record<StepSlugs<F>, string>;
  return Object.freeze({ kind: 'step_queues', flow, queues: Object.freeze(queues) });
}
