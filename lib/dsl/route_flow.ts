/**
 * `routeFlow()`: explicit, shared placement of every step of a flow on a named queue.
 *
 * Every step must be listed, and only steps: missing and unknown keys fail type checking and
 * the synchronous runtime check. Several steps, flows and versions may share a queue. Queue
 * names are explicit, so besides the queue name rule they must not contain `__` (reserved for
 * generated private names). Queue literals keep their literal types, so a worker's
 * `queueName` can autocomplete from the routed deployments (see `QueueNamesOf`).
 *
 * Explicit queues are shared: SQL provisions a declared queue that is absent and never drops
 * it with a flow; it never silently adopts an existing PGMQ queue it does not know.
 *
 * @module
 */

import { RouteError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { type AnyFlow, Flow, type StepSlugs, type WaitSlugs } from './flow.ts';
import { assertQueueName, type ValidQueueName } from './queue_names.ts';

/**
 * The type `routeFlow()` checks its `queues` map against: exactly the flow's step slugs as
 * keys (missing keys and unknown keys are errors) and a valid explicit queue name literal as
 * each value.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import type { RouteQueues } from './route_flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1);
 * const queues: RouteQueues<typeof flow, { a: 'work' }> = { a: 'work' };
 * ```
 */
export type RouteQueues<F extends AnyFlow, Q> =
  & {
    readonly [K in Exclude<StepSlugs<F>, WaitSlugs<F>>]: K extends keyof Q
      ? Q[K] extends string ? ValidQueueName<Q[K]>
      : string
      : string;
  }
  & {
    readonly [K in Exclude<keyof Q, StepSlugs<F>>]: `"${K & string}" is not a step of this flow`;
  }
  & {
    readonly [K in Extract<keyof Q, WaitSlugs<F>>]: `"${
      & K
      & string}" is a wait or sleep step: it uses no queue`;
  };

/**
 * A flow whose steps are placed on explicit shared queues.
 *
 * @typeParam F the flow
 * @typeParam Q step slug → queue name literal
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { type RoutedFlow, routeFlow } from './route_flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1);
 * const routed: RoutedFlow<typeof flow, { readonly a: 'work' }> = routeFlow(flow, {
 *   queues: { a: 'work' },
 * });
 * ```
 */
export interface RoutedFlow<
  F extends AnyFlow = AnyFlow,
  Q extends Readonly<Record<string, string>> = Readonly<Record<string, string>>,
> {
  /** Discriminates the placement. */
  readonly kind: 'routed';
  /** The flow, unchanged. */
  readonly flow: F;
  /** Step slug → explicit queue name (a frozen copy, in step order). */
  readonly queues: Readonly<Q>;
}

/**
 * Places each step of `flow` on the explicit queue listed for it. Returns a new frozen object;
 * the flow is not modified, and one flow can be routed several ways.
 *
 * Throws {@link RouteError} when a step is missing from `queues` or `queues` lists a key that
 * is not a step (a near miss in case is pointed out), and {@link InvalidQueueNameError} when
 * a queue name breaks the rule or contains `__`.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { routeFlow } from './route_flow.ts';
 *
 * const flow = new Flow<{ id: number }>({ slug: 'communityThreadsV2' })
 *   .step({ slug: 'fetch' }, (input) => input.id)
 *   .step({ slug: 'classify', dependsOn: ['fetch'] }, (input) => input.fetch > 0)
 *   .step({ slug: 'notify', dependsOn: ['classify'] }, () => null);
 *
 * const routed = routeFlow(flow, {
 *   queues: { fetch: 'io', classify: 'classify_threads', notify: 'io' },
 * });
 * const queue: 'classify_threads' = routed.queues.classify;
 * ```
 */
export function routeFlow<F extends AnyFlow, const Q extends RouteQueues<F, Q>>(
  flow: F,
  options: { readonly queues: Q },
): RoutedFlow<F, Q> {
  if (!(flow instanceof Flow)) {
    throw new RouteError(
      `routeFlow(${describeValue(flow)}) is invalid: pass a Flow (not a placement or ` +
        'deployment)',
    );
  }
  const where = `routeFlow(flow "${flow.slug}")`;
  const queues: unknown = options?.queues;
  if (typeof queues !== 'object' || queues === null || Array.isArray(queues)) {
    throw new RouteError(
      `${where}: queues ${describeValue(queues)} is invalid: pass an object mapping every ` +
        'step slug to a queue name',
    );
  }
  const waiting = flow.steps.filter((step) =>
    step.kind === 'wait' || step.kind === 'sleep' || step.kind === 'flow'
  );
  const routedWait = waiting.find((step) => Object.hasOwn(queues, step.slug));
  if (routedWait !== undefined) {
    throw new RouteError(
      `${where}: queues lists ${routedWait.kind} step "${routedWait.slug}": a wait, sleep or ` +
        'flow step has no task and uses no queue, leave it out',
    );
  }
  const stepSlugs = flow.steps.filter((step) => !waiting.includes(step)).map((step) => step.slug);
  const listed = Object.keys(queues);
  const unknown = listed.filter((key) => !stepSlugs.includes(key));
  if (unknown.length > 0) {
    const hints = unknown.map((key) => {
      const near = stepSlugs.find((slug) => slug.toLowerCase() === key.toLowerCase());
      return near === undefined ? `"${key}"` : `"${key}" (did you mean "${near}"?)`;
    });
    throw new RouteError(
      `${where}: queues lists unknown step ${hints.join(', ')}: list exactly the flow's ` +
        `steps (${stepSlugs.map((slug) => `"${slug}"`).join(', ') || 'none'})`,
    );
  }
  const missing = stepSlugs.filter((slug) => !Object.hasOwn(queues, slug));
  if (missing.length > 0) {
    throw new RouteError(
      `${where}: queues misses step ${missing.map((slug) => `"${slug}"`).join(', ')}: ` +
        'every step must be routed to a queue',
    );
  }
  const byStep: Record<string, string> = {};
  for (const slug of stepSlugs) {
    const queue: unknown = (queues as Record<string, unknown>)[slug];
    assertQueueName(queue, { explicit: true, where: `${where} step "${slug}"` });
    byStep[slug] = queue;
  }
  return Object.freeze({
    kind: 'routed',
    flow,
    queues: Object.freeze(byStep) as unknown as Readonly<Q>,
  });
}
