/**
 * Every type of the flow DSL, for entries whose signatures name them without importing DSL
 * code (`lib/client.ts`, `lib/ops.ts`); see docs/ARCHITECTURE.md §12 and §14.
 *
 * @example
 * ```ts
 * import type { AliasOf, Registry } from './types.ts';
 *
 * const none: AliasOf<readonly []>[] = [];
 * const registry: Registry = [];
 * console.assert(none.length === 0 && registry.length === 0);
 * ```
 *
 * @module
 */
export type * from './aliases.ts';
export type * from './flow.ts';
export type * from './flow_types.ts';
export type * from './context.ts';
export type * from './slugs.ts';
export type * from './json.ts';
export type * from './queue_names.ts';
export type * from './with_step_queues.ts';
export type * from './route_flow.ts';
export type * from './deployed_flow.ts';
export type * from './placement.ts';
