/**
 * The flow DSL alone, on any runtime: the half of the main entry (`lib/mod.ts`) that loads no
 * worker, platform or database code and touches no runtime global when it is imported. It is
 * not an entry of the Deno package: `lib/mod.ts` re-exports all of it beside the worker, and the
 * npm package's `switchyard` is this module compiled for Node (docs/design/code-layout.md), so a
 * shared registry (`supabase/functions/_shared/registry.ts`) that imports its flows from
 * `switchyard` loads in a Deno Edge Function and in a Node app alike.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow, routeFlow, type WorkerTarget } from './flows.ts';
 *
 * const greetV1 = new Flow<{ name: string }>({ slug: 'greetV1' })
 *   .step({ slug: 'compose' }, (input) => ({ text: `Hello, ${input.name}!` }))
 *   .step({ slug: 'deliver', dependsOn: ['compose'] }, (input) => input.compose.text.length);
 * // In supabase/functions/_shared/registry.ts: `export const registry = [...] as const`.
 * const registry = [
 *   defineDeployedFlow(
 *     routeFlow(greetV1, { queues: { compose: 'greetings', deliver: 'greetings' } }),
 *     { alias: 'greet' },
 *   ),
 * ] as const satisfies readonly WorkerTarget[];
 * console.log(registry.length);
 * ```
 *
 * @module
 */
// What a handler throws to control its retries; every other error class is in `errors`
// (and alone in `lib/errors.ts`, the `./errors` entry).
export { NonRetriable, RetryAfter } from './errors.ts';
// Their base class by name too: `deno doc --lint` of this entry alone needs what they extend.
export { SwitchyardError } from './errors.ts';
export * as errors from './errors.ts';
export {
  type AnyFlow,
  Flow,
  type FlowInput,
  type FlowOutput,
  type HandlerTypes,
  type LeafSlugs,
  signalPayload,
  type SignalPayloadOf,
  type SignalSlugs,
  type StepOutputs,
  type StepSlugs,
  type WaitSlugs,
} from './dsl/flow.ts';
export type {
  ArrayStepSlugs,
  ChildFlowConfig,
  ChildInputCheck,
  ConcurrencyConfig,
  ConcurrencyOption,
  ConditionConfig,
  ContainmentPattern,
  ExactPattern,
  FlowOptions,
  KeyPath,
  MapConfig,
  MapInput,
  MapItem,
  MaySkip,
  NewStepSlug,
  OnTimeout,
  RateLimitOption,
  ResolvedFlowOptions,
  RootMapCheck,
  SeenOutput,
  SignalPayload,
  SleepOptions,
  SleepUntilConfig,
  SleepUntilOption,
  StepConfig,
  StepDefinition,
  StepInput,
  StepKind,
  StepOptions,
  TimePath,
  WaitConfig,
  WaitStepOptions,
  WhenExhausted,
  WhenUnmet,
} from './dsl/flow_types.ts';
export type {
  HandlerEnv,
  HandlerSql,
  HandlerSupabase,
  SqlRow,
  StepContext,
} from './dsl/context.ts';
export type {
  AsciiDigit,
  InvalidSlugMessage,
  LowerAsciiLetter,
  SlugChar,
  SlugCharsOk,
  ValidSlug,
} from './dsl/slugs.ts';
export type {
  InvalidQueueNameMessage,
  QueueNameCharsOk,
  ReservedQueueNameMessage,
  ValidQueueName,
} from './dsl/queue_names.ts';
export type { JsonValue } from './dsl/json.ts';
export { type StepQueuedFlow, withStepQueues } from './dsl/with_step_queues.ts';
export { type RoutedFlow, routeFlow, type RouteQueues } from './dsl/route_flow.ts';
export {
  defineDeployedFlow,
  type DeployedFlow,
  type FlowOf,
  type PlacedFlow,
} from './dsl/deployed_flow.ts';
export type { QueueNamesOf, WorkerTarget } from './dsl/placement.ts';
