/**
 * The one registry of deployed flows. Every queue function imports it
 * (`supabase/functions/<queue>-worker/index.ts`, written by `deno task scaffold-queue`), so each
 * worker knows every flow and version and polls the one queue it was given.
 *
 * Edit this list, then redeploy every queue function:
 *
 * - a new version of an alias goes **after** the old one: the last listed deployment of an
 *   alias is its target, earlier ones stay listed until `switchyard.drain_status()` (or
 *   `deno task drain`) says they are drained;
 * - a new explicit queue needs its function: `deno task scaffold-queue <queue_name>`.
 *
 * Keep the `as const`: it lets `queueName` autocomplete and type-check in every function.
 *
 * @module
 */
import { communityThreadsV1, communityThreadsV2 } from './flows/community_threads.ts';
import { supportTicketsV1 } from './flows/support_tickets.ts';

/**
 * Every deployed flow, oldest version first within each alias.
 *
 * @example
 * ```ts
 * import { EdgeWorker } from 'switchyard';
 * import { registry } from './registry.ts';
 *
 * EdgeWorker.start(registry, { queueName: 'classify_threads', maxConcurrent: 4 });
 * ```
 */
export const registry = [communityThreadsV1, communityThreadsV2, supportTicketsV1] as const;
