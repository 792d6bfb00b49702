/**
 * Following a run from a browser (docs/design/observability.md), for TypeScript and bundlers:
 * the code is `browser.js` beside this module, plain JavaScript with no imports that a page
 * loads as it is (`<script type="module">`; the dashboard serves it at `browser.js`), with its
 * types in `browser.d.ts`.
 *
 * @example
 * ```ts
 * import { followRun } from './browser.ts';
 *
 * const runId = crypto.randomUUID();
 * const following = followRun(runId, {
 *   url: `http://127.0.0.1:8787/api/runs/${runId}/events`,
 *   token: Deno.env.get('SWITCHYARD_WORKER_SECRET'),
 *   onEvent: (e) => console.log(e.eventId, e.stepSlug ?? 'run', e.event, e.data ?? ''),
 * });
 * following.stop();
 * ```
 *
 * @module
 */
export { FollowRefusedError, followRun } from './browser.js';
export type {
  FollowedEvent,
  Following,
  FollowOptions,
  FollowStatus,
  RealtimeClient,
} from './browser.js';
