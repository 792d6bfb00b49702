/**
 * A run's events as server-sent events (docs/design/observability.md): the endpoint that
 * `followRun` of `lib/browser.js` reads, served by the dashboard at
 * `GET /api/runs/<run id>/events` and mountable in an Edge Function of one's own.
 *
 * For each stream it first subscribes to the run's notifications (one `LISTEN` per handler,
 * `RunNotifications`), then reads the events after the cursor (`?after=N`, or the
 * `Last-Event-ID` header a reconnecting client sends) and sends each as
 * `id: <event id>` / `data: <RunEvent as JSON>`, reading again on each notification for the run.
 * Event ids increase within a run in commit order, so the last id sent is a complete cursor: a
 * client that reconnects with it misses nothing and receives nothing twice. The stream ends after
 * the run's own `completed`, `failed` or `cancelled` event (when no later event follows it, as
 * a retried run's do), and after `maxStreamMs` (then the client reconnects from its cursor); a
 * comment line every `keepAliveMs` keeps proxies from closing it. A client that resumes after
 * the end of a run that has ended gets 204 No Content, which stops an `EventSource` too.
 *
 * Events are read a page (100) at a time, and the next page only when the reader has taken
 * what was queued (less than 64 KiB left): a client that reads slowly or not at all holds at
 * most a page and that queue on the server, never the run's whole history. Such a stream whose
 * queue is still full at `maxStreamMs` ends with an error, which closes its connection.
 *
 * Who may follow which run:
 * - the bearer of the queue functions (`authProblem`: the service role key, a secret key, or
 *   `SWITCHYARD_WORKER_SECRET`) follows every run;
 * - a signed-in user's Supabase JWT (`Authorization: Bearer <access token>`), verified with
 *   `jwtSecret` (HS256, the project's JWT secret; default `SWITCHYARD_JWT_SECRET` or
 *   `SUPABASE_JWT_SECRET`) or by `verifyUser`, follows only runs whose `owner` is the token's
 *   `sub`, as the row-level security policy of `run_events` lets them read: another user's run
 *   answers 404 exactly as an unknown run does;
 * - anyone else gets 401.
 *
 * `SWITCHYARD_AUTH=disabled` (or `auth: 'disabled'`) lets anyone follow every run, for local
 * runs only: on Supabase's hosted runtime every request is answered 500 `stream_config` with
 * the rule, as the queue functions answer it.
 *
 * Pages of other origins may follow (CORS, `allowOrigin`, default `*`): a preflight is answered
 * and every answer names the allowed origin; the bearer or token is what authorizes, never a
 * cookie. `lib/mod.ts` exports it, so an installed project's Edge Function imports it as
 * `switchyard`.
 *
 * @module
 */
import { authProblem, disabledAuthRefusal, type EdgeAuth } from './auth.ts';
import type { EnvReader } from '../sql/connection.ts';
import { RunNotifications } from '../sql/notifications.ts';
import { isUuid, runEvents, runOwner } from '../sql/runs.ts';
import { sqlOf, type SqlSource } from '../sql/source.ts';

/**
 * Options of {@linkcode createRunEventStream}.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import type { RunEventStreamOptions } from './run_event_stream.ts';
 *
 * const options: RunEventStreamOptions = {
 *   source: createClient({ connectionString: Deno.env.get('DATABASE_URL') }),
 *   jwtSecret: Deno.env.get('SUPABASE_JWT_SECRET'),
 * };
 * ```
 */
export interface RunEventStreamOptions {
  /** The database, on a direct or session connection (notifications need one). */
  source: SqlSource;
  /** Accepted bearers that follow every run; default the queue functions' secrets from `env`. */
  auth?: EdgeAuth;
  /**
   * The secret signed-in users' JWTs are signed with (HS256); default `SWITCHYARD_JWT_SECRET`,
   * else `SUPABASE_JWT_SECRET`. Without it (and without `verifyUser`) only the bearer follows.
   */
  jwtSecret?: string;
  /**
   * Verifies a user's access token another way (asymmetric signing keys: e.g. supabase-js
   * `auth.getUser(token)`): the user's id, or null to refuse. Used instead of `jwtSecret`.
   */
  verifyUser?: (token: string) => Promise<string | null>;
  /** Reads the environment (default `Deno.env.get`). */
  env?: EnvReader;
  /**
   * Anyone follows every run, no bearer asked (the dashboard's `actions` access, for local runs
   * only, whose reads are open too). Default false.
   */
  open?: boolean;
  /**
   * The `Access-Control-Allow-Origin` of every answer, so that pages of other origins (your
   * site, calling `https://<project>.supabase.co/functions/v1/…`) may follow runs: a preflight
   * (`OPTIONS`) is answered 204 allowing `GET` with the `Authorization`, `Accept`,
   * `Last-Event-ID`, `apikey` and `x-client-info` headers. Default `'*'` (a bearer or a user's
   * token is still required: no cookie is ever read); `null` answers no CORS headers (same-origin
   * pages only), the default with `open`.
   */
  allowOrigin?: string | null;
  /** A comment line this often, in milliseconds (default 10000). */
  keepAliveMs?: number;
  /** A stream ends after this many milliseconds; the client resumes (default 240000). */
  maxStreamMs?: number;
}

/**
 * The stream handler: {@linkcode RunEventStream.stream} answers one request for one run.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { createRunEventStream } from './run_event_stream.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const events = createRunEventStream({ source: client });
 * Deno.serve((request) => events.fetch(request)); // GET /<anything>/runs/<run id>/events
 * ```
 */
export interface RunEventStream {
  /**
   * Answers `GET` for the run named by the path's `runs/<run id>/events` (or `?run=<run id>`).
   */
  fetch(request: Request): Promise<Response>;
  /**
   * Answers `GET` for `runId`: the stream, 204 when the run has ended and nothing follows the
   * cursor, or a JSON error (400, 401, 404, 405; 500 for disabled auth on the hosted runtime); a
   * preflight (`OPTIONS`) 204 unless `allowOrigin` is null.
   */
  stream(request: Request, runId: string): Promise<Response>;
  /** Ends every open stream and stops listening. */
  close(): Promise<void>;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** Events read at a time (a progress event is at most 8 KiB: a page is at most ~800 KiB). */
const PAGE = 100;
/** The stream reads its next page only while less than this is queued for its reader. */
const QUEUE_BYTES = 64 * 1024;
/** The request headers `followRun` (lib/browser.js) and supabase-js send. */
const ALLOWED_HEADERS = 'authorization, accept, last-event-id, apikey, x-client-info, content-type';

function denoEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      ...headers,
    },
  });
}

function base64UrlBytes(text: string): Uint8Array {
  const b64 = text.replaceAll('-', '+').replaceAll('_', '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/**
 * A Supabase access token's user id (`sub`), or why it is refused: an HS256 JWT signed with
 * `secret`, not expired (`exp`), whose `sub` is a UUID and whose `role` is `authenticated`.
 *
 * @example
 * ```ts
 * import { verifyUserJwt } from './run_event_stream.ts';
 *
 * const result = await verifyUserJwt('not.a.jwt', 'secret');
 * console.assert('problem' in result);
 * ```
 */
export async function verifyUserJwt(
  token: string,
  secret: string,
  nowSeconds: number = Date.now() / 1000,
): Promise<{ userId: string } | { problem: string }> {
  const parts = token.split('.');
  if (parts.length !== 3) return { problem: 'the bearer is not a JWT (three dot-separated parts)' };
  let header: { alg?: unknown }, claims: { sub?: unknown; exp?: unknown; role?: unknown };
  try {
    const decode = (p: string) => JSON.parse(new TextDecoder().decode(base64UrlBytes(p)));
    header = decode(parts[0]);
    claims = decode(parts[1]);
  } catch {
    return { problem: 'the bearer is not a JWT (its header or claims are not base64url JSON)' };
  }
  if (header.alg !== 'HS256') {
    return {
      problem: `the JWT's alg ${
        JSON.stringify(header.alg)
      } is not accepted: only HS256 with the JWT secret (pass verifyUser for other keys)`,
    };
  }
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  let signature: Uint8Array;
  try {
    signature = base64UrlBytes(parts[2]);
  } catch {
    return { problem: 'the JWT signature is not base64url' };
  }
  const signed = await crypto.subtle.verify(
    'HMAC',
    key,
    signature as Uint8Array<ArrayBuffer>,
    new TextEncoder().encode(`${parts[0]}.${parts[1]}`),
  );
  if (!signed) return { problem: 'the JWT signature does not match the JWT secret' };
  if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) {
    return { problem: 'the JWT has expired (or has no exp): sign in again' };
  }
  if (claims.role !== 'authenticated' || !isUuid(claims.sub)) {
    return {
      problem: 'the JWT is not a signed-in user\'s (role "authenticated" with a UUID sub)',
    };
  }
  return { userId: claims.sub };
}

/** The cursor: `?after=N`, else `Last-Event-ID`, else 0; null when malformed. */
function cursorOf(request: Request, url: URL): number | null {
  const text = url.searchParams.get('after') ?? request.headers.get('last-event-id') ?? '0';
  if (!/^\d{1,15}$/.test(text)) return null;
  return Number(text);
}

/**
 * Creates the run event stream handler. In an Edge Function of one's own:
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { createRunEventStream } from '../mod.ts';
 *
 * // supabase/functions/run-events/index.ts: GET /functions/v1/run-events/runs/<id>/events
 * const client = createClient({ connectionString: Deno.env.get('SUPABASE_DB_URL') });
 * const events = createRunEventStream({ source: client });
 * Deno.serve((request) => events.fetch(request));
 * ```
 */
export function createRunEventStream(options: RunEventStreamOptions): RunEventStream {
  const env = options.env ?? denoEnv;
  const keepAliveMs = options.keepAliveMs ?? 10_000;
  const maxStreamMs = options.maxStreamMs ?? 240_000;
  const jwtSecret = options.jwtSecret ?? env('SWITCHYARD_JWT_SECRET') ??
    env('SUPABASE_JWT_SECRET');
  const notifications = new RunNotifications(sqlOf(options.source));
  const streams = new Set<(problem?: string) => void>();

  /** Every run (null), one user's runs (their id), or why not. */
  const who = async (request: Request): Promise<{ owner: string | null } | { problem: string }> => {
    const bearerProblem = await authProblem(request, options.auth, env);
    if (bearerProblem === null || options.open) return { owner: null };
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '');
    if (!match) return { problem: bearerProblem };
    if (options.verifyUser) {
      const id = await options.verifyUser(match[1]);
      if (id !== null && isUuid(id)) return { owner: id };
      return { problem: "the bearer is neither an accepted secret nor a signed-in user's token" };
    }
    if (match[1].split('.').length !== 3) return { problem: bearerProblem };
    if (!jwtSecret) {
      return {
        problem: "a signed-in user's JWT is not accepted here: set SWITCHYARD_JWT_SECRET (the " +
          "project's JWT secret) or pass verifyUser; else send the bearer of the queue functions",
      };
    }
    const user = await verifyUserJwt(match[1], jwtSecret);
    return 'userId' in user ? { owner: user.userId } : user;
  };

  const allowOrigin = options.allowOrigin === undefined
    ? (options.open ? null : '*')
    : options.allowOrigin;
  const cors = (response: Response): Response => {
    if (allowOrigin !== null) {
      response.headers.set('access-control-allow-origin', allowOrigin);
      if (allowOrigin !== '*') response.headers.append('vary', 'origin');
    }
    return response;
  };
  /** A browser's preflight of a cross-origin GET with a bearer; null without CORS. */
  const preflight = (request: Request): Response | null =>
    request.method === 'OPTIONS' && allowOrigin !== null
      ? cors(
        new Response(null, {
          status: 204,
          headers: {
            'access-control-allow-methods': 'GET, OPTIONS',
            'access-control-allow-headers': ALLOWED_HEADERS,
            'access-control-max-age': '86400',
          },
        }),
      )
      : null;

  const answer = async (request: Request, runId: string): Promise<Response> => {
    // Disabled auth is for local runs: on the hosted runtime it opens nothing, as the queue
    // functions refuse it (lib/platform/auth.ts).
    const refusal = disabledAuthRefusal(options.auth, env);
    if (refusal !== null) {
      console.error(`run event stream: ${refusal}`);
      return json(500, { error: 'stream_config', message: refusal });
    }
    if (request.method !== 'GET') {
      return json(405, { error: 'method_not_allowed', message: "use GET for a run's events" }, {
        allow: 'GET',
      });
    }
    if (!isUuid(runId)) {
      return json(400, {
        error: 'bad_request',
        parameter: 'run',
        message: `run id ${
          JSON.stringify(String(runId).slice(0, 100))
        } is invalid: use a UUID (8-4-4-4-12 hex digits)`,
      });
    }
    const url = new URL(request.url);
    const after = cursorOf(request, url);
    if (after === null) {
      return json(400, {
        error: 'bad_request',
        parameter: 'after',
        message: `cursor ${
          JSON.stringify(
            (url.searchParams.get('after') ?? request.headers.get('last-event-id'))
              ?.slice(0, 40),
          )
        } is invalid: use an event id (an integer >= 0) in "after" or Last-Event-ID`,
      });
    }
    const caller = await who(request);
    if ('problem' in caller) {
      return json(401, { error: 'unauthorized', message: caller.problem }, {
        'www-authenticate': 'Bearer',
      });
    }
    const run = await runOwner(options.source, runId);
    // Another user's run is answered as an unknown one: its existence is not shown either.
    if (run === null || (caller.owner !== null && run.owner !== caller.owner)) {
      return json(404, { error: 'not_found', message: `unknown run ${runId}` });
    }
    const owner = caller.owner ?? undefined;
    // A run that has ended, followed from its last event or later: nothing more will come.
    // 204 tells an EventSource to stop reconnecting (the status was read before the events,
    // so a last event committed meanwhile is not missed).
    if (TERMINAL.has(run.status)) {
      const more = await runEvents(options.source, runId, { after, limit: 1, owner });
      if (more.length === 0) return new Response(null, { status: 204 });
    }
    let cursor = after;
    let lastEnds = false;
    let dirty = true;
    let closed = false;
    let wake: () => void = () => {};
    let unsubscribe: () => void = () => {};
    let deadline: ReturnType<typeof setTimeout> | undefined;
    let end: (problem?: string) => void = () => {};
    const encoder = new TextEncoder();
    // Pulled, not pushed: the next page of events is read only when the reader has taken what
    // was queued (below QUEUE_BYTES), so a client that stops reading stops the reads too and
    // holds at most one page and the queue, not the run's history.
    const body = new ReadableStream<Uint8Array>({
      start: async (controller) => {
        end = (problem) => {
          if (closed) return;
          closed = true;
          clearTimeout(deadline);
          unsubscribe();
          streams.delete(end);
          wake();
          try {
            if (problem === undefined) controller.close();
            else controller.error(new Error(problem));
          } catch { /* cancelled */ }
        };
        streams.add(end);
        // Subscribed before the first read: a transition committed after that read notifies.
        try {
          unsubscribe = await notifications.subscribe(runId, () => {
            dirty = true;
            wake();
          });
        } catch (e) {
          streams.delete(end);
          closed = true;
          controller.error(e);
          return;
        }
        // At the end of its time the stream closes (the client resumes from its cursor); one
        // whose reader has left its queue full gets an error instead, which ends the
        // connection rather than waiting for a reader that may never come.
        deadline = setTimeout(() => {
          const stalled = (controller.desiredSize ?? 1) <= 0;
          end(
            stalled ? `run event stream ${runId}: the client read nothing for a while` : undefined,
          );
        }, maxStreamMs);
        controller.enqueue(encoder.encode(`retry: 1000\n: following run ${runId}\n\n`));
      },
      pull: async (controller) => {
        try {
          while (!closed) {
            if (dirty) {
              dirty = false;
              const page = await runEvents(options.source, runId, {
                after: cursor,
                limit: PAGE,
                owner,
              });
              if (closed) return;
              for (const e of page) {
                cursor = e.eventId;
                lastEnds = e.stepSlug === null && TERMINAL.has(e.event);
                controller.enqueue(
                  encoder.encode(`id: ${e.eventId}\ndata: ${JSON.stringify(e)}\n\n`),
                );
              }
              // The run's own completed/failed/cancelled event with nothing after it ends the
              // stream (a retried run's later events are read first).
              if (lastEnds && page.length < PAGE) return end();
              if (page.length === PAGE) dirty = true;
              if (page.length > 0) return;
              continue;
            }
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, keepAliveMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = () => {};
            if (!dirty && !closed) {
              controller.enqueue(encoder.encode(': keep-alive\n\n'));
              // Reads again now and then too: a connection that delivers no notifications
              // (PGlite's single session) still moves, if later.
              dirty = true;
              return;
            }
          }
        } catch (e) {
          console.error(`run event stream ${runId}: ${(e as Error)?.message ?? e}`);
          end();
        }
      },
      cancel: () => end(),
    }, new ByteLengthQueuingStrategy({ highWaterMark: QUEUE_BYTES }));
    return new Response(body, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      },
    });
  };

  const stream = async (request: Request, runId: string): Promise<Response> =>
    preflight(request) ?? cors(await answer(request, runId));

  return {
    stream,
    fetch(request: Request): Promise<Response> {
      const allowed = preflight(request);
      if (allowed) return Promise.resolve(allowed);
      const url = new URL(request.url);
      const match = /\/runs\/([^/]+)\/events\/?$/.exec(url.pathname);
      let runId = match ? match[1] : url.searchParams.get('run');
      try {
        if (match) runId = decodeURIComponent(match[1]);
      } catch { /* malformed: refused as an invalid run id */ }
      if (runId === null) {
        return Promise.resolve(cors(json(404, {
          error: 'not_found',
          message: 'follow a run at .../runs/<run id>/events (or ?run=<run id>)',
        })));
      }
      return stream(request, runId);
    },
    async close() {
      for (const finish of [...streams]) finish();
      await notifications.close();
    },
  };
}
