/**
 * `toPlacement()`: one normalized view of a plain flow, a step-queued flow, a routed flow or a
 * deployment — which queue every step uses, and the `FlowShape` document that SQL
 * `switchyard.ensure_flow(shape jsonb)` compiles or verifies.
 *
 * The shape is deterministic (fixed key order, steps in index order) so that compiling the same
 * concrete slug twice with the same placement is a no-op, and any difference in placement,
 * dependencies, options or conditions is a mismatch SQL can report
 * (docs/design/overview.md#identity-rules: routing is immutable for
 * one concrete slug).
 *
 * @module
 */

import { RouteError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { type AnyFlow, Flow } from './flow.ts';
import type {
  ConcurrencyOption,
  OnTimeout,
  RateLimitOption,
  SleepUntilOption,
  StepKind,
  WhenExhausted,
  WhenUnmet,
} from './flow_types.ts';
import type { JsonValue } from './json.ts';
import type { DeployedFlow } from './deployed_flow.ts';
import { plainQueueName } from './queue_names.ts';
import { type RoutedFlow, routeFlow } from './route_flow.ts';
import { type StepQueuedFlow, withStepQueues } from './with_step_queues.ts';

/**
 * Anything a worker registry may list: a plain flow, a step-queued flow, a routed flow or a
 * deployment of one of them.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import type { WorkerTarget } from './placement.ts';
 *
 * const targets: WorkerTarget[] = [new Flow({ slug: 'f' })];
 * ```
 */
// deno-lint-ignore no-explicit-any
export type WorkerTarget = AnyFlow | StepQueuedFlow<any> | RoutedFlow<any, any> | DeployedFlow<any>;

/**
 * How a flow's steps are placed on queues: its own lower-cased slug (`plain`), a generated
 * private queue per step (`step_queues`) or explicit shared queues (`routed`).
 *
 * @example
 * ```ts
 * import type { PlacementKind } from './placement.ts';
 *
 * const kind: PlacementKind = 'routed';
 * ```
 */
export type PlacementKind = 'plain' | 'step_queues' | 'routed';

/**
 * One step in a {@link FlowShape}.
 *
 * @example
 * ```ts
 * import type { FlowShapeStep } from './placement.ts';
 *
 * const step: FlowShapeStep = {
 *   slug: 'a',
 *   index: 0,
 *   kind: 'single',
 *   dependsOn: [],
 *   queue: 'diamond',
 *   options: {
 *     maxAttempts: null,
 *     baseDelay: null,
 *     maxDelay: null,
 *     timeout: null,
 *     startDelay: 0,
 *     if: null,
 *     ifNot: null,
 *     whenUnmet: 'skip',
 *     whenExhausted: 'fail',
 *   },
 * };
 * ```
 */
export interface FlowShapeStep {
  /** The step slug. */
  readonly slug: string;
  /** 0-based position in the order the steps were added. */
  readonly index: number;
  /** `single`, or `map`: one task per element of its array (docs/design/runs.md#map-steps). */
  readonly kind: StepKind;
  /** Dependency slugs, in the order given (a map step: none, or the step it maps). */
  readonly dependsOn: readonly string[];
  /** The step's physical queue; `null` for a wait, sleep or flow step, which has no task. */
  readonly queue: string | null;
  /** Step options; `null` means inherit from the flow (for `if` / `ifNot`: no pattern). */
  readonly options: {
    readonly maxAttempts: number | null;
    readonly baseDelay: number | null;
    readonly maxDelay: number | null;
    readonly timeout: number | null;
    readonly startDelay: number;
    readonly if: JsonValue | null;
    readonly ifNot: JsonValue | null;
    readonly whenUnmet: WhenUnmet;
    readonly whenExhausted: WhenExhausted;
    /** A wait or sleep step only: its timeout (a sleep's length) in seconds, or `null`. */
    readonly waitTimeout?: number | null;
    /** A wait or sleep step only: what the timeout does. */
    readonly onTimeout?: OnTimeout;
    /** A sleep until a time only: where the time is read (docs/design/waits.md). */
    readonly sleepUntil?: SleepUntilOption;
    /** A flow step only: the alias its child run starts. */
    readonly childAlias?: string;
    /** Present only when the step has one (docs/design/flow-control.md#rate-limits-and-keyed-concurrency). */
    readonly rateLimit?: RateLimitOption;
    /** Present only when the step has one. */
    readonly concurrency?: ConcurrencyOption;
  };
}

/**
 * The JSON document describing one concrete flow and its placement, as compiled or verified by
 * SQL `switchyard.ensure_flow(shape jsonb)`. Keys appear in this order; steps in index order;
 * flow options have defaults applied; step options are `null` where inherited. The alias is
 * not part of the shape: it belongs to the deployment, not to the concrete version.
 *
 * @example
 * ```ts
 * import type { FlowShape } from './placement.ts';
 *
 * const shape: FlowShape = {
 *   slug: 'diamond',
 *   placement: 'plain',
 *   options: { maxAttempts: 3, baseDelay: 1, maxDelay: 86400, timeout: 60 },
 *   steps: [],
 * };
 * ```
 */
export interface FlowShape {
  /** The concrete flow slug. */
  readonly slug: string;
  /** The placement kind. */
  readonly placement: PlacementKind;
  /** Flow options, defaults applied. */
  readonly options: {
    readonly maxAttempts: number;
    readonly baseDelay: number;
    readonly maxDelay: number;
    readonly timeout: number;
    /** Present only when the flow has one (shapes without it are those of earlier releases). */
    readonly runTimeout?: number;
    /** Present (`false`) only when the flow writes no run events. */
    readonly events?: false;
    /** Present only when the flow is batched (docs/guide/batching.md). */
    readonly batch?: { readonly maxSize: number; readonly timeout: number };
  };
  /** The steps, in index order. */
  readonly steps: readonly FlowShapeStep[];
}

/**
 * The normalized placement of one concrete flow.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { type Placement, toPlacement } from './placement.ts';
 *
 * const placement: Placement = toPlacement(new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1));
 * console.assert(placement.queueOf('a') === 'f');
 * ```
 */
export interface Placement {
  /** The bare flow. */
  readonly flow: AnyFlow;
  /** How the steps are placed. */
  readonly kind: PlacementKind;
  /** The alias of a deployment, else `null`. */
  readonly alias: string | null;
  /**
   * The physical queue of a step; throws `RouteError` for a step the flow does not have and
   * for a wait or sleep step (it has no queue).
   */
  queueOf(stepSlug: string): string;
  /** The distinct queue names the flow uses, sorted. */
  queues(): string[];
  /** The document SQL compiles or verifies. */
  readonly shape: FlowShape;
}

/**
 * Normalizes a plain flow, step-queued flow, routed flow or deployment into a
 * {@link Placement}. Throws `RouteError` for anything else.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { routeFlow } from './route_flow.ts';
 * import { defineDeployedFlow } from './deployed_flow.ts';
 * import { toPlacement } from './placement.ts';
 *
 * const flow = new Flow({ slug: 'threadsV2' })
 *   .step({ slug: 'fetch' }, () => 1)
 *   .step({ slug: 'classify', dependsOn: ['fetch'] }, () => 2);
 * const deployed = defineDeployedFlow(
 *   routeFlow(flow, { queues: { fetch: 'io', classify: 'classify_threads' } }),
 *   { alias: 'threads' },
 * );
 * const placement = toPlacement(deployed);
 * console.assert(placement.kind === 'routed' && placement.alias === 'threads');
 * console.assert(placement.queues().join() === 'classify_threads,io');
 * ```
 */
export function toPlacement(target: WorkerTarget): Placement {
  if ((target as { kind?: unknown })?.kind === 'deployed') {
    const deployed = target as DeployedFlow;
    return buildPlacement(deployed.placed, deployed.alias);
  }
  return buildPlacement(target as Exclude<WorkerTarget, DeployedFlow>, null);
}

function buildPlacement(
  placed: AnyFlow | StepQueuedFlow | RoutedFlow,
  alias: string | null,
): Placement {
  let flow: AnyFlow;
  let kind: PlacementKind;
  let queueByStep: Map<string, string>;
  if (placed instanceof Flow) {
    flow = placed;
    kind = 'plain';
    const queue = plainQueueName(flow.slug);
    queueByStep = new Map(flow.steps.filter(hasTask).map((step) => [step.slug, queue]));
  } else if (
    (placed?.kind === 'step_queues' || placed?.kind === 'routed') && placed.flow instanceof Flow
  ) {
    flow = placed.flow;
    kind = placed.kind;
    // Re-derive rather than trust the object: a hand-made placement gets the same checks.
    const queues: Readonly<Record<string, string>> = placed.kind === 'routed'
      ? routeFlow(placed.flow, { queues: placed.queues }).queues
      : withStepQueues(placed.flow).queues;
    queueByStep = new Map(
      flow.steps.filter(hasTask).map((step) => [step.slug, queues[step.slug]]),
    );
  } else {
    throw new RouteError(
      `toPlacement(${describeValue(placed)}) is invalid: pass a Flow, withStepQueues(flow), ` +
        'routeFlow(flow, ...) or defineDeployedFlow(...)',
    );
  }
  const distinct = [...new Set(queueByStep.values())].sort();
  const placement: Omit<Placement, 'shape'> = {
    flow,
    kind,
    alias,
    queueOf(stepSlug: string): string {
      const queue = queueByStep.get(stepSlug);
      const step = flow.getStep(stepSlug);
      if (queue === undefined && step !== undefined) {
        throw new RouteError(
          `step "${stepSlug}" of flow "${flow.slug}" is a ${step.kind} step: it has no task ` +
            'and no queue',
        );
      }
      if (queue === undefined) {
        throw new RouteError(
          `step ${describeValue(stepSlug)} is not a step of flow "${flow.slug}": use one of ` +
            (flow.steps.map((step) => `"${step.slug}"`).join(', ') || 'none'),
        );
      }
      return queue;
    },
    queues: () => [...distinct],
  };
  return Object.freeze({ ...placement, shape: flowShape(placement) });
}

/**
 * Builds the deterministic {@link FlowShape} of a placement (a fresh, deeply frozen object).
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { flowShape, toPlacement } from './placement.ts';
 *
 * const flow = new Flow({ slug: 'diamond' }).step({ slug: 'a' }, () => 1);
 * const shape = flowShape(toPlacement(flow));
 * console.log(JSON.stringify(shape));
 * // {"slug":"diamond","placement":"plain","options":{"maxAttempts":3,"baseDelay":1,
 * //  "maxDelay":86400,"timeout":60},"steps":[{"slug":"a","index":0,"kind":"single",
 * //  "dependsOn":[],"queue":"diamond","options":{"maxAttempts":null,"baseDelay":null,
 * //  "maxDelay":null,"timeout":null,"startDelay":0,"if":null,"ifNot":null,"whenUnmet":"skip",
 * //  "whenExhausted":"fail"}}]}
 * ```
 */
export function flowShape(placement: Pick<Placement, 'flow' | 'kind' | 'queueOf'>): FlowShape {
  const { flow } = placement;
  return Object.freeze({
    slug: flow.slug,
    placement: placement.kind,
    options: Object.freeze({
      maxAttempts: flow.options.maxAttempts,
      baseDelay: flow.options.baseDelay,
      maxDelay: flow.options.maxDelay,
      timeout: flow.options.timeout,
      ...(flow.options.runTimeout === undefined ? {} : { runTimeout: flow.options.runTimeout }),
      ...(flow.options.events === false ? { events: false as const } : {}),
      ...(flow.options.batch === undefined ? {} : {
        batch: Object.freeze({
          maxSize: flow.options.batch.maxSize,
          timeout: flow.options.batch.timeout,
        }),
      }),
    }),
    steps: Object.freeze(flow.steps.map((step) =>
      Object.freeze({
        slug: step.slug,
        index: step.index,
        kind: step.kind,
        dependsOn: Object.freeze([...step.dependsOn]),
        queue: hasTask(step) ? placement.queueOf(step.slug) : null,
        options: Object.freeze({
          maxAttempts: step.options.maxAttempts,
          baseDelay: step.options.baseDelay,
          maxDelay: step.options.maxDelay,
          timeout: step.options.timeout,
          startDelay: step.options.startDelay,
          if: step.options.if,
          ifNot: step.options.ifNot,
          whenUnmet: step.options.whenUnmet,
          whenExhausted: step.options.whenExhausted,
          ...(step.wait === null
            ? {}
            : { waitTimeout: step.wait.timeout, onTimeout: step.wait.onTimeout }),
          // Only on a sleep until a time (absent otherwise, as in earlier shapes).
          ...(step.wait?.until ? { sleepUntil: step.wait.until } : {}),
          ...(step.childAlias === undefined ? {} : { childAlias: step.childAlias }),
          // Only when set: a shape without flow control is the shape of earlier releases.
          ...(step.options.rateLimit ? { rateLimit: step.options.rateLimit } : {}),
          ...(step.options.concurrency ? { concurrency: step.options.concurrency } : {}),
        }),
      })
    )),
  });
}

/** Whether a step runs tasks on a queue (not a wait or sleep step). */
export function hasTask(step: { readonly kind: StepKind }): boolean {
  return step.kind === 'single' || step.kind === 'map';
}

/**
 * The union of explicit queue name literals of a routed flow, a deployment of one, or an
 * array or tuple of them — what a shared-queue worker's `queueName` autocompletes from.
 * Plain and step-queued flows contribute `never`: their queues are private and their slugs
 * are not literal types.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import { routeFlow } from './route_flow.ts';
 * import { defineDeployedFlow } from './deployed_flow.ts';
 * import type { QueueNamesOf } from './placement.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1).step({ slug: 'b' }, () => 2);
 * const registry = [
 *   defineDeployedFlow(routeFlow(flow, { queues: { a: 'q1', b: 'q2' } }), { alias: 'f' }),
 * ] as const;
 * const queue: QueueNamesOf<typeof registry> = 'q2'; // 'q1' | 'q2'
 * ```
 */
export type QueueNamesOf<T> = T extends readonly (infer Element)[] ? QueueNamesOf<Element>
  : T extends { readonly kind: 'deployed'; readonly placed: infer P } ? QueueNamesOf<P>
  : T extends { readonly kind: 'routed'; readonly queues: infer Q } ? Q[keyof Q] & string
  : never;
