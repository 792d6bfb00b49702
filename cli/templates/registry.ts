/**
 * The one registry of deployed flows, written by `npx switchyard install` (which never
 * overwrites it). Every queue function imports it (`supabase/functions/<queue>-worker/index.ts`,
 * written by `npx switchyard scaffold-queue`), so each worker knows every flow and version and
 * polls the one queue it was given.
 *
 * Edit this list, then redeploy every queue function:
 *
 * - route every step of a flow onto an explicit queue with `routeFlow`, and give callers a
 *   stable name with `defineDeployedFlow(..., { alias })`;
 * - a new version of an alias goes **after** the old one: the last listed deployment of an
 *   alias is its target, earlier ones stay listed until `switchyard.drain_status()` says they
 *   are drained;
 * - a new explicit queue needs its function: `npx switchyard scaffold-queue <queue_name>`;
 * - after an edit: `npx switchyard compile`, so the flows start right after the push.
 *
 * Keep the `as const`: it lets `queueName` autocomplete and type-check in every function.
 *
 * @module
 */
import type { WorkerTarget } from 'switchyard';

/**
 * Every deployed flow, oldest version first within each alias.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';
 *
 * const greetV1 = new Flow<{ name: string }>({ slug: 'greetV1' })
 *   .step({ slug: 'compose' }, (input) => ({ text: `Hello, ${input.name}!` }))
 *   .step({ slug: 'deliver', dependsOn: ['compose'] }, (input) => input.compose.text.length);
 *
 * // In this file: `export const registry = [...] as const;`
 * const registry = [
 *   defineDeployedFlow(
 *     routeFlow(greetV1, { queues: { compose: 'greetings', deliver: 'greetings' } }),
 *     { alias: 'greet' },
 *   ),
 * ] as const;
 * console.log(registry.length);
 * ```
 */
export const registry = [] as const satisfies readonly WorkerTarget[];
