/**
 * `defineDeployedFlow()`: membership of one concrete flow version in a stable alias.
 *
 * Callers start the alias; runs and tasks keep the concrete slug (the version). A registry
 * lists deployments; for one alias the last listed deployment is its target and earlier ones
 * stay for drain (docs/design/versions.md).
 *
 * @module
 */

import { RouteError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { type AnyFlow, Flow } from './flow.ts';
import type { RoutedFlow } from './route_flow.ts';
import { assertAlias, type ValidSlug } from './slugs.ts';
import type { StepQueuedFlow } from './with_step_queues.ts';

/**
 * What can be deployed: a plain flow, a step-queued flow or a routed flow.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import type { PlacedFlow } from './deployed_flow.ts';
 *
 * const placed: PlacedFlow = new Flow({ slug: 'f' });
 * ```
 */
// deno-lint-ignore no-explicit-any
export type PlacedFlow = AnyFlow | StepQueuedFlow<any> | RoutedFlow<any, any>;

/**
 * The bare flow of a flow, placement or deployment.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { routeFlow } from './route_flow.ts';
 * import type { FlowOf } from './deployed_flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1);
 * const routed = routeFlow(flow, { queues: { a: 'work' } });
 * const same: FlowOf<typeof routed> = flow;
 * ```
 */
export type FlowOf<T> = T extends AnyFlow ? T
  : T extends { readonly flow: infer F extends AnyFlow } ? F
  : never;

/**
 * One concrete flow version (with its placement) deployed under a stable alias.
 *
 * @typeParam P the placed flow: a `Flow`, `StepQueuedFlow` or `RoutedFlow`
 * @typeParam A the alias literal
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { type DeployedFlow, defineDeployedFlow } from './deployed_flow.ts';
 *
 * const v2 = new Flow({ slug: 'threadsV2' }).step({ slug: 'a' }, () => 1);
 * const deployed: DeployedFlow<typeof v2> = defineDeployedFlow(v2, { alias: 'threads' });
 * ```
 */
export interface DeployedFlow<P extends PlacedFlow = PlacedFlow, A extends string = string> {
  /** Discriminates a deployment from flows and placements. */
  readonly kind: 'deployed';
  /** The stable alias callers start. */
  readonly alias: A;
  /** The placed flow, unchanged. */
  readonly placed: P;
  /** The bare flow (the concrete version). */
  readonly flow: FlowOf<P>;
}

/**
 * Deploys a plain, step-queued or routed flow under a stable alias. The alias follows the slug
 * rule, checked like a flow slug by type (for a literal) and at runtime (`InvalidSlugError`); the result is a
 * new frozen object and the placed flow is not modified.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { routeFlow } from './route_flow.ts';
 * import { defineDeployedFlow } from './deployed_flow.ts';
 *
 * const v1 = new Flow({ slug: 'threadsV1' }).step({ slug: 'fetch' }, () => 1);
 * const v2 = new Flow({ slug: 'threadsV2' }).step({ slug: 'fetch' }, () => 2);
 * const registry = [
 *   defineDeployedFlow(routeFlow(v1, { queues: { fetch: 'io' } }), { alias: 'threads' }),
 *   defineDeployedFlow(routeFlow(v2, { queues: { fetch: 'io' } }), { alias: 'threads' }),
 * ] as const;
 * ```
 */
export function defineDeployedFlow<P extends PlacedFlow, const A extends string>(
  placed: P,
  options: { readonly alias: ValidSlug<A, 'alias'> },
): DeployedFlow<P, A> {
  const flow = placed instanceof Flow
    ? placed
    : (placed as { kind?: unknown }).kind === 'step_queues' ||
        (placed as { kind?: unknown }).kind === 'routed'
    ? (placed as StepQueuedFlow | RoutedFlow).flow
    : undefined;
  if (!(flow instanceof Flow)) {
    throw new RouteError(
      `defineDeployedFlow(${describeValue(placed)}) is invalid: pass a Flow, ` +
        'withStepQueues(flow) or routeFlow(flow, ...) (a deployment cannot be deployed again)',
    );
  }
  const alias: unknown = options?.alias;
  assertAlias(alias);
  return Object.freeze({
    kind: 'deployed',
    alias: alias as A,
    placed,
    flow: flow as FlowOf<P>,
  });
}
