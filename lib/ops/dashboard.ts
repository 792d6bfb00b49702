/**
 * The dashboard: one HTML page and the JSON API behind it, as a fetch handler for
 * `Deno.serve` (`deno task dashboard`, and `/dashboard` of `deno task serve`). It reads the
 * SQL functions the commands use (`drain_status`, `fence_status`, and the read-only
 * `dashboard_*` functions) and `switchyard.run_events`, and acts only through
 * `pause_function`, `resume_function`, `cancel_run` and `retry_run`.
 *
 * Access. Actions need the queue functions' bearer (`SUPABASE_SERVICE_ROLE_KEY`, a key of
 * `SUPABASE_SECRET_KEYS` or `SWITCHYARD_WORKER_SECRET`; `SWITCHYARD_AUTH=disabled` turns the
 * check off for local runs; docs/design/supabase.md Auth). Without it the page is read-only. With
 * `SWITCHYARD_DASHBOARD_AUTH=required` (or `access: 'required'`; the default on Supabase's hosted
 * runtime, where disabled auth is refused) every API request, reads included, needs the bearer
 * too; the page itself is static and shows nothing without it.
 *
 * | method | path (under `basePath`)        | answers                                                      |
 * | ------ | ------------------------------ | ------------------------------------------------------------ |
 * | GET    | `/`                            | the page                                                     |
 * | GET    | `/browser.js`                  | `lib/browser.js` (`followRun`), for pages of one's own        |
 * | GET    | `/api/overview`                | {@linkcode DashboardOverview} (`runs`, `status`, `queue`, `minutes`) |
 * | GET    | `/api/runs`                    | `{ runs }` (`limit` 1-200, `status`, `queue`)                 |
 * | GET    | `/api/runs/<run id>`           | {@linkcode DashboardRunDetail} (latest 200 events, latest progress); 404 for an unknown run |
 * | GET    | `/api/runs/<run id>/events`    | the run's events as server-sent events (`lib/platform/run_event_stream.ts`) |
 * | GET    | `/metrics`                     | Prometheus text ({@linkcode prometheusText}; `window` 1-86400 s, default 60); always needs the bearer |
 * | POST   | `/api/functions/<name>/pause`  | `{ result }`; JSON body `{ "reason"?: string }`               |
 * | POST   | `/api/functions/<name>/resume` | `{ result }`                                                 |
 * | POST   | `/api/runs/<run id>/cancel`    | `{ result }` ({@linkcode CancelResult}); JSON body `{ "reason"?: string }` |
 * | POST   | `/api/runs/<run id>/retry`     | `{ result }` ({@linkcode RetryResult})                        |
 * | POST   | `/api/runs/<run id>/signal`    | `{ result }` ({@linkcode SignalResult}); JSON body `{ "step": string, "payload"?: JSON, "key"?: string }` |
 * | POST   | `/api/runs/<run id>/rerun`     | `{ result }` (`rerun_run`, docs/design/rerun.md);
 * JSON body `{ "fromStep": string, "inputPatch"?: object }` |
 * | POST   | `/api/runs/<run id>/fork`      | `{ result }` (`fork_run`); JSON body `{ "fromStep": string, "input"?: JSON, "toFlow"?: string }` |
 * | POST   | `/api/runs/<run id>/move`      | `{ result }` (`move_run`); JSON body `{ "toFlow": string }`  |
 * | POST   | `/api/runs/<run id>/pause`     | `{ result }` (`pause_run`); JSON body `{ "reason"?: string }` |
 * | POST   | `/api/runs/<run id>/resume`    | `{ result }` (`resume_run`)                                   |
 *
 * Errors are JSON `{ error, message }`: 400 `bad_request` (with `parameter`, naming it and
 * its rule), 401 `unauthorized`, 403 `cross_origin`, 404 `not_found`, 405
 * `method_not_allowed`, 409 `conflict` (with `rule` and the run's `status`: cancelling a run
 * that is not started, `run_not_started`, or retrying one that is not failed,
 * `run_not_failed`; a signal the SQL core refuses for the state of the run or step, such as
 * `step_already_signalled`), 422 `signal_refused` (with `rule`: a signal for a step that is
 * not a wait step, a payload over the output limit), 422 `action_refused` (with `rule`, and
 * `problems` for `version_incompatible`: a rerun, fork or move the SQL core refuses, such as a
 * step the flow lacks or a version it cannot prove compatible), 413 `body_too_large`, 415 `unsupported_media_type` (actions take
 * `application/json`, which a cross-site form cannot send), 421 `misdirected_request` (a host
 * the dashboard is not served as), 503 `database` (the database's own words only with the
 * bearer, or with the check disabled).
 *
 * Hosts. Every request names its host (`Host`, or an absolute-form target): only the names
 * the dashboard is served as are answered, so a page of another site whose name resolves to
 * this address (DNS rebinding) reaches nothing. By default: `127.0.0.1`, `localhost`, `[::1]`,
 * the host of `SUPABASE_URL` and {@linkcode DashboardOptions.hostnames} (`deno task dashboard
 * --hostname H` adds `H`); `SWITCHYARD_DASHBOARD_HOSTS` (host names separated by commas) adds
 * more. Actions come only from the origin of an accepted host.
 *
 * Bodies. An action's body is at most {@linkcode MAX_BODY_BYTES} bytes: a larger
 * `content-length` is refused before reading, and reading stops there.
 *
 * Cancelling a run that is already cancelled answers 200 with `changed: false` and keeps the
 * first reason. A reason (pause, cancel) is at most 1000 characters, without NUL; without one
 * the dashboard gives `paused from the dashboard` or `from the dashboard` (a cancelled run's
 * error reads `cancelled: from the dashboard`).
 *
 * @module
 */
import {
  InvalidInputError,
  OperationError,
  RunNotFoundError,
  SwitchyardError,
  UnknownFunctionError,
} from '../errors.ts';
import { assertJson } from '../dsl/json.ts';
import { isValidQueueName, QUEUE_NAME_RULE } from '../dsl/queue_names.ts';
import { authProblem, disabledAuthRefusal, type EdgeAuth } from '../platform/auth.ts';
import { hostedRuntimeSignal } from '../platform/platform.ts';
import type { EnvReader } from '../sql/connection.ts';
import {
  type DashboardSnapshot,
  dashboardSnapshot,
  recentRuns,
  type RunOverview,
} from '../sql/dashboard_queries.ts';
import {
  functionState,
  MAX_REASON_CHARS,
  pauseFunction,
  type PauseResult,
  resumeFunction,
  type ResumeResult,
} from '../sql/function_state.ts';
import {
  type CancelResult,
  cancelRun,
  isUuid,
  latestProgress,
  MAX_SIGNAL_KEY_CHARS,
  type RetryResult,
  retryRun,
  type RunEvent,
  runEvents,
  type SignalResult,
  signalRun,
} from '../sql/runs.ts';
import { MAX_METRICS_WINDOW_SECONDS, metrics } from '../sql/metrics.ts';
import { metricSnapshot } from '../sql/metric_snapshot.ts';
import { forkRun, moveRun, pauseRun, rerunRun, resumeRun } from '../sql/run_controls.ts';
import type { SqlSource } from '../sql/source.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from '../sql/windows.ts';
import { DASHBOARD_PAGE } from './dashboard_page.ts';
import { createRunEventStream, type RunEventStream } from '../platform/run_event_stream.ts';
import { PROMETHEUS_CONTENT_TYPE, prometheusText } from './prometheus.ts';

/**
 * Who may read: `actions` (the default locally) lets anyone read and needs the bearer for
 * actions; `required` (the default on the hosted runtime) needs the bearer for every API
 * request.
 *
 * @example
 * ```ts
 * import type { DashboardAccess } from './dashboard.ts';
 * const access: DashboardAccess = 'required';
 * ```
 */
export type DashboardAccess = 'actions' | 'required';

/**
 * The environment variable that sets {@linkcode DashboardAccess}.
 *
 * @example
 * ```ts
 * import { DASHBOARD_AUTH_ENV } from './dashboard.ts';
 * console.log(Deno.env.get(DASHBOARD_AUTH_ENV) ?? 'actions');
 * ```
 */
export const DASHBOARD_AUTH_ENV: string = 'SWITCHYARD_DASHBOARD_AUTH';

/**
 * The environment variable with more host names the dashboard answers as (comma-separated).
 *
 * @example
 * ```ts
 * import { DASHBOARD_HOSTS_ENV } from './dashboard.ts';
 * console.log(Deno.env.get(DASHBOARD_HOSTS_ENV) ?? '(only the defaults)');
 * ```
 */
export const DASHBOARD_HOSTS_ENV: string = 'SWITCHYARD_DASHBOARD_HOSTS';

/**
 * The largest body an action takes, in bytes (a reason of 1000 characters fits many times).
 *
 * @example
 * ```ts
 * import { MAX_BODY_BYTES } from './dashboard.ts';
 * console.assert(MAX_BODY_BYTES === 16384);
 * ```
 */
export const MAX_BODY_BYTES = 16384;

/**
 * Options of {@linkcode createDashboard}.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import type { DashboardOptions } from './dashboard.ts';
 * const options: DashboardOptions = { source: createClient({ connectionString: Deno.env.get('DATABASE_URL') }), basePath: '/dashboard' };
 * ```
 */
export interface DashboardOptions {
  /** The database: a postgres.js client or the client of `createClient()`. */
  source: SqlSource;
  /** Accepted bearers; default the queue functions' secrets from `env`. */
  auth?: EdgeAuth;
  /** Who may read; default `SWITCHYARD_DASHBOARD_AUTH`, else `actions`. */
  access?: DashboardAccess;
  /** Reads the environment (default `Deno.env.get`). */
  env?: EnvReader;
  /** Where the page lives, e.g. `/dashboard` (default: the root). */
  basePath?: string;
  /**
   * More host names it answers as, besides `127.0.0.1`, `localhost`, `[::1]`, the host of
   * `SUPABASE_URL` and those of `SWITCHYARD_DASHBOARD_HOSTS` (e.g. the `--hostname` it listens
   * on). A request for any other host is answered 421 (DNS rebinding).
   */
  hostnames?: readonly string[];
  /** How often the page refreshes itself, in milliseconds (default 3000). */
  refreshMs?: number;
  /**
   * Seconds without a heartbeat after which a worker no longer counts as live (default 15): it
   * widens each worker's own window, never narrows it (docs/design/versions.md).
   */
  heartbeatWindowSeconds?: number;
  /**
   * The secret of signed-in users' JWTs (HS256) for `GET /api/runs/<id>/events` with `required`
   * access; default `SWITCHYARD_JWT_SECRET`, else `SUPABASE_JWT_SECRET`.
   */
  jwtSecret?: string;
}

/**
 * What `GET /api/overview` answers: the snapshot, plus what this request may do.
 *
 * @example
 * ```ts
 * import type { DashboardOverview } from './dashboard.ts';
 * const show = (o: DashboardOverview) => console.log(o.access.authorized ? 'actions' : 'read-only');
 * ```
 */
export interface DashboardOverview extends DashboardSnapshot {
  /** How often the page refreshes, in milliseconds. */
  refreshMs: number;
  /** The caller's heartbeat window behind every `live` flag, or each worker's own when larger. */
  heartbeatWindowSeconds: number;
  /** The throughput window in minutes. */
  minutes: number;
  /** What the request may do. */
  access: {
    /** The configured access. */
    mode: DashboardAccess;
    /** Whether the request carried an accepted bearer (or the check is disabled). */
    authorized: boolean;
    /** Why not, when not. */
    problem: string | null;
    /** The actions the request may take. */
    actions: DashboardAction[];
  };
}

/**
 * An action of the dashboard: pause or resume a queue function, cancel or retry a run, signal
 * a run's wait step.
 *
 * @example
 * ```ts
 * import type { DashboardAction } from './dashboard.ts';
 * const onRuns: DashboardAction[] = ['cancel', 'retry'];
 * ```
 */
export type DashboardAction =
  | 'pause'
  | 'resume'
  | 'cancel'
  | 'retry'
  | 'signal'
  | 'rerun'
  | 'fork'
  | 'move';

/**
 * What `GET /api/runs/<run id>` answers: the run with its steps, and its latest events.
 *
 * @example
 * ```ts
 * import type { DashboardRunDetail } from './dashboard.ts';
 * const last = (d: DashboardRunDetail) => d.events.at(-1)?.event;
 * ```
 */
export interface DashboardRunDetail {
  /** The run, as in the overview's `runs`. */
  run: RunOverview;
  /** Its latest events (at most 200), oldest first. */
  events: RunEvent[];
  /** Whether it has earlier events than these. */
  eventsTruncated: boolean;
  /** The latest `progress` event of each of its tasks that reported any, in event order. */
  progress: RunEvent[];
}

/**
 * The dashboard's request handler.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { createDashboard } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const dashboard: ReturnType<typeof createDashboard> = createDashboard({ source: client });
 * const response = await dashboard.fetch(new Request('http://localhost/api/overview'));
 * console.log(response.status);
 * await client.close();
 * ```
 */
export interface Dashboard {
  /** Answers one request (the page, the API, or 404 outside `basePath`). */
  fetch(request: Request): Promise<Response>;
  /** The configured access. */
  readonly access: DashboardAccess;
  /** Ends the open run event streams and their `LISTEN`. */
  close(): Promise<void>;
}

function denoEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** A refused parameter: 400 naming it and its rule. */
class BadRequest extends Error {
  constructor(readonly parameter: string, message: string) {
    super(message);
  }
}

/** A body over {@linkcode MAX_BODY_BYTES}: 413. */
class BodyTooLarge extends Error {}

/** The body as text, refused (413) past `max` bytes by its declared and its actual size. */
async function boundedText(request: Request, max: number): Promise<string> {
  const declared = request.headers.get('content-length');
  const tooLarge = (size: string) =>
    new BodyTooLarge(
      `the body is ${size}, over the limit of ${max} bytes: send {"reason": "..."} or {}`,
    );
  if (declared !== null && (!/^\d+$/.test(declared) || Number(declared) > max)) {
    throw tooLarge(
      /^\d+$/.test(declared)
        ? `${declared} bytes`
        : `of length ${JSON.stringify(declared.slice(0, 40))}`,
    );
  }
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge(`more than ${max} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all);
  } catch {
    // Decoded leniently it would arrive with replacement characters, as if sent that way.
    throw new BadRequest('body', 'the body is not UTF-8: send JSON encoded as UTF-8');
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

const RUN_STATUSES = ['started', 'completed', 'failed', 'cancelled'] as const;
const FUNCTION_NAME = /^[a-z][a-z0-9_-]*$/;
const RUN_EVENTS = 200;
const ACTIONS: DashboardAction[] = [
  'pause',
  'resume',
  'cancel',
  'retry',
  'signal',
  'rerun',
  'fork',
  'move',
];

function checkParams(params: URLSearchParams, allowed: readonly string[]): void {
  for (const key of new Set(params.keys())) {
    if (!allowed.includes(key)) {
      throw new BadRequest(
        key,
        `parameter "${key}" is unknown: use ${allowed.map((a) => `"${a}"`).join(', ')}`,
      );
    }
    if (params.getAll(key).length > 1) {
      throw new BadRequest(key, `parameter "${key}" is given more than once: give it once`);
    }
  }
}

function intParam(
  params: URLSearchParams,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const text = params.get(name);
  if (text === null) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) {
    throw new BadRequest(
      name,
      `parameter "${name}" ${
        JSON.stringify(text)
      } is invalid: use an integer from ${min} to ${max}`,
    );
  }
  return n;
}

function statusParam(params: URLSearchParams): RunOverview['status'] | undefined {
  const text = params.get('status');
  if (text === null || text === '') return undefined;
  if (!(RUN_STATUSES as readonly string[]).includes(text)) {
    throw new BadRequest(
      'status',
      `parameter "status" ${JSON.stringify(text)} is invalid: use ${
        RUN_STATUSES.map((s) => `"${s}"`).join(', ')
      } or leave it out`,
    );
  }
  return text as RunOverview['status'];
}

function queueParam(params: URLSearchParams): string | undefined {
  const text = params.get('queue');
  if (text === null || text === '') return undefined;
  if (!isValidQueueName(text)) {
    throw new BadRequest(
      'queue',
      `parameter "queue" ${JSON.stringify(text)} is invalid: ${QUEUE_NAME_RULE}`,
    );
  }
  return text;
}

async function jsonBody(request: Request, allowed: readonly string[]) {
  const type = request.headers.get('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    return json(415, {
      error: 'unsupported_media_type',
      message: `content-type ${
        JSON.stringify(type || '(none)')
      } is refused: send "application/json"`,
    });
  }
  const text = await boundedText(request, MAX_BODY_BYTES);
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BadRequest('body', 'the body is not JSON: send a JSON object');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequest('body', 'the body is invalid: send a JSON object');
  }
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) {
      throw new BadRequest(
        key,
        `field "${key}" is unknown: ${
          allowed.length ? `use ${allowed.map((a) => `"${a}"`).join(', ')}` : 'send {}'
        }`,
      );
    }
  }
  return body as Record<string, unknown>;
}

/** Text PostgreSQL can store: no U+0000, no lone UTF-16 surrogate. */
function storable(text: string): boolean {
  return !text.includes('\0') && text.isWellFormed();
}

/** The body's `reason`, trimmed, or `fallback` without one. */
function reasonField(body: Record<string, unknown>, fallback: string): string {
  if (body.reason === undefined) return fallback;
  if (typeof body.reason !== 'string' || body.reason.trim() === '') {
    throw new BadRequest(
      'reason',
      'field "reason" is invalid: use a non-empty string, or leave it out',
    );
  }
  if (body.reason.includes('\0')) {
    throw new BadRequest(
      'reason',
      'field "reason" is invalid: it contains a NUL character (\\u0000), which PostgreSQL ' +
        'text cannot hold; leave it out',
    );
  }
  if (body.reason.length > MAX_REASON_CHARS) {
    throw new BadRequest(
      'reason',
      `field "reason" is invalid: use at most ${MAX_REASON_CHARS} characters (got ${body.reason.length})`,
    );
  }
  return body.reason.trim();
}

/** A path segment decoded, or as it is when its percent-encoding is malformed (then refused). */
function decodeSegment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function runIdParam(text: string): string {
  const id = decodeSegment(text);
  if (!isUuid(id)) {
    throw new BadRequest(
      'run',
      `run id ${JSON.stringify(id)} is invalid: use a UUID (8-4-4-4-12 hex digits)`,
    );
  }
  return id;
}

/**
 * The answer to what a request threw. The database's own words (a connection refused, a role
 * that does not exist) go only to a caller the bearer check accepted (`authorized`); anyone
 * else learns that the database failed and where to look.
 */
function errorResponse(e: unknown, authorized: boolean): Response {
  if (e instanceof BadRequest) {
    return json(400, { error: 'bad_request', parameter: e.parameter, message: e.message });
  }
  if (e instanceof BodyTooLarge) {
    return json(413, { error: 'body_too_large', message: e.message }, { connection: 'close' });
  }
  if (e instanceof UnknownFunctionError) {
    return json(404, { error: 'not_found', message: e.message });
  }
  // The refusals of cancel_run and retry_run (docs/design/errors.md): an unknown run, and a
  // run in a status the action does not apply to.
  if (e instanceof RunNotFoundError) {
    return json(404, { error: 'not_found', message: e.message });
  }
  if (e instanceof OperationError && e.code === '55000') {
    return json(409, {
      error: 'conflict',
      rule: e.detail.rule,
      status: e.detail.status,
      message: e.message,
    });
  }
  if (!authorized) {
    return json(503, {
      error: 'database',
      message: 'the database refused or is unreachable: its words are shown with the bearer ' +
        '(and in the log of the process serving the dashboard)',
    });
  }
  const message = e instanceof Error ? e.message : String(e);
  return json(503, {
    error: 'database',
    message: e instanceof SwitchyardError
      ? message
      : `the database refused or is unreachable: ${message}`,
  });
}

/** A host name as compared: lower-case, IPv6 in brackets, no trailing dot or port. */
function hostKey(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  if ((h.match(/:/g) ?? []).length > 1) return `[${h}]`; // a bare IPv6 address
  h = h.replace(/:\d*$/, '');
  return h.replace(/\.$/, '');
}

/** The host of `Host: name[:port]`, or null when the header is missing or malformed. */
function hostHeader(value: string | null): string | null {
  if (value === null || value === '' || /[\s/@?#\\]/.test(value)) return null;
  return hostKey(value);
}

/**
 * The API's routes with a parameter, matched on the path after the base with `URLPattern` (the
 * web standard; each `:name` is one path segment, still percent-encoded). Fixed paths
 * (`/api/overview`, `/api/runs`) are compared as strings.
 */
const ROUTES = {
  functionAction: new URLPattern({ pathname: '/api/functions/:name/:action(pause|resume)' }),
  runAction: new URLPattern({
    pathname: '/api/runs/:id/:action(cancel|retry|signal|rerun|fork|move|pause|resume)',
  }),
  run: new URLPattern({ pathname: '/api/runs/:id' }),
};

/** The run controls of docs/design/rerun.md, each with the fields of its JSON body. */
const CONTROLS: ReadonlyMap<string, readonly string[]> = new Map([
  ['rerun', ['fromStep', 'inputPatch']],
  ['fork', ['fromStep', 'input', 'toFlow']],
  ['move', ['toFlow']],
  ['pause', ['reason']],
  ['resume', []],
]);

function textField(body: Record<string, unknown>, name: string, required: boolean) {
  const value = body[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > 200 || !storable(value)) {
    throw new BadRequest(
      name,
      `field ${JSON.stringify(name)} is invalid: use a non-empty string of at most 200 characters`,
    );
  }
  return value;
}

/** A rerun, fork, move, pause or resume of one run, recorded as done from the dashboard. */
async function runControl(
  source: SqlSource,
  id: string,
  action: string,
  request: Request,
  authorized: boolean,
): Promise<Response> {
  const body = await jsonBody(request, CONTROLS.get(action)!);
  if (body instanceof Response) return body;
  const actor = 'dashboard';
  try {
    let result: unknown;
    if (action === 'rerun') {
      const fromStep = textField(body, 'fromStep', true)!;
      const patch = body.inputPatch;
      if (
        patch !== undefined && (patch === null || typeof patch !== 'object' || Array.isArray(patch))
      ) {
        throw new BadRequest('inputPatch', 'field "inputPatch" is invalid: use a JSON object');
      }
      result = await rerunRun(source, id, fromStep, {
        actor,
        ...(patch === undefined ? {} : { inputPatch: patch as Record<string, unknown> }),
      });
    } else if (action === 'fork') {
      const fromStep = textField(body, 'fromStep', true)!;
      const toFlow = textField(body, 'toFlow', false);
      result = await forkRun(source, id, fromStep, {
        actor,
        ...(body.input === undefined ? {} : { input: body.input }),
        ...(toFlow === undefined ? {} : { toFlow }),
      });
    } else if (action === 'move') {
      result = await moveRun(source, id, textField(body, 'toFlow', true)!, { actor });
    } else if (action === 'pause') {
      result = await pauseRun(source, id, {
        actor,
        reason: reasonField(body, 'paused from the dashboard'),
      });
    } else {
      result = await resumeRun(source, id, { actor });
    }
    return json(200, { result });
  } catch (e) {
    if (e instanceof OperationError && e.code === '22023' && !(e instanceof RunNotFoundError)) {
      return json(422, {
        error: 'action_refused',
        rule: e.detail.rule,
        ...(Array.isArray(e.detail.problems) ? { problems: e.detail.problems } : {}),
        message: e.message,
      });
    }
    return errorResponse(e, authorized);
  }
}

/**
 * Creates the dashboard handler. Throws when `SWITCHYARD_DASHBOARD_AUTH` holds neither
 * `actions` nor `required`, and on Supabase's hosted runtime (`SB_REGION` or
 * `DENO_DEPLOYMENT_ID` set) when auth is disabled; there the default access is `required`.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { createDashboard } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const dashboard = createDashboard({ source: client, basePath: '/dashboard' });
 * const server = Deno.serve({ port: 8080 }, dashboard.fetch);
 * // open http://localhost:8080/dashboard/
 * await server.shutdown();
 * await client.close();
 * ```
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const env = options.env ?? denoEnv;
  const refusal = disabledAuthRefusal(options.auth, env);
  if (refusal) throw new SwitchyardError(`the dashboard: ${refusal}`);
  // On the hosted runtime reads need the bearer too unless the operator opens them.
  const hosted = hostedRuntimeSignal({ env }) !== null;
  const configured = options.access ??
    (env(DASHBOARD_AUTH_ENV) || (hosted ? 'required' : 'actions'));
  if (configured !== 'actions' && configured !== 'required') {
    throw new SwitchyardError(
      `${DASHBOARD_AUTH_ENV} ${
        JSON.stringify(configured)
      } is invalid: use "actions" (default: reads open, actions need the bearer) or "required" ` +
        '(every request needs the bearer)',
    );
  }
  const access: DashboardAccess = configured;
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  const refreshMs = options.refreshMs ?? 3000;
  const heartbeatWindowSeconds = options.heartbeatWindowSeconds ?? DEFAULT_HEARTBEAT_WINDOW_SECONDS;
  const source = options.source;
  const page = DASHBOARD_PAGE.replace('__BASE_PATH__', JSON.stringify(base));
  const hosts = new Set(['127.0.0.1', 'localhost', '[::1]']);
  const supabaseUrl = env('SUPABASE_URL');
  if (supabaseUrl) {
    try {
      hosts.add(hostKey(new URL(supabaseUrl).host));
    } catch { /* not a URL: nothing to add */ }
  }
  for (
    const name of [...(options.hostnames ?? []), ...(env(DASHBOARD_HOSTS_ENV) ?? '').split(',')]
  ) {
    // 0.0.0.0 and :: are where it listens, never a name a browser asks for.
    if (name.trim() !== '' && !['0.0.0.0', '::', '[::]'].includes(name.trim())) {
      hosts.add(hostKey(name));
    }
  }
  const hostList = [...hosts].join(', ');
  /** Why this request's host is refused, or null: `Host` and the target must both be ours. */
  const hostProblem = (request: Request, url: URL): string | null => {
    const header = hostHeader(request.headers.get('host'));
    const target = hostKey(url.host);
    if (header !== null && !hosts.has(header)) {
      return `host ${
        JSON.stringify(header.slice(0, 100))
      } is not one this dashboard is served as (${hostList}): ` +
        `open it at one of them, or add the name to ${DASHBOARD_HOSTS_ENV}`;
    }
    if (!hosts.has(target)) {
      return `host ${
        JSON.stringify(target.slice(0, 100))
      } is not one this dashboard is served as (${hostList}): ` +
        `open it at one of them, or add the name to ${DASHBOARD_HOSTS_ENV}`;
    }
    return null;
  };
  /** Whether an Origin header names an accepted host (any scheme and port: the host is ours). */
  const ownOrigin = (origin: string, url: URL): boolean => {
    try {
      const o = new URL(origin);
      return o.protocol === url.protocol && hosts.has(hostKey(o.host)) && o.port === url.port;
    } catch {
      return false;
    }
  };

  // lib/browser.js as it is, for pages of one's own (`import { followRun } from '<base>/browser.js'`).
  let browserJs: Promise<string | null> | undefined;
  const browserModule = async (): Promise<Response> => {
    browserJs ??= globalThis.fetch(new URL('../browser.js', import.meta.url))
      .then((r) => r.ok ? r.text() : null)
      .catch(() => null);
    const text = await browserJs;
    if (text === null) {
      return json(404, {
        error: 'not_found',
        message: 'lib/browser.js is not beside this module here: import it from the kit instead',
      });
    }
    return new Response(text, {
      headers: {
        'content-type': 'text/javascript; charset=utf-8',
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      },
    });
  };

  const unauthorized = (problem: string) =>
    json(401, { error: 'unauthorized', message: problem }, { 'www-authenticate': 'Bearer' });

  // A run's events as server-sent events (docs/design/observability.md), for the page's timeline
  // and lib/browser.js: with `actions` access open like the other reads; with `required`, the
  // bearer follows every run and a signed-in user's JWT only their own.
  let eventStream: RunEventStream | undefined;
  const followRun = (request: Request, runId: string) => {
    eventStream ??= createRunEventStream({
      source,
      auth: options.auth,
      env,
      jwtSecret: options.jwtSecret,
      open: access === 'actions',
      allowOrigin: null, // the page's own origin only, as every other answer of the dashboard
    });
    return eventStream.stream(request, runId);
  };

  const api = async (request: Request, path: string, url: URL): Promise<Response> => {
    const follow = /^\/api\/runs\/([^/]+)\/events$/.exec(path);
    if (follow) return await followRun(request, decodeSegment(follow[1]));
    const problem = await authProblem(request, options.auth, env);
    if (access === 'required' && problem !== null) return unauthorized(problem);
    const params = url.searchParams;
    const fn = ROUTES.functionAction.exec({ pathname: path })?.pathname.groups;
    const runAction = ROUTES.runAction.exec({ pathname: path })?.pathname.groups;
    if (fn || runAction) {
      // Every action: POST, from the page's origin, with the bearer.
      if (request.method !== 'POST') {
        return json(405, { error: 'method_not_allowed', message: `use POST for ${path}` }, {
          allow: 'POST',
        });
      }
      const origin = request.headers.get('origin');
      if (origin !== null && !ownOrigin(origin, url)) {
        return json(403, {
          error: 'cross_origin',
          message: `origin ${JSON.stringify(origin)} is refused: actions come from the page itself`,
        });
      }
      if (problem !== null) return unauthorized(problem);
      checkParams(params, []);
    }
    if (runAction) {
      const id = runIdParam(runAction.id!);
      if (runAction.action === 'signal') {
        const body = await jsonBody(request, ['step', 'payload', 'key']);
        if (body instanceof Response) return body;
        if (
          typeof body.step !== 'string' || body.step === '' || !storable(body.step) ||
          body.step.length > 200
        ) {
          throw new BadRequest('step', 'field "step" is invalid: name a wait step of the run');
        }
        if (
          body.key !== undefined &&
          (typeof body.key !== 'string' || body.key.trim() === '' || !storable(body.key) ||
            body.key.length > MAX_SIGNAL_KEY_CHARS)
        ) {
          throw new BadRequest(
            'key',
            `field "key" is invalid: use a string of 1 to ${MAX_SIGNAL_KEY_CHARS} characters ` +
              'without U+0000 or lone surrogates, or leave it out',
          );
        }
        try {
          assertJson(body.payload ?? null, 'payload');
        } catch (e) {
          if (e instanceof InvalidInputError) throw new BadRequest('payload', e.message);
          throw e;
        }
        try {
          const result: SignalResult = await signalRun(
            source,
            id,
            body.step,
            body.payload ?? null,
            {
              key: body.key as string | undefined,
            },
          );
          return json(200, { result });
        } catch (e) {
          // The SQL core's refusals of the signal itself (docs/design/waits.md).
          if (
            e instanceof OperationError && e.code === '22023' && !(e instanceof RunNotFoundError)
          ) {
            return json(422, { error: 'signal_refused', rule: e.detail.rule, message: e.message });
          }
          throw e;
        }
      }
      if (CONTROLS.has(runAction.action!)) {
        return await runControl(source, id, runAction.action!, request, true);
      }
      const cancel = runAction.action === 'cancel';
      const body = await jsonBody(request, cancel ? ['reason'] : []);
      if (body instanceof Response) return body;
      const result: CancelResult | RetryResult = cancel
        ? await cancelRun(source, id, reasonField(body, 'from the dashboard'))
        : await retryRun(source, id);
      return json(200, { result });
    }
    if (fn) {
      const name = decodeSegment(fn.name!);
      if (!FUNCTION_NAME.test(name) || name.length > 100) {
        throw new BadRequest(
          'function',
          `function name ${
            JSON.stringify(name)
          } is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$, at most 100 characters)`,
        );
      }
      const body = await jsonBody(request, fn.action === 'pause' ? ['reason'] : []);
      if (body instanceof Response) return body;
      const reason = reasonField(body, 'paused from the dashboard');
      if (!(await functionState(source, name, { heartbeatWindowSeconds }))) {
        return json(404, {
          error: 'not_found',
          message: `unknown function ${JSON.stringify(name)}`,
        });
      }
      const result: PauseResult | ResumeResult = fn.action === 'pause'
        ? await pauseFunction(source, name, reason)
        : await resumeFunction(source, name);
      return json(200, { result });
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return json(405, { error: 'method_not_allowed', message: `use GET for ${path}` }, {
        allow: 'GET, HEAD',
      });
    }
    if (path === '/api/overview') {
      checkParams(params, ['runs', 'status', 'queue', 'minutes']);
      const limit = intParam(params, 'runs', 1, 200, 25);
      const minutes = intParam(params, 'minutes', 1, 1440, 60);
      const status = statusParam(params);
      const queueName = queueParam(params);
      const snapshot = await dashboardSnapshot(source, {
        heartbeatWindowSeconds,
        minutes,
        runs: { limit, status, queueName },
      });
      const authorized = problem === null;
      const overview: DashboardOverview = {
        ...snapshot,
        refreshMs,
        heartbeatWindowSeconds,
        minutes,
        access: {
          mode: access,
          authorized,
          problem,
          actions: authorized ? [...ACTIONS] : [],
        },
      };
      return json(200, overview);
    }
    if (path === '/api/runs') {
      checkParams(params, ['limit', 'status', 'queue']);
      const runs = await recentRuns(source, {
        limit: intParam(params, 'limit', 1, 200, 25),
        status: statusParam(params),
        queueName: queueParam(params),
      });
      return json(200, { runs });
    }
    const run = ROUTES.run.exec({ pathname: path })?.pathname.groups;
    if (run) {
      checkParams(params, []);
      const id = runIdParam(run.id!);
      const [found] = await recentRuns(source, { runId: id, limit: 1 });
      if (!found) return json(404, { error: 'not_found', message: `unknown run ${id}` });
      // One more than shown tells whether there are earlier ones.
      const events = await runEvents(source, id, {
        limit: RUN_EVENTS + 1,
        newest: true,
        withoutProgress: true,
      });
      const eventsTruncated = events.length > RUN_EVENTS;
      const detail: DashboardRunDetail = {
        run: found,
        events: eventsTruncated ? events.slice(1) : events,
        eventsTruncated,
        progress: await latestProgress(source, id),
      };
      return json(200, detail);
    }
    return json(404, {
      error: 'not_found',
      message: `no such API route ${JSON.stringify(path)}: see GET ${base}/api/overview`,
    });
  };

  // Prometheus' scrape (docs/design/observability.md): always behind the bearer, whatever `access`
  // says, since a scraper is a service with a secret and the counts name every queue and step.
  const prometheus = async (request: Request, url: URL): Promise<Response> => {
    const problem = await authProblem(request, options.auth, env);
    if (problem !== null) return unauthorized(problem);
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return json(405, { error: 'method_not_allowed', message: 'use GET for /metrics' }, {
        allow: 'GET, HEAD',
      });
    }
    checkParams(url.searchParams, ['window']);
    const windowSeconds = intParam(url.searchParams, 'window', 1, MAX_METRICS_WINDOW_SECONDS, 60);
    const [m, snapshot] = await Promise.all([
      metrics(source, { windowSeconds }),
      metricSnapshot(source),
    ]);
    const text = prometheusText(m, snapshot);
    return new Response(request.method === 'HEAD' ? null : text, {
      headers: { 'content-type': PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' },
    });
  };

  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const misdirected = hostProblem(request, url);
    if (misdirected !== null) {
      return json(421, { error: 'misdirected_request', message: misdirected }, {
        connection: 'close',
      });
    }
    if (url.pathname !== base && !url.pathname.startsWith(`${base}/`)) {
      return json(404, { error: 'not_found', message: `the dashboard is at ${base || '/'}` });
    }
    const path = url.pathname.slice(base.length) || '';
    if (path === '') return Response.redirect(new URL(`${base}/`, url), 302);
    if (path === '/' || path === '/index.html') {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return json(405, { error: 'method_not_allowed', message: 'use GET for the page' }, {
          allow: 'GET, HEAD',
        });
      }
      const nonce = crypto.randomUUID().replaceAll('-', '');
      return new Response(page.replaceAll('__NONCE__', nonce), {
        headers: {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          // 'self': the page imports browser.js (followRun) for live progress.
          'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}' 'self'; ` +
            `style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; ` +
            `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        },
      });
    }
    if (path === '/browser.js') return await browserModule();
    if (path === '/metrics') {
      try {
        return await prometheus(request, url);
      } catch (e) {
        return errorResponse(e, (await authProblem(request, options.auth, env)) === null);
      }
    }
    if (path.startsWith('/api/')) {
      try {
        return await api(request, path, url);
      } catch (e) {
        const authorized = (await authProblem(request, options.auth, env)) === null;
        if (!authorized && !(e instanceof BadRequest || e instanceof BodyTooLarge)) {
          console.error(`dashboard: ${request.method} ${path}: ${(e as Error)?.message ?? e}`);
        }
        return errorResponse(e, authorized);
      }
    }
    return json(404, { error: 'not_found', message: `no such page ${JSON.stringify(path)}` });
  };

  return {
    fetch,
    access,
    async close() {
      await eventStream?.close();
    },
  };
}
