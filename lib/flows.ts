/**
 * The flow DSL alone, on any runtime: `Flow`, `routeFlow`, `withStepQueues`,
 * `defineDeployedFlow`, their types (`WorkerTarget`, `Registry`, `AliasOf`, …), the slug, queue
 * name and JSON helpers, and every error class (`RetryAfter`, `NonRetriable`, `RunFailedError`,
 * …). It loads no worker, platform or database code and touches no runtime global when it is
 * imported, so a shared registry (`supabase/functions/_shared/registry.ts`) that imports its
 * flows from here loads in a Deno Edge Function and in a Node app alike. The npm package's
 * `switchyard` entry is this module compiled for Node (docs/ARCHITECTURE.md §12);
 * `lib/mod.ts` re-exports all of it beside the worker.
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
export * from './errors.ts';
export type { FenceFunctionStatus, FenceStatus } from './sql/fence_status.ts';
export * from './dsl/flow.ts';
export type * from './dsl/flow_types.ts';
export type * from './dsl/context.ts';
export * from './dsl/slugs.ts';
export * from './dsl/json.ts';
export * from './dsl/queue_names.ts';
export * from './dsl/with_step_queues.ts';
export * from './dsl/route_flow.ts';
export * from './dsl/deployed_flow.ts';
export * from './dsl/placement.ts';
export type * from './dsl/aliases.ts';
