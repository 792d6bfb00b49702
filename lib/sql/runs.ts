/**
 * Runs from the caller's side: start one, read its status and its events, cancel it, retry
 * it (`switchyard.start_flow`, `run_status`, `run_events`, `cancel_run`, `retry_run`;
 * docs/design/client.md). Every decision stays in SQL; these calls only carry arguments
 * and results. The typed client of `lib/client.ts` and the `deno task cancel|retry`
 * commands are built on them.
 *
 * @module
 */
import { SwitchyardError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { assertJson } from '../dsl/json.ts';
import { call, sqlOf, type SqlSource } from './source.ts';
import { assertStorableReason } from './function_state.ts';
import { runTraceparent } from '../tracing.ts';

/**
 * Where a run is: `started` (steps may still run), `completed` (its output is set),
 * `failed` (a step used all its attempts; a retry starts it again) or `cancelled`.
 *
 * @example
 * ```ts
 * import type { RunStatusValue } from './runs.ts';
 *
 * const finished = (s: RunStatusValue) => s !== 'started';
 * ```
 */
export type RunStatusValue = 'started' | 'completed' | 'failed' | 'cancelled';

/**
 * Where a step of a run is: `created` (waits for its dependencies), `started` (its task is
 * queued or running), `completed`, `failed`, `skipped` (its condition was false) or
 * `cancelled` (its run was cancelled before it finished).
 *
 * @example
 * ```ts
 * import type { StepStatusValue } from './runs.ts';
 *
 * const open = (s: StepStatusValue) => s === 'created' || s === 'started';
 * ```
 */
export type StepStatusValue =
  | 'created'
  | 'started'
  | 'completed'
  | 'failed'
  | 'skipped'
  | 'cancelled';

/**
 * One step in a {@linkcode RunStatus}.
 *
 * @example
 * ```ts
 * import type { StepStatus } from './runs.ts';
 *
 * const step: Pick<StepStatus, 'stepSlug' | 'status' | 'queueName' | 'attempts' | 'skipReason'> = {
 *   stepSlug: 'classify',
 *   status: 'started',
 *   queueName: 'classify_threads',
 *   attempts: 1,
 *   skipReason: null,
 * };
 * ```
 */
export interface StepStatus<StepSlug extends string = string> {
  /** The step. */
  stepSlug: StepSlug;
  /** Where it is. */
  status: StepStatusValue;
  /** The queue its task was sent to (null before it started). */
  queueName: string | null;
  /** Attempts its task used so far (a map step: the most any element used). */
  attempts: number;
  /** Its tasks: one for an ordinary step, one per element for a map step. */
  tasks: number;
  /** The first error of its tasks, if any. */
  error: string | null;
  /** Why it was skipped, if it was. */
  skipReason: string | null;
}

/**
 * Where a run came from (docs/design/origins.md): set by the kit's own sources of runs, null
 * for a plain start. `kind` names the source; the other fields name which one:
 *
 * - `row_trigger`: a write to a table (`trigger`, the declaration's name; `table`,
 *   `schema.table`; `op`, `insert`, `update` or `delete`; docs/design/ingestion.md);
 * - `backfill`: a row trigger's backfill (`trigger`);
 * - `webhook`: a signed delivery (`function`, the Edge Function; `delivery`, its id;
 * docs/design/ingestion.md#signed-webhooks);
 * - any other kind a caller gives `startRun`'s `origin` (a batch, say: `{ kind: 'batch', … }`).
 *
 * @example
 * ```ts
 * import type { RunOrigin } from './runs.ts';
 *
 * const origin: RunOrigin = { kind: 'webhook', function: 'orders-webhook', delivery: 'd-1' };
 * const fromRow = (o: RunOrigin | null) => o?.kind === 'row_trigger' ? o.trigger : null;
 * ```
 */
export type RunOrigin =
  | { kind: 'row_trigger'; trigger: string; table: string; op: 'insert' | 'update' | 'delete' }
  | { kind: 'backfill'; trigger: string }
  | { kind: 'webhook'; function: string; delivery: string }
  | { kind: string; [field: string]: unknown };

/**
 * The status document of one run (`switchyard.run_status`).
 *
 * @typeParam Output the run's output once completed (the outputs of its leaf steps)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import type { RunStatus } from '../client.ts';
 * import { runStatus } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const status: RunStatus | null = await runStatus(client, crypto.randomUUID());
 * console.log(status?.steps.map((s) => `${s.stepSlug}: ${s.status}`));
 * await client.close();
 * ```
 */
export interface RunStatus<Output = unknown, StepSlug extends string = string> {
  /** The run. */
  runId: string;
  /** Its concrete flow. */
  flowSlug: string;
  /** The alias or slug it was started as. */
  startedAs: string;
  /** Where the run is. */
  status: RunStatusValue;
  /** The run's output once completed: the outputs of its leaf steps, by step slug. */
  output: Output | null;
  /** Why it failed, or why it was cancelled (`cancelled: <reason>`). */
  error: string | null;
  /** Who the run is for (the `owner` of the start), or null. */
  owner: string | null;
  /** When it started (ISO 8601). */
  startedAt: string;
  /** When it completed, or null. */
  completedAt: string | null;
  /** When it failed, or null (a retry clears it). */
  failedAt: string | null;
  /** When it was cancelled, or null. */
  cancelledAt: string | null;
  /** The run this one was forked from (`fork_run`, docs/design/rerun.md), or null. */
  forkedFrom: string | null;
  /** The step a fork ran again from, or null. */
  fromStep: string | null;
  /** When the run was paused (`pause_run` or a step's `whenExhausted: 'pause'`), or null. */
  pausedAt: string | null;
  /** Why it is paused, or null. */
  pauseReason: string | null;
  /** Where the run came from (a row trigger, a backfill, a webhook), or null for a plain start. */
  origin: RunOrigin | null;
  /** Every step with its state, queue and attempts, in the order they were added. */
  steps: StepStatus<StepSlug>[];
}

/**
 * What an event says happened: the new status of the run or of one of its steps.
 * `retried` is a failed run started again by a retry; a step's `started` means it became
 * ready and its task was queued.
 *
 * @example
 * ```ts
 * import type { RunEventName } from './runs.ts';
 *
 * const name: RunEventName = 'completed';
 * ```
 */
export type RunEventName =
  | 'started'
  | 'completed'
  | 'failed'
  | 'skipped'
  | 'cancelled'
  | 'retried'
  | 'waiting'
  | 'signalled'
  | 'timed out'
  | 'progress'
  | 'rerun'
  | 'forked'
  | 'moved'
  | 'paused'
  | 'resumed';

/**
 * One transition of a run or of one of its steps (a row of `switchyard.run_events`). Events
 * carry ids and names, never inputs or outputs; a `progress` event carries the JSON its handler
 * reported (`ctx.progress`, docs/design/observability.md).
 *
 * @example
 * ```ts
 * import type { RunEvent } from './runs.ts';
 *
 * const describe = (e: RunEvent) => `${e.eventId} ${e.stepSlug ?? 'run'} ${e.event}`;
 * ```
 */
export interface RunEvent<StepSlug extends string = string> {
  /** Increasing within a run, in commit order; pass the last one as `after` to resume. */
  eventId: number;
  /** The run. */
  runId: string;
  /** Its concrete flow. */
  flowSlug: string;
  /** The step, or null for an event of the run itself. */
  stepSlug: StepSlug | null;
  /** What happened. */
  event: RunEventName;
  /** When. */
  at: Date;
  /** A `progress` event's task index (0 for an ordinary step); absent on other events. */
  taskIndex?: number;
  /**
   * A `progress` event's JSON, what the handler gave `ctx.progress`; for `rerun`, `forked`,
   * `moved`, `paused` and `resumed`, who did it and what (docs/design/rerun.md); for the
   * run's `started` event of a run with an origin, `{ origin }` ({@linkcode RunOrigin},
   * docs/design/origins.md); absent on other events.
   */
  data?: unknown;
}

/** The events an operator's action writes, with who did it and what in `data` (docs/design/rerun.md). */
const OPERATOR_EVENTS: ReadonlySet<string> = new Set([
  'rerun',
  'forked',
  'moved',
  'paused',
  'resumed',
]);

/**
 * The channel the SQL core notifies on each transition; the payload is the run id.
 *
 * @example
 * ```ts
 * import { RUN_EVENTS_CHANNEL } from './runs.ts';
 * console.assert(RUN_EVENTS_CHANNEL === 'switchyard_run_events');
 * ```
 */
export const RUN_EVENTS_CHANNEL = 'switchyard_run_events';

/**
 * The options of every start of {@linkcode startRun}: idempotency, owner, delay and deadline.
 *
 * @example
 * ```ts
 * import type { StartRunBaseOptions } from './runs.ts';
 *
 * const options: StartRunBaseOptions = { owner: crypto.randomUUID() };
 * ```
 */
export interface StartRunBaseOptions {
  /**
   * A run id the caller chooses, making the start idempotent (docs/design/runs.md#starting-a-run):
   * a
   * second start with the same id returns the existing run and starts nothing; the same id
   * with another input, flow or owner is refused with an `OperationError` (code `23505`,
   * `detail.rule` `run_id_other_input`, `run_id_other_flow` or `run_id_other_owner`).
   */
  runId?: string;
  /**
   * Who the run is for: a user id (a UUID, such as Supabase's `auth.uid()`). Row-level
   * security lets that user read the run's events (docs/design/client.md).
   */
  owner?: string;
  /**
   * A delayed start (`switchyard.start_flow_at`, docs/design/waits.md): the run exists
   * at once (with the version its alias names now) and its steps start at this time, on the
   * SQL core's next tick after it (up to a minute late with the keep-alive job). A time not in
   * the future starts at once; at most 365 days ahead.
   */
  startAt?: Date;
  /**
   * When the run must have finished: still going then, it is cancelled by the SQL core with the
   * reason `deadline` (docs/design/client.md), whether a worker is alive or not. The flow's
   * `runTimeout`, when it has one, may make it earlier. Must be in the future.
   */
  deadlineAt?: Date;
  /**
   * The caller's W3C trace context (`00-<trace id>-<span id>-<flags>`), stored with the run so
   * the spans of its tasks join that trace (docs/design/observability.md). Default: the active
   * OpenTelemetry span's, when the application has one; else none. A malformed one (an incoming
   * request's header) is logged, at most once a minute, and the run starts as without one.
   */
  traceparent?: string;
  /**
   * The order of the run's tasks on a shared queue
   * (docs/design/flow-control.md#priority-and-keys-in-turn): a whole number
   * from -10 (last) to 10 (first), default 0. Each level is worth `priority_ageing_seconds`
   * (default 60) of waiting, so a task that waited longer than the levels between it and a
   * newer one of higher priority goes first: low priority is delayed, never starved. Child runs
   * inherit their parent's priority.
   */
  priority?: number;
  /**
   * An event of a batched flow (the flow option `batch`, docs/guide/batching.md): the input
   * joins the open batch of this key (1 to 200 characters) in the scope of the alias started,
   * and the answer is the id of the run the batch becomes when it closes (at its `maxSize`, or
   * its `timeout` after its first event). Takes no other option (`OperationError`, 22023
   * `batch_key_alone`); a flow without `batch` refuses it (`batch_not_declared`).
   */
  batchKey?: string;
  /**
   * Where the run came from (docs/design/origins.md): an object whose `kind` is 1 to 40
   * lower-case letters, digits and underscores, at most 1024 bytes of JSON. The kit's row
   * triggers and webhooks set it; a source of one's own may (`{ kind: 'import', file }`). Stored
   * with the run (`RunStatus.origin`, the dashboard) and in its `started` event's `data`. A keyed
   * start that returns an existing run keeps that run's origin. Default: none.
   */
  origin?: RunOrigin;
}

/**
 * A start without a key (the options of {@linkcode StartKeyOptions} absent).
 *
 * @example
 * ```ts
 * import type { UnkeyedStart } from './runs.ts';
 *
 * const options: UnkeyedStart = {};
 * ```
 */
export interface UnkeyedStart {
  /** No key. */
  key?: undefined;
  /** No mode. */
  mode?: undefined;
  /** Only a dedupe start has a TTL. */
  ttl?: undefined;
  /** Only a debounce start has a delay. */
  delay?: undefined;
  /** Only a debounce start has a maximum delay. */
  maxDelay?: undefined;
}

/**
 * A start with a key (docs/design/flow-control.md#start-keys), in the scope of the alias started:
 * at most
 * one open run per key. A second start with the key returns the key's run while it is open
 * (the input of the second start is not used). The key takes no `runId` (each names the run).
 *
 * @example
 * ```ts
 * import type { SingletonStart } from './runs.ts';
 *
 * const options: SingletonStart = { key: 'tenant-42', mode: 'singleton' };
 * ```
 */
export interface SingletonStart {
  /** The start key: 1 to 200 characters, in the scope of the alias (or slug) started. */
  key: string;
  /** One open run per key; a start after it ended starts a new run. */
  mode: 'singleton';
  /** A keyed start takes no run id. */
  runId?: undefined;
  /** Only a dedupe start has a TTL. */
  ttl?: undefined;
  /** Only a debounce start has a delay. */
  delay?: undefined;
  /** Only a debounce start has a maximum delay. */
  maxDelay?: undefined;
}

/**
 * A start with a key that is remembered after its run ended
 * (docs/design/flow-control.md#start-keys): a
 * start with the key returns the key's run while it is open and for `ttl` seconds after it
 * ended (completed, failed or cancelled); then the key starts a new run.
 *
 * @example
 * ```ts
 * import type { DedupeStart } from './runs.ts';
 *
 * const options: DedupeStart = { key: 'order-1001', mode: 'dedupe', ttl: 3600 };
 * ```
 */
export interface DedupeStart {
  /** The start key: 1 to 200 characters, in the scope of the alias (or slug) started. */
  key: string;
  /** The key names its run until `ttl` seconds after the run ended. */
  mode: 'dedupe';
  /** Seconds the key is kept after its run ended: 1 to 31536000, default 86400 (a day). */
  ttl?: number;
  /** A keyed start takes no run id. */
  runId?: undefined;
  /** Only a debounce start has a delay. */
  delay?: undefined;
  /** Only a debounce start has a maximum delay. */
  maxDelay?: undefined;
}

/**
 * A debounced start (docs/design/flow-control.md#start-keys): the run's steps start `delay` seconds
 * after
 * the last start with the key. A start with the key before then gives the waiting run its
 * input (the trailing payload wins) and moves its start to `delay` seconds from now, never
 * past `maxDelay` seconds after the first start. The start begins on the SQL core's tick
 * (`switchyard.expire_waits`, up to a minute late with the keep-alive job), as a `startAt` does.
 *
 * @example
 * ```ts
 * import type { DebounceStart } from './runs.ts';
 *
 * const options: DebounceStart = { key: 'doc-7', mode: 'debounce', delay: 5, maxDelay: 60 };
 * ```
 */
export interface DebounceStart {
  /** The start key: 1 to 200 characters, in the scope of the alias (or slug) started. */
  key: string;
  /** Delay the start; a later start with the key moves it and replaces its input. */
  mode: 'debounce';
  /** Seconds after the last start with the key: 1 to 31536000. */
  delay: number;
  /** Seconds after the first start at which the run starts at the latest: delay to 31536000. */
  maxDelay?: number;
  /** A debounce sets its own start. */
  startAt?: undefined;
  /** A keyed start takes no run id. */
  runId?: undefined;
  /** Only a dedupe start has a TTL. */
  ttl?: undefined;
}

/**
 * The start keys of {@linkcode startRun} (docs/design/flow-control.md#start-keys): none, or a key
 * with its
 * mode.
 */
export type StartKeyOptions = UnkeyedStart | SingletonStart | DedupeStart | DebounceStart;

/**
 * Options of {@linkcode startRun}: the base options and, optionally, a start key.
 *
 * @example
 * ```ts
 * import type { StartRunOptions } from './runs.ts';
 *
 * const options: StartRunOptions = { runId: crypto.randomUUID(), owner: crypto.randomUUID() };
 * const keyed: StartRunOptions = { key: 'tenant-42', mode: 'singleton' };
 * ```
 */
export type StartRunOptions = StartRunBaseOptions & StartKeyOptions;

/**
 * Runs one transaction again after a deadlock (`40P01`) or a serialization failure (`40001`),
 * at most three times: PostgreSQL rolled it back whole, so repeating it is safe.
 */
export async function repeatable<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (e) {
      const code = (e as { code?: string })?.code;
      if (attempt >= 3 || (code !== '40P01' && code !== '40001')) throw e;
    }
  }
}

/**
 * Whether `value` is a UUID in its 8-4-4-4-12 hex form (any version, either case): what a
 * run id or an owner must be.
 *
 * @example
 * ```ts
 * import { isUuid } from './runs.ts';
 *
 * console.assert(isUuid(crypto.randomUUID()) && !isUuid('not-a-uuid'));
 * ```
 */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' &&
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

export function assertUuid(what: string, name: string, value: unknown): void {
  if (value !== undefined && !isUuid(value)) {
    throw new SwitchyardError(
      `${what}: ${name} ${describeValue(value)} is invalid: use a UUID such as ` +
        'crypto.randomUUID()',
    );
  }
}

/**
 * Starts a run of an alias's active version or of a concrete flow (`switchyard.start_flow`);
 * returns the run id. Untyped: the client of `lib/client.ts` types it from the registry.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { startRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const runId = await startRun(client, 'communityThreads', { id: 't1' }, {
 *   runId: crypto.randomUUID(),
 * });
 * console.log(runId);
 * await client.close();
 * ```
 */
export async function startRun(
  source: SqlSource,
  flowOrAlias: string,
  input: unknown,
  options: StartRunOptions = {},
  /** The time `deadlineAt` must be after (ms): the database's clock, a test engine's (docs/design/clock.md). */
  now: () => number = Date.now,
): Promise<string> {
  const { runId, owner, startAt, deadlineAt, traceparent, priority, batchKey, origin } = options;
  const { key, mode, ttl, delay, maxDelay } = options as {
    key?: unknown;
    mode?: unknown;
    ttl?: unknown;
    delay?: unknown;
    maxDelay?: unknown;
  };
  const what = `start(${JSON.stringify(flowOrAlias)})`;
  assertJson(input, 'input');
  assertUuid(what, 'runId', runId);
  assertUuid(what, 'owner', owner);
  if (startAt !== undefined && !(startAt instanceof Date && Number.isFinite(startAt.getTime()))) {
    throw new SwitchyardError(
      `${what}: startAt ${describeValue(startAt)} is invalid: pass a Date (at most 365 days ahead)`,
    );
  }
  if (
    deadlineAt !== undefined &&
    !(deadlineAt instanceof Date && Number.isFinite(deadlineAt.getTime()) &&
      deadlineAt.getTime() > now())
  ) {
    throw new SwitchyardError(
      `${what}: deadlineAt ${describeValue(deadlineAt)} is invalid: pass a Date in the future`,
    );
  }
  // The types of the key options; how they fit together is the SQL core's rule (22023, with
  // detail.rule), so a trigger calling start_flow gets the same answer.
  if (key !== undefined && typeof key !== 'string') {
    throw new SwitchyardError(
      `${what}: key ${describeValue(key)} is invalid: pass a string of 1 to 200 characters`,
    );
  }
  if (mode !== undefined && typeof mode !== 'string') {
    throw new SwitchyardError(
      `${what}: mode ${describeValue(mode)} is invalid: pass 'singleton', 'dedupe' or 'debounce'`,
    );
  }
  for (const [name, value] of [['ttl', ttl], ['delay', delay], ['maxDelay', maxDelay]] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= 1)) {
      throw new SwitchyardError(
        `${what}: ${name} ${describeValue(value)} is invalid: pass a whole number of seconds ` +
          '(at least 1)',
      );
    }
  }
  if (
    priority !== undefined &&
    !(Number.isSafeInteger(priority) && priority >= -10 && priority <= 10)
  ) {
    throw new SwitchyardError(
      `${what}: priority ${describeValue(priority)} is invalid: pass a whole number from -10 ` +
        '(last) to 10 (first); 0 is the default',
    );
  }
  if (batchKey !== undefined && typeof batchKey !== 'string') {
    throw new SwitchyardError(
      `${what}: batchKey ${describeValue(batchKey)} is invalid: pass a string of 1 to 200 ` +
        'characters',
    );
  }
  // The origin's rule (kind, size) is the SQL core's (22023 origin_invalid); only its type here.
  if (
    origin !== undefined &&
    (origin === null || typeof origin !== 'object' || Array.isArray(origin) ||
      typeof origin.kind !== 'string')
  ) {
    throw new SwitchyardError(
      `${what}: origin ${describeValue(origin)} is invalid: pass an object with a string kind, ` +
        "such as { kind: 'import', file: 'orders.csv' }",
    );
  }
  if (origin !== undefined) assertJson(origin, 'origin');
  // A malformed one is logged and the run starts untraced (runTraceparent).
  // An event of a batch takes no trace context: not the active span's by default (a given one
  // is the SQL core's refusal, batch_key_alone).
  const trace = batchKey !== undefined && traceparent === undefined
    ? null
    : runTraceparent(what, traceparent);
  const seconds = (value: unknown) => (value as number | undefined) ?? null;
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () =>
      sql<{ id: string }[]>`
        select switchyard.start_flow(${flowOrAlias}::text, ${sql.json(input as never)}::jsonb,
          ${runId ?? null}::uuid, ${owner ?? null}::uuid,
          ${startAt?.toISOString() ?? null}::timestamptz,
          ${deadlineAt?.toISOString() ?? null}::timestamptz, ${
        (key as string | undefined) ?? null
      }::text,
          ${(mode as string | undefined) ?? null}::text, ${seconds(ttl)}::int,
          ${seconds(delay)}::int, ${seconds(maxDelay)}::int, ${trace}::text,
          ${priority ?? null}::int, ${batchKey ?? null}::text${
        origin === undefined ? sql`` : sql`, origin => ${sql.json(origin as never)}::jsonb`
      }) as id`,
  );
  return row.id;
}

/**
 * The run's status document with its steps (`switchyard.run_status`), or null for an
 * unknown run.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { runStatus } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const status = await runStatus(client, crypto.randomUUID());
 * console.log(status === null ? 'no such run' : status.status);
 * await client.close();
 * ```
 */
export async function runStatus<Output = unknown>(
  source: SqlSource,
  runId: string,
): Promise<RunStatus<Output> | null> {
  assertUuid('runStatus', 'runId', runId);
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () =>
      sql<{ s: Record<string, unknown> | null }[]>`
        select switchyard.run_status(${runId}::uuid) as s`,
  );
  return row.s === null ? null : camelStatus<Output>(row.s);
}

/** The SQL core's snake_case status document with camelCase names. */
function camelStatus<Output>(s: Record<string, unknown>): RunStatus<Output> {
  const camel = (o: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      out[k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = v;
    }
    return out;
  };
  const run = camel(s);
  run.steps = ((s.steps ?? []) as Record<string, unknown>[]).map(camel);
  return run as unknown as RunStatus<Output>;
}

/**
 * The output of every step of a run that completed so far, by step slug
 * (`switchyard.run_step_outputs`): a map step's is its elements' outputs in order; skipped and
 * unfinished steps are absent. Null when there is no such run.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { runStepOutputs } from './runs.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(await runStepOutputs(client, crypto.randomUUID())); // null: no such run
 * await client.close();
 * ```
 */
export async function runStepOutputs(
  source: SqlSource,
  runId: string,
): Promise<Record<string, unknown> | null> {
  assertUuid('runStepOutputs', 'runId', runId);
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () =>
      sql<{ o: Record<string, unknown> | null }[]>`
        select switchyard.run_step_outputs(${runId}::uuid) as o`,
  );
  return row.o;
}

/**
 * Where a run is and how it ended: what a waiter reads on each notification.
 *
 * @example
 * ```ts
 * import type { RunResult } from './runs.ts';
 *
 * const result: RunResult = { status: 'completed', output: { notify: true }, error: null };
 * ```
 */
export interface RunResult {
  /** Where the run is. */
  status: RunStatusValue;
  /** The output once completed. */
  output: unknown;
  /** Why it failed or was cancelled. */
  error: string | null;
}

/**
 * Reads only the status, output and error of a run (one key lookup), or null for an
 * unknown run: what `run.output()` reads after each notification.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { runResult } from './runs.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(await runResult(client, crypto.randomUUID())); // null
 * await client.close();
 * ```
 */
export async function runResult(source: SqlSource, runId: string): Promise<RunResult | null> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<RunResult[]>`
      select r.status, r.output, r.error from switchyard.runs r where r.run_id = ${runId}::uuid`);
  return row ?? null;
}

/**
 * Which events {@linkcode runEvents} reads.
 *
 * @example
 * ```ts
 * import type { RunEventsOptions } from './runs.ts';
 *
 * const latest: RunEventsOptions = { limit: 200, newest: true };
 * ```
 */
export interface RunEventsOptions {
  /** Only events after this one (0, the default: from the first). */
  after?: number;
  /** At most this many (default 1000). */
  limit?: number;
  /**
   * Take the newest `limit` events instead of the oldest (default false). Either way they
   * come in order, oldest first.
   */
  newest?: boolean;
  /**
   * Only if the run is this user's (`runs.owner`, as the row-level security policy of
   * `run_events` has it): another user's run, or one without an owner, has no events here.
   */
  owner?: string;
  /** Leave out `progress` events (default false). */
  withoutProgress?: boolean;
}

/**
 * The run's events after event `after` (0: from the first), in order, at most `limit`: the
 * oldest of them, or with `newest` the newest.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { runEvents } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const e of await runEvents(client, crypto.randomUUID())) console.log(e.event);
 * await client.close();
 * ```
 */
export async function runEvents(
  source: SqlSource,
  runId: string,
  { after = 0, limit = 1000, newest = false, owner, withoutProgress = false }: RunEventsOptions =
    {},
): Promise<RunEvent[]> {
  assertUuid('runEvents', 'runId', runId);
  if (owner !== undefined) assertUuid('runEvents', 'owner', owner);
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new SwitchyardError(
      `runEvents: after ${describeValue(after)} is invalid: use an event id (an integer >= 0)`,
    );
  }
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        event_id: string;
        run_id: string;
        flow_slug: string;
        step_slug: string | null;
        event: RunEventName;
        created_at: Date;
        task_index: number | null;
        data: unknown;
      }[]
    >`
      select e.event_id::text, e.run_id, e.flow_slug, e.step_slug, e.event, e.created_at,
             e.task_index, e.data
        from switchyard.run_events e
       where e.run_id = ${runId}::uuid and e.event_id > ${after}::bigint
         ${owner === undefined ? sql`` : sql`and e.owner = ${owner}::uuid`}
         ${withoutProgress ? sql`and e.event <> 'progress'` : sql``}
       order by e.event_id ${newest ? sql`desc` : sql`asc`}
       limit ${limit}::int`);
  if (newest) rows.reverse();
  return rows.map((r) => ({
    eventId: Number(r.event_id),
    runId: r.run_id,
    flowSlug: r.flow_slug,
    stepSlug: r.step_slug,
    event: r.event,
    at: r.created_at,
    ...(r.event === 'progress' ? { taskIndex: r.task_index ?? 0, data: r.data } : {}),
    ...(OPERATOR_EVENTS.has(r.event) ? { data: r.data } : {}),
    // A run's start with an origin (docs/design/origins.md).
    ...(r.event === 'started' && r.step_slug === null && r.data !== null ? { data: r.data } : {}),
  }));
}

/**
 * The latest `progress` event of each task of the run that reported progress, in event order
 * (what the dashboard's timeline shows beside a step).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { latestProgress } from './runs.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const p of await latestProgress(client, crypto.randomUUID())) console.log(p.data);
 * await client.close();
 * ```
 */
export async function latestProgress(source: SqlSource, runId: string): Promise<RunEvent[]> {
  assertUuid('latestProgress', 'runId', runId);
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        event_id: string;
        run_id: string;
        flow_slug: string;
        step_slug: string;
        created_at: Date;
        task_index: number;
        data: unknown;
      }[]
    >`
      select * from (
        select distinct on (e.step_slug, e.task_index) e.event_id::text, e.run_id, e.flow_slug,
               e.step_slug, e.created_at, e.task_index, e.data
          from switchyard.run_events e
         where e.run_id = ${runId}::uuid and e.event = 'progress'
         order by e.step_slug, e.task_index, e.event_id desc) latest
       order by latest.event_id::bigint`);
  return rows.map((r) => ({
    eventId: Number(r.event_id),
    runId: r.run_id,
    flowSlug: r.flow_slug,
    stepSlug: r.step_slug,
    event: 'progress',
    at: r.created_at,
    taskIndex: r.task_index,
    data: r.data,
  }));
}

/**
 * Who a run is for (`runs.owner`: null for a run started without one) and its status, or null
 * for an unknown run: what the run event stream checks a signed-in user's JWT against (and
 * whether the run has ended).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { runOwner } from './runs.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(await runOwner(client, crypto.randomUUID())); // null: no such run
 * await client.close();
 * ```
 */
export async function runOwner(
  source: SqlSource,
  runId: string,
): Promise<{ owner: string | null; status: RunStatusValue } | null> {
  assertUuid('runOwner', 'runId', runId);
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ owner: string | null; status: RunStatusValue }[]>`
      select r.owner, r.status from switchyard.runs r where r.run_id = ${runId}::uuid`);
  return row ?? null;
}

/**
 * What {@linkcode cancelRun} did.
 *
 * @example
 * ```ts
 * import type { CancelResult } from './runs.ts';
 *
 * const result: CancelResult = { runId: crypto.randomUUID(), changed: true };
 * ```
 */
export interface CancelResult {
  /** The run. */
  runId: string;
  /** False when the run was already cancelled (its first reason is kept). */
  changed: boolean;
}

/**
 * Cancels a started run (`switchyard.cancel_run`): its queued tasks' messages are archived,
 * tasks a worker is running finish but their answers change nothing, the run ends
 * `cancelled` and never starts another step.
 *
 * @throws {OperationError} `22023` (`reason_missing`, `run_unknown`) or `55000`
 *   (`run_not_started`: the run completed or failed)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { cancelRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const result = await cancelRun(client, crypto.randomUUID(), 'the customer withdrew');
 * console.log(result.changed ? 'cancelled' : 'was already cancelled');
 * await client.close();
 * ```
 */
export async function cancelRun(
  source: SqlSource,
  runId: string,
  reason: string,
): Promise<CancelResult> {
  assertUuid('cancel', 'runId', runId);
  assertStorableReason('cancel', reason);
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    repeatable(() =>
      sql<{ changed: boolean }[]>`
        select switchyard.cancel_run(${runId}::uuid, ${reason ?? null}::text) as changed`
    ));
  return { runId, changed: row.changed };
}

/**
 * What {@linkcode retryRun} did.
 *
 * @example
 * ```ts
 * import type { RetryResult } from './runs.ts';
 *
 * const result: RetryResult = { runId: crypto.randomUUID(), requeued: 1 };
 * ```
 */
export interface RetryResult {
  /** The run. */
  runId: string;
  /** Tasks queued again (the failed steps, and others whose work was lost with the failure). */
  requeued: number;
}

/** Options of {@linkcode retryRun}. */
export interface RetryOptions {
  /**
   * Delete the checkpoints of the run's tasks first (`switchyard.reset_checkpoints`), so the
   * tasks queued again start over instead of resuming
   * (docs/design/worker.md#worker-states-and-parts). Default false:
   * a task resumes where it was.
   */
  resetCheckpoints?: boolean;
}

/**
 * Retries a failed run (`switchyard.retry_run`): its failed steps are queued again with
 * fresh attempts and the run continues; completed steps are not run again. With
 * `resetCheckpoints`, their checkpoints are deleted in the same transaction.
 *
 * @throws {OperationError} `22023` (`run_unknown`) or `55000` (`run_not_failed`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { retryRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const { requeued } = await retryRun(client, crypto.randomUUID());
 * console.log(`${requeued} task(s) queued again`);
 * await client.close();
 * ```
 */
export async function retryRun(
  source: SqlSource,
  runId: string,
  options: RetryOptions = {},
): Promise<RetryResult> {
  assertUuid('retry', 'runId', runId);
  const reset = options.resetCheckpoints ?? false;
  if (typeof reset !== 'boolean') {
    throw new SwitchyardError(
      `retry: resetCheckpoints ${describeValue(reset)} is invalid: pass true or false`,
    );
  }
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () =>
      repeatable(() =>
        reset
          // One transaction: a retry refused (the run is not failed) resets nothing.
          ? sql.begin(async (tx) => {
            await tx`select switchyard.reset_checkpoints(${runId}::uuid)`;
            return await tx<{ requeued: number }[]>`
              select switchyard.retry_run(${runId}::uuid) as requeued`;
          })
          : sql<{ requeued: number }[]>`select switchyard.retry_run(${runId}::uuid) as requeued`
      ),
  );
  return { runId, requeued: row.requeued };
}

/**
 * The longest key of a signal, in characters (`switchyard.signal_run` refuses a longer one with
 * `22023 key_length`, as a start key's).
 *
 * @example
 * ```ts
 * import { MAX_SIGNAL_KEY_CHARS } from './runs.ts';
 * console.assert(MAX_SIGNAL_KEY_CHARS === 200);
 * ```
 */
export const MAX_SIGNAL_KEY_CHARS = 200;

/**
 * What {@linkcode signalRun} did: `delivered` (the wait step was waiting: the payload is its
 * output now and its dependents start), `kept` (the step is not ready yet: the signal is
 * delivered when it is) or `duplicate` (a signal with this key was already sent: nothing
 * changed).
 *
 * @example
 * ```ts
 * import type { SignalResult } from './runs.ts';
 *
 * const result: SignalResult = { runId: crypto.randomUUID(), outcome: 'kept' };
 * ```
 */
export interface SignalResult {
  /** The run. */
  runId: string;
  /** What happened to the signal. */
  outcome: 'delivered' | 'kept' | 'duplicate';
}

/**
 * Signals a wait step of a run (`switchyard.signal_run`, docs/design/waits.md): the
 * payload becomes the step's output. With `key`, sending the same signal again is a no-op.
 * Untyped: the client of `lib/client.ts` types the step and payload from the registry. In
 * an application's own transaction, call the SQL function there instead (or pass the
 * transaction's `sql`): the signal then exists only if that transaction commits.
 *
 * @throws {OperationError} `22023` (`run_unknown`, `step_unknown`, `step_not_wait`,
 *   `key_empty`, `key_length`, `max_output_bytes`) or `55000` (`run_not_started`, `step_already_signalled`,
 *   `wait_not_open`, `wait_timed_out`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { signalRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const { outcome } = await signalRun(client, crypto.randomUUID(), 'approval', {
 *   approved: true,
 * }, { key: 'approval-42' });
 * console.log(outcome);
 * await client.close();
 * ```
 */
export async function signalRun(
  source: SqlSource,
  runId: string,
  stepSlug: string,
  payload: unknown,
  { key }: { key?: string } = {},
): Promise<SignalResult> {
  assertUuid('signal', 'runId', runId);
  const storable = (text: string) => !text.includes('\0') && text.isWellFormed();
  if (typeof stepSlug !== 'string' || stepSlug === '' || !storable(stepSlug)) {
    throw new SwitchyardError(
      `signal: step ${describeValue(stepSlug)} is invalid: name a wait step of the run`,
    );
  }
  if (
    key !== undefined &&
    (typeof key !== 'string' || key.trim() === '' || !storable(key) ||
      key.length > MAX_SIGNAL_KEY_CHARS)
  ) {
    throw new SwitchyardError(
      `signal: key ${
        describeValue(typeof key === 'string' ? key.slice(0, 100) : key)
      } is invalid: pass a string of 1 to ${MAX_SIGNAL_KEY_CHARS} characters without U+0000 ` +
        'or lone surrogates, or no key',
    );
  }
  assertJson(payload, 'payload');
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ outcome: SignalResult['outcome'] }[]>`
      select switchyard.signal_run(${runId}::uuid, ${stepSlug}::text,
        ${sql.json(payload as never)}::jsonb, ${key ?? null}::text) as outcome`);
  return { runId, outcome: row.outcome };
}
