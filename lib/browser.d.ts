/**
 * The types of `browser.js` (docs/design/observability.md), which declares itself with them
 * (`@ts-self-types`), so TypeScript users and the package's type check see exact types.
 *
 * @module
 */

/** One event of a run, as both transports deliver it. */
export interface FollowedEvent {
  /** Increasing within the run, in commit order. */
  eventId: number;
  /** The run. */
  runId: string;
  /** Its concrete flow. */
  flowSlug: string;
  /** The step, or null for an event of the run itself. */
  stepSlug: string | null;
  /** `started`, `completed`, `progress`, ... (docs/design/client.md). */
  event: string;
  /** When, as an ISO timestamp. */
  at: string;
  /** A `progress` event's task. */
  taskIndex?: number;
  /** A `progress` event's JSON. */
  data?: unknown;
}

/** The part of a supabase-js client the Realtime transport uses. */
export interface RealtimeClient {
  /** supabase-js `channel()`. */
  // deno-lint-ignore no-explicit-any
  channel(name: string): any;
  /** supabase-js `removeChannel()`. */
  // deno-lint-ignore no-explicit-any
  removeChannel(channel: any): unknown;
  /** supabase-js `schema()`, for the backlog. */
  // deno-lint-ignore no-explicit-any
  schema(schema: string): any;
}

/**
 * `connecting` (a connection is being made), `live` (caught up and listening), `reconnecting`
 * (the connection was lost; it starts again from the cursor), `ended`.
 */
export type FollowStatus = 'connecting' | 'live' | 'reconnecting' | 'ended';

/** Options of {@linkcode followRun}. */
export interface FollowOptions {
  /** Called once per event, in order. */
  onEvent: (event: FollowedEvent) => void;
  /**
   * The server-sent events endpoint of the run (default `api/runs/<id>/events` relative to the
   * page); the cursor is added as `after`.
   */
  url?: string | ((runId: string) => string);
  /**
   * The bearer or the signed-in user's access token; a function is asked again at every
   * connection (refreshed tokens).
   */
  token?: string | null | (() => string | null | undefined | Promise<string | null | undefined>);
  /** Follow through Supabase Realtime with this client. */
  supabase?: RealtimeClient;
  /** Start after this event id (default 0: from the first). */
  after?: number;
  /** End after the run's last event (default true). */
  untilEnd?: boolean;
  /** Connection changes. */
  onStatus?: (status: FollowStatus, detail?: string) => void;
  /** First wait before reconnecting in milliseconds (default 500; doubled up to 10 s). */
  retryMs?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
}

/** What {@linkcode followRun} returns. */
export interface Following {
  /** Ends the follow (no more events). */
  stop(): void;
  /** The id of the last event delivered. */
  cursor(): number;
  /**
   * Resolves with the cursor when the follow ends; rejects on a refusal (unauthorized, unknown
   * run).
   */
  done: Promise<number>;
}

/** A refusal of the endpoint (401, 403, 404, ...): the follow ends, nothing is retried. */
export class FollowRefusedError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** Creates the error for an HTTP status and what the server said. */
  constructor(status: number, message: string);
}

/**
 * Follows a run: every event once, in order, across reconnects.
 *
 * @example
 * ```ts
 * import { followRun } from './browser.js';
 * const runId = crypto.randomUUID();
 * const following = followRun(runId, {
 *   url: `https://example.com/api/runs/${runId}/events`,
 *   token: 'the access token',
 *   onEvent: (e) => console.log(e.eventId, e.stepSlug, e.event, e.data),
 * });
 * following.stop();
 * ```
 */
export function followRun(runId: string, options: FollowOptions): Following;
