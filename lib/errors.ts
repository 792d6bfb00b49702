/**
 * Every error class of Switchyard (`switchyard/errors`; the main entry has them as the `errors`
 * namespace). `lib/sql/sql_errors.ts` maps the SQL core's SQLSTATEs to them
 * (docs/design/errors.md).
 *
 * Every error the kit throws extends {@link SwitchyardError}, so callers can catch the whole
 * family with one `instanceof` check, or match one class. Messages always name the offending
 * value and the rule that was broken. Errors raised in SQL are mapped by their SQLSTATE and the
 * JSON object in their `DETAIL`, never by their message text.
 *
 * @module
 */
import type { FenceStatus } from './sql/fence_status.ts';
import { describeValue } from './_describe_value.ts';

/**
 * Base class of every error thrown by Switchyard.
 *
 * @example
 * ```ts
 * import { SwitchyardError } from './errors.ts';
 *
 * try {
 *   throw new SwitchyardError('something went wrong');
 * } catch (error) {
 *   if (error instanceof SwitchyardError) console.error(error.message);
 * }
 * ```
 */
export class SwitchyardError extends Error {
  /** Creates the error; `options.cause` keeps the underlying error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SwitchyardError';
  }
}

/**
 * A flow slug, step slug or alias breaks the slug rule.
 *
 * @example
 * ```ts
 * import { InvalidSlugError } from './errors.ts';
 * import { assertFlowSlug } from './dsl/slugs.ts';
 *
 * try {
 *   assertFlowSlug('my-flow');
 * } catch (error) {
 *   if (error instanceof InvalidSlugError) console.error(error.value, error.rule);
 * }
 * ```
 */
export class InvalidSlugError extends SwitchyardError {
  /** The rejected value, exactly as given. */
  readonly value: unknown;
  /** The rule the value broke, in words. */
  readonly rule: string;

  /**
   * Creates the error; the message is `<kind> <value> is invalid: <rule>`.
   *
   * @param kind what the value is, e.g. `flow slug`, `step slug`, `alias`
   * @param value the rejected value
   * @param rule the rule it broke
   */
  constructor(kind: string, value: unknown, rule: string) {
    super(`${kind} ${describeValue(value)} is invalid: ${rule}`);
    this.name = 'InvalidSlugError';
    this.value = value;
    this.rule = rule;
  }
}

/**
 * A queue name breaks the queue name rule (or, for explicit names, contains `__`).
 *
 * @example
 * ```ts
 * import { InvalidQueueNameError } from './errors.ts';
 * import { assertQueueName } from './dsl/queue_names.ts';
 *
 * try {
 *   assertQueueName('Classify-Threads', { explicit: true });
 * } catch (error) {
 *   if (error instanceof InvalidQueueNameError) console.error(error.value, error.rule);
 * }
 * ```
 */
export class InvalidQueueNameError extends SwitchyardError {
  /** The rejected value, exactly as given. */
  readonly value: unknown;
  /** The rule the value broke, in words. */
  readonly rule: string;

  /**
   * Creates the error; the message is `[<where>: ]queue name <value> is invalid: <rule>`.
   *
   * @param value the rejected value
   * @param rule the rule it broke
   * @param where optional context prepended to the message, e.g. `step "a" of flow "f"`
   */
  constructor(value: unknown, rule: string, where?: string) {
    const prefix = where === undefined ? '' : `${where}: `;
    super(`${prefix}queue name ${describeValue(value)} is invalid: ${rule}`);
    this.name = 'InvalidQueueNameError';
    this.value = value;
    this.rule = rule;
  }
}

/**
 * A flow definition is inconsistent: a duplicate or reserved step slug, an unknown
 * dependency, a bad option value or a missing handler.
 *
 * @example
 * ```ts
 * import { FlowDefinitionError } from './errors.ts';
 * import { Flow } from './dsl/flow.ts';
 *
 * try {
 *   new Flow({ slug: 'f', maxAttempts: 0 });
 * } catch (error) {
 *   if (error instanceof FlowDefinitionError) console.error(error.message);
 * }
 * ```
 */
export class FlowDefinitionError extends SwitchyardError {
  /** Creates the error with a message naming the value and the rule. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'FlowDefinitionError';
  }
}

/**
 * A placement is inconsistent: `routeFlow()` lists an unknown step or misses one, a step is
 * looked up that the flow does not have, or a listing is ambiguous.
 *
 * @example
 * ```ts
 * import { RouteError } from './errors.ts';
 *
 * const error = new RouteError('routeFlow(flow "f"): missing queue for step "b"');
 * console.assert(error instanceof RouteError);
 * ```
 */
export class RouteError extends SwitchyardError {
  /** Creates the error with a message naming the value and the rule. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RouteError';
  }
}

/**
 * A value that must be JSON is not: `undefined`, a function, a symbol, a bigint, a
 * non-finite number, a cyclic reference, or an object that is not a plain object or array.
 * The message names the path of the offending value, e.g. `input.a.b`.
 *
 * @example
 * ```ts
 * import { InvalidInputError } from './errors.ts';
 * import { assertJson } from './dsl/json.ts';
 *
 * try {
 *   assertJson({ a: { b: undefined } });
 * } catch (error) {
 *   if (error instanceof InvalidInputError) console.error(error.path); // input.a.b
 * }
 * ```
 */
export class InvalidInputError extends SwitchyardError {
  /** Path of the offending value, e.g. `input.items[2].id`. */
  readonly path: string;
  /** The rule the value broke, in words. */
  readonly rule: string;

  /**
   * Creates the error; the message is `<path> is not JSON: <rule>`.
   *
   * @param path where the offending value sits, e.g. `input.a.b`
   * @param rule what is wrong with it
   */
  constructor(path: string, rule: string) {
    super(`${path} is not JSON: ${rule}`);
    this.name = 'InvalidInputError';
    this.path = path;
    this.rule = rule;
  }
}

/**
 * A value is JSON, but PostgreSQL cannot store it: a string (or property name) holding U+0000,
 * which neither `jsonb` nor `text` can hold, or a lone UTF-16 surrogate, which is no Unicode
 * character. Caught before the value is sent, so a handler's output fails its attempt once
 * instead of being rejected by the database at every try. The message names the path.
 *
 * @example
 * ```ts
 * import { InvalidInputError, UnstorableValueError } from './errors.ts';
 * import { assertJson } from './dsl/json.ts';
 *
 * try {
 *   assertJson({ note: 'a\u0000b' }, 'output');
 * } catch (error) {
 *   console.assert(error instanceof UnstorableValueError && error instanceof InvalidInputError);
 *   if (error instanceof UnstorableValueError) console.error(error.path); // output.note
 * }
 * ```
 */
export class UnstorableValueError extends InvalidInputError {
  /**
   * Creates the error; the message is `<path> is not JSON PostgreSQL can store: <rule>`.
   *
   * @param path where the offending value sits, e.g. `output.a.b`
   * @param rule what is wrong with it
   */
  constructor(path: string, rule: string) {
    super(path, rule);
    this.message = `${path} is not JSON PostgreSQL can store: ${rule}`;
    this.name = 'UnstorableValueError';
  }
}

/** A `flow/step` pair as the SQL core names it. */
export type FlowStepPair = `${string}/${string}`;

/**
 * The worker's configuration is wrong (duplicate concrete slugs, a queue no
 * deployment routes to, a missing or forbidden selector, a bad number).
 *
 * @example
 * ```ts
 * import { WorkerConfigError } from './errors.ts';
 * const e = new WorkerConfigError('maxConcurrent 0 is invalid: use an integer from 1 to 1000');
 * console.assert(e instanceof WorkerConfigError);
 * ```
 */
export class WorkerConfigError extends SwitchyardError {
  /** Creates the error with a message naming the value and the rule. */
  constructor(message: string) {
    super(message);
    this.name = 'WorkerConfigError';
  }
}

/**
 * A database connection string the kit cannot use: not a `postgres://` or `postgresql://` URL,
 * a broken percent-encoding, several hosts, or an unknown `sslmode` (docs/design/supabase.md).
 * The message never contains the password.
 *
 * @example
 * ```ts
 * import { ConnectionStringError, SwitchyardError } from './errors.ts';
 * const e = new ConnectionStringError('sslmode "maybe" is invalid: use disable, allow, prefer, require, verify-ca or verify-full');
 * console.assert(e instanceof SwitchyardError);
 * ```
 */
export class ConnectionStringError extends SwitchyardError {
  /** Creates the error with a message naming the part of the URL and the rule. */
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionStringError';
  }
}

/**
 * The database could not be reached or refused the login: the message names where the
 * connection string came from (`SWITCHYARD_DB_URL`, `SUPABASE_DB_URL`, `DATABASE_URL` or the
 * option), the host and port (never the password), the server's or the network's words, and
 * what to check. The original error is its `cause`.
 *
 * @example
 * ```ts
 * import { DatabaseConnectionError } from './errors.ts';
 * const e = new DatabaseConnectionError('DATABASE_URL', '127.0.0.1', 1, 'connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED');
 * console.assert(e.message.includes('DATABASE_URL') && e.port === 1);
 * ```
 */
export class DatabaseConnectionError extends SwitchyardError {
  /** Where the connection string came from: an environment variable's name, or the option. */
  readonly origin: string;
  /** The host it names. */
  readonly host: string;
  /** The port it names. */
  readonly port: number;
  /** The code of the failure (`ECONNREFUSED`, `ENOTFOUND`, `28P01`, `3D000`, ...). */
  readonly code: string;
  /** Creates the error for a connection string's origin, host and port, and what went wrong. */
  constructor(
    origin: string,
    host: string,
    port: number,
    reason: string,
    code: string,
    options?: ErrorOptions,
  ) {
    super(
      `cannot use the database at ${host.includes(':') ? `[${host}]` : host}:${port} ` +
        `(connection string from ${origin}): ${reason}; ${connectionAdvice(code)}`,
      options,
    );
    this.name = 'DatabaseConnectionError';
    this.origin = origin;
    this.host = host;
    this.port = port;
    this.code = code;
  }
}

function connectionAdvice(code: string): string {
  switch (code) {
    case 'ECONNREFUSED':
      return 'check that the server runs and that the host and port are right';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'check the host name (on Supabase: Project Settings -> Database -> Connection string)';
    case '28P01':
    case '28000':
      return 'check the user name and the password (percent-encode special characters)';
    case '3D000':
      return 'check the database name at the end of the URL (Supabase: postgres)';
    case '53300':
      return 'the server has no connection to spare: use the pooler, or fewer connections';
    default:
      return 'check that the server is reachable from here and that the URL is right';
  }
}

/**
 * The database has no Switchyard SQL core (schema `switchyard`), or an older one that lacks a
 * function this version calls: apply the migrations.
 *
 * @example
 * ```ts
 * import { SqlCoreMissingError } from './errors.ts';
 * const e = new SqlCoreMissingError('schema "switchyard" does not exist');
 * console.assert(e.message.includes('supabase db push'));
 * ```
 */
export class SqlCoreMissingError extends SwitchyardError {
  /** Creates the error from the server's words. */
  constructor(serverMessage: string, options?: ErrorOptions) {
    super(
      /schema "switchyard" does not exist/.test(serverMessage)
        ? 'the Switchyard SQL core is not installed here: run `supabase db push --linked` ' +
          '(Supabase CLI 3: `--remote`; or `npx switchyard db:push`) to apply its migrations'
        : `the Switchyard SQL core here is older than this kit (${serverMessage}): apply the ` +
          "kit's newer migrations with `supabase db push --linked` (Supabase CLI 3: `--remote`; " +
          'or `npx switchyard db:push`)',
      options,
    );
    this.name = 'SqlCoreMissingError';
  }
}

/**
 * Start-up refused: work on the queue needs (flow, step) pairs the registry lacks.
 *
 * @example
 * ```ts
 * import { CoverageError } from './errors.ts';
 * const e = new CoverageError('classify', [
 *   { flowSlug: 'threadsV3', stepSlug: 'classify', reasons: 'active target of alias threads' },
 * ]);
 * console.assert(e.missingPairs[0] === 'threadsV3/classify');
 * ```
 */
export class CoverageError extends SwitchyardError {
  /** The queue the worker was to poll. */
  readonly queueName: string;
  /** Every missing pair as `flow/step`. */
  readonly missingPairs: FlowStepPair[];
  /** Each missing pair with why it is needed. */
  readonly missing: { flowSlug: string; stepSlug: string; reasons: string }[];
  /**
   * What to do, one sentence each, for flows the database knows more about (an alias pointing at
   * a version the registry lacks: the exact `activate_alias` command; a retired version with
   * started runs: list it again until drained).
   */
  readonly advice: string[];
  /** Creates the error for a queue and every pair its registry lacks, with the reasons. */
  constructor(
    queueName: string,
    missing: { flowSlug: string; stepSlug: string; reasons: string }[],
    advice: string[] = [],
  ) {
    super(
      `worker for queue "${queueName}" refuses to start: its registry lacks ${missing.length} ` +
        `flow/step pair(s) that work on the queue needs: ${
          missing.map((m) => `${m.flowSlug}/${m.stepSlug} (${m.reasons})`).join(', ')
        }; ${advice.length > 0 ? `${advice.join('; ')}` : 'add those deployments to the registry'}`,
    );
    this.name = 'CoverageError';
    this.queueName = queueName;
    this.missing = missing;
    this.advice = advice;
    this.missingPairs = missing.map((m) => `${m.flowSlug}/${m.stepSlug}` as FlowStepPair);
  }
}

/**
 * A batch held work the worker cannot run. Nothing was claimed, the batch is
 * visible again, no attempt was used, and the function is paused.
 *
 * @example
 * ```ts
 * import { UnsupportedWorkError } from './errors.ts';
 * const e = new UnsupportedWorkError('classify', 'classify-worker', [41n, 42n], ['threadsV2/classify']);
 * console.assert(e.messageIds.length === 2);
 * ```
 */
export class UnsupportedWorkError extends SwitchyardError {
  /** The queue the batch was read from. */
  readonly queueName: string;
  /** The queue function that was paused. */
  readonly functionName: string;
  /** The unsupported messages (their bodies are never part of the error). */
  readonly messageIds: bigint[];
  /** `flow/step` pairs, or `(no task)` for messages that belong to no task. */
  readonly unsupportedPairs: string[];
  /** Creates the error naming queue, function, message ids and pairs. */
  constructor(
    queueName: string,
    functionName: string,
    messageIds: bigint[],
    unsupportedPairs: string[],
  ) {
    super(
      `unsupported work on queue "${queueName}": message ids [${messageIds.join(', ')}], ` +
        `unsupported flow/step pairs [${unsupportedPairs.join(', ')}]; nothing was claimed, ` +
        `the batch is visible again and function "${functionName}" is paused ` +
        `(a task of a version the registry lacks: deploy it, then npx switchyard resume; a ` +
        `foreign message with no task: npx switchyard quarantine ${functionName})`,
    );
    this.name = 'UnsupportedWorkError';
    this.queueName = queueName;
    this.functionName = functionName;
    this.messageIds = messageIds;
    this.unsupportedPairs = unsupportedPairs;
  }
}

/**
 * The reason of a handler's `ctx.signal` when its worker shuts down (`stop()`, `beforeunload`, a
 * deprecation, pause or disable, a fatal stop). A handler that returns within the worker's
 * `shutdownGraceMs` completes normally; one that throws after this abort, or is still running
 * when the grace period ends, is released: its task is visible again at once and the attempt
 * is refunded (docs/design/worker.md#worker-states-and-parts).
 *
 * @example
 * ```ts
 * import { errors, Flow } from './mod.ts';
 *
 * const flow = new Flow<{ url: string }>({ slug: 'fetcher' })
 *   .step({ slug: 'fetch' }, async (input, ctx) => {
 *     try {
 *       return (await fetch(input.url, { signal: ctx.signal })).status;
 *     } catch (e) {
 *       if (ctx.signal.reason instanceof errors.WorkerShutdownError) console.log('shutting down');
 *       throw e;
 *     }
 *   });
 * ```
 */
export class WorkerShutdownError extends SwitchyardError {
  /** Why the worker stops. */
  readonly reason: string;
  /** Creates the error with the worker's stop reason. */
  constructor(reason: string) {
    super(`the worker is shutting down (${reason}): stop and return, or throw`);
    this.name = 'WorkerShutdownError';
    this.reason = reason;
  }
}

/**
 * The run of a running handler ended while it ran: cancelled (`cancel_run`, by an operator or
 * the client), or failed by another of its tasks. The worker learns it from its heartbeat and
 * aborts the handler's `ctx.signal` with this error within one heartbeat interval; whatever the
 * handler then returns or throws is reported, and the SQL core records it without reviving the
 * run (docs/design/worker.md#worker-states-and-parts).
 *
 * @example
 * ```ts
 * import { RunCancelledError } from './errors.ts';
 * const e = new RunCancelledError('3f0c…', 'cancelled', 'customer left');
 * console.assert(e.message.includes('cancelled'));
 * ```
 */
export class RunCancelledError extends SwitchyardError {
  /** The run whose handler is aborted. */
  readonly runId: string;
  /** What the run became: `cancelled` or `failed`. */
  readonly status: string;
  /** The cancel reason or the run's error, if any. */
  readonly reason: string | null;
  /** Creates the error for run `runId`, which is now `status` (for `reason`). */
  constructor(runId: string, status: string, reason: string | null) {
    super(
      `run ${runId} is ${status}${reason ? ` (${reason.split('\n')[0].slice(0, 200)})` : ''}: ` +
        'stop and return, or throw',
    );
    this.name = 'RunCancelledError';
    this.runId = runId;
    this.status = status;
    this.reason = reason;
  }
}

/**
 * Thrown by a step handler: the attempt fails and is retried after `seconds` (0 to 604800,
 * rounded up to whole seconds) instead of the step's backoff; the retry still uses an attempt,
 * so `maxAttempts` bounds it. When the step has a `rateLimit`, the limit's tokens are drained
 * too, so every step sharing it waits as long (an HTTP 429's `Retry-After`;
 * docs/design/claim.md#dispatch-and-completion,
 * docs/design/flow-control.md#rate-limits-and-keyed-concurrency).
 *
 * @example
 * ```ts
 * import { RetryAfter } from './errors.ts';
 * const e = new RetryAfter(30, 'HTTP 429 from the API');
 * console.assert(e.seconds === 30 && e.message.includes('429'));
 * ```
 */
export class RetryAfter extends SwitchyardError {
  /** Whole seconds until the retry. */
  readonly seconds: number;
  /** Creates the error; throws `RangeError` for a delay outside 0 to 604800 seconds. */
  constructor(seconds: number, message?: string) {
    if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= 604800)) {
      throw new RangeError(
        `RetryAfter seconds ${describeValue(seconds)} is invalid: use 0 to 604800 (7 days)`,
      );
    }
    const whole = Math.ceil(seconds);
    super(message ?? `retry after ${whole}s`);
    this.name = 'RetryAfter';
    this.seconds = whole;
  }
}

/**
 * Thrown by a step handler: the task fails now, its remaining attempts unused, as a task out of
 * attempts does (the run fails, or the step's `whenExhausted` skips it;
 * docs/design/claim.md#dispatch-and-completion). For an error no retry can fix, such as an HTTP
 * 400.
 *
 * @example
 * ```ts
 * import { NonRetriable } from './errors.ts';
 * const e = new NonRetriable('HTTP 400: the prompt is empty');
 * console.assert(e.name === 'NonRetriable');
 * ```
 */
export class NonRetriable extends SwitchyardError {
  /** Creates the error with its message. */
  constructor(message: string) {
    super(message);
    this.name = 'NonRetriable';
  }
}

/**
 * The worker's function is paused; it starts nothing until resumed.
 *
 * @example
 * ```ts
 * import { FunctionPausedError } from './errors.ts';
 * const e = new FunctionPausedError('classify-worker', 'unsupported work on queue classify');
 * console.assert(e.reason.startsWith('unsupported'));
 * ```
 */
export class FunctionPausedError extends SwitchyardError {
  /** The paused queue function. */
  readonly functionName: string;
  /** Why it was paused. */
  readonly reason: string;
  /** Creates the error for a function and its pause reason. */
  constructor(functionName: string, reason: string) {
    super(`function "${functionName}" is paused: ${reason}`);
    this.name = 'FunctionPausedError';
    this.functionName = functionName;
    this.reason = reason;
  }
}

/**
 * The worker's function is disabled (for example inside a fenced rollout).
 *
 * @example
 * ```ts
 * import { FunctionDisabledError } from './errors.ts';
 * console.assert(new FunctionDisabledError('classify-worker').functionName === 'classify-worker');
 * ```
 */
export class FunctionDisabledError extends SwitchyardError {
  /** The disabled queue function. */
  readonly functionName: string;
  /** Creates the error for a function. */
  constructor(functionName: string) {
    super(`function "${functionName}" is disabled; a fenced rollout re-enables it when it ends`);
    this.name = 'FunctionDisabledError';
    this.functionName = functionName;
  }
}

// Errors of operator calls (pause, resume, fence, keep-alive, drain)

/**
 * An operation the database refused: the message names the value and the rule,
 * `code` is the SQLSTATE and `hint` the server's hint, when it gave one.
 *
 * @example
 * ```ts
 * import { OperationError } from './errors.ts';
 * const e = new OperationError('keep_alive: debounce_seconds -1 is invalid', '22023');
 * console.assert(e.code === '22023');
 * ```
 */
export class OperationError extends SwitchyardError {
  /** The SQLSTATE the server raised. */
  readonly code: string;
  /** What to do about it, when the server said. */
  readonly hint: string | undefined;
  /** The structured detail the SQL core attached (the JSON object in `DETAIL`), or `{}`. */
  readonly detail: Readonly<Record<string, unknown>>;
  /** Creates the error from the server's message, SQLSTATE, hint and structured detail. */
  constructor(
    message: string,
    code: string,
    hint?: string,
    options?: ErrorOptions & { detail?: Record<string, unknown> },
  ) {
    super(message, options);
    this.name = 'OperationError';
    this.code = code;
    this.hint = hint;
    this.detail = options?.detail ?? {};
  }
}

/**
 * A function name that no `switchyard.worker_functions` row has.
 *
 * @example
 * ```ts
 * import { UnknownFunctionError } from './errors.ts';
 * const e = new UnknownFunctionError(['nope-worker'], 'unknown function "nope-worker"');
 * console.assert(e.functionNames[0] === 'nope-worker');
 * ```
 */
export class UnknownFunctionError extends OperationError {
  /** Every unknown name. */
  readonly functionNames: string[];
  /** Creates the error for the unknown names, with the server's message. */
  constructor(functionNames: string[], message: string, options?: ErrorOptions) {
    super(message, 'SY003', undefined, options);
    this.name = 'UnknownFunctionError';
    this.functionNames = functionNames;
  }
}

/**
 * A fence operation out of order: `fence_begin` while a fence is open (fences do
 * not nest), or `fence_end` while none is.
 *
 * @example
 * ```ts
 * import { FenceStateError } from './errors.ts';
 * const e = new FenceStateError('fence_end: no fence is open', 'SY011');
 * console.assert(e.fenceOpen === false);
 * ```
 */
export class FenceStateError extends OperationError {
  /** True when the refusal was because a fence is open, false because none is. */
  readonly fenceOpen: boolean;
  /** Creates the error; `SY010`: a fence is open, `SY011`: none is. */
  constructor(message: string, code: 'SY010' | 'SY011', hint?: string, options?: ErrorOptions) {
    super(message, code, hint, options);
    this.name = 'FenceStateError';
    this.fenceOpen = code === 'SY010';
  }
}

/**
 * `waitForFence` ran out of time: some fenced function still has a live worker
 * or a started task of one. The fence stays open.
 *
 * @example
 * ```ts
 * import { FenceTimeoutError } from './errors.ts';
 * const e = new FenceTimeoutError(5_000, null);
 * console.assert(e.timeoutMs === 5_000);
 * ```
 */
export class FenceTimeoutError extends SwitchyardError {
  /** How long the wait lasted. */
  readonly timeoutMs: number;
  /** The last status read (null when the fence was closed meanwhile). */
  readonly status: FenceStatus | null;
  /** Creates the error naming every function that is not quiet yet. */
  constructor(timeoutMs: number, status: FenceStatus | null) {
    const busy = status?.functions.filter((f) => !f.quiet) ?? [];
    super(
      `fence ${status?.fenceId ?? '(closed)'} is not quiet after ${timeoutMs / 1000} s: ` +
        (busy.length
          ? busy.map((f) =>
            `"${f.functionName}" has ${f.liveWorkers} live worker(s) and ${f.startedTasks} started task(s)`
          ).join('; ')
          : 'the fence was closed meanwhile') +
        '; the fence stays open: wait again, or find the worker that does not stop',
    );
    this.name = 'FenceTimeoutError';
    this.timeoutMs = timeoutMs;
    this.status = status;
  }
}

/**
 * `schedule_keep_alive` and `schedule_prune` need pg_cron in the current database.
 *
 * @example
 * ```ts
 * import { PgCronMissingError } from './errors.ts';
 * const e = new PgCronMissingError('schedule_keep_alive: pg_cron is not installed in database "app"');
 * console.assert(e.code === 'SY020');
 * ```
 */
export class PgCronMissingError extends OperationError {
  /** Creates the error from the server's message and hint. */
  constructor(message: string, hint?: string, options?: ErrorOptions) {
    super(message, 'SY020', hint, options);
    this.name = 'PgCronMissingError';
  }
}

/**
 * Migrations could not be applied; the message carries the file and the server's words.
 *
 * @example
 * ```ts
 * import { MigrationError, SwitchyardError } from './errors.ts';
 * const e = new MigrationError('supabase db push failed in 20261201000300_tables.sql');
 * console.assert(e instanceof SwitchyardError);
 * ```
 */
export class MigrationError extends SwitchyardError {
  /** Creates the error with a message naming the file and the server's words. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

// Errors of runs followed by the client (docs/design/client.md)

/**
 * A run ended without an output: it failed (a step used all its attempts) or was cancelled.
 * `run.output()` rejects with it.
 *
 * @example
 * ```ts
 * import { RunFailedError } from './errors.ts';
 * const e = new RunFailedError(crypto.randomUUID(), 'failed', 'step a failed after 3 attempt(s)');
 * console.assert(e.status === 'failed');
 * ```
 */
export class RunFailedError extends SwitchyardError {
  /** The run. */
  readonly runId: string;
  /** How it ended. */
  readonly status: 'failed' | 'cancelled';
  /**
   * The run's stored error: why it failed, or `cancelled: <reason>` (as `runStatus` reads it).
   * `message` says it once for a reader: `run <id> was cancelled: <reason>`.
   */
  readonly error: string | null;
  /** Creates the error for a run, how it ended and its error text. */
  constructor(runId: string, status: 'failed' | 'cancelled', error: string | null) {
    super(
      status === 'failed'
        ? `run ${runId} failed: ${error ?? 'no error recorded'}` +
          ' (retry it with client.retry(runId) or npx switchyard retry)'
        // The stored error is `cancelled: <reason>`: the reason once.
        : `run ${runId} was cancelled: ${
          error?.replace(/^cancelled: /, '') || 'no reason recorded'
        }`,
    );
    this.name = 'RunFailedError';
    this.runId = runId;
    this.status = status;
    this.error = error;
  }
}

/**
 * A test engine (`switchyard/testing`, docs/design/clock.md#the-test-engine) found a run other than
 * a test
 * expected: not completed when its output was asked for, not failed or cancelled when its failure
 * was, or no such run. The message is the run's story for a reader: its id, flow and status, each
 * step with its status, attempts and error, the run's events, and the engine's time.
 *
 * @example
 * ```ts
 * import { RunStateError } from './errors.ts';
 * const e = new RunStateError('00000000-0000-4000-8000-000000000001', 'failed', 'run ... failed');
 * console.assert(e.status === 'failed');
 * ```
 */
export class RunStateError extends SwitchyardError {
  /** The run. */
  readonly runId: string;
  /** Where the run is, or null when there is no such run. */
  readonly status: 'started' | 'completed' | 'failed' | 'cancelled' | null;
  /** Creates the error for a run, where it is and the engine's account of it. */
  constructor(
    runId: string,
    status: 'started' | 'completed' | 'failed' | 'cancelled' | null,
    message: string,
  ) {
    super(message);
    this.name = 'RunStateError';
    this.runId = runId;
    this.status = status;
  }
}

/**
 * There is no run with this id (never started, or deleted with its flow or by a prune).
 *
 * @example
 * ```ts
 * import { RunNotFoundError } from './errors.ts';
 * const e = new RunNotFoundError('00000000-0000-4000-8000-000000000000');
 * console.assert(e.runId.startsWith('0000'));
 * ```
 */
export class RunNotFoundError extends OperationError {
  /** The id that names no run. */
  readonly runId: string;
  /**
   * Creates the error for a run id. The client's reads throw it, and so do cancel and retry
   * (the SQL core's `run_unknown`, code `22023`): one class for a missing run everywhere.
   */
  constructor(runId: string, options?: ErrorOptions) {
    super(
      `run ${runId} does not exist: start it first, or it was deleted with its flow or by a prune`,
      '22023',
      undefined,
      { ...options, detail: { rule: 'run_unknown', argument: 'run_id', value: runId } },
    );
    this.name = 'RunNotFoundError';
    this.runId = runId;
  }
}

/**
 * A wait for a run ran out of time; the run goes on.
 *
 * @example
 * ```ts
 * import { RunTimeoutError } from './errors.ts';
 * const e = new RunTimeoutError(crypto.randomUUID(), 5_000, 'started');
 * console.assert(e.timeoutMs === 5_000);
 * ```
 */
export class RunTimeoutError extends SwitchyardError {
  /** The run. */
  readonly runId: string;
  /** How long the wait lasted. */
  readonly timeoutMs: number;
  /** Where the run was at the last read. */
  readonly status: string;
  /** Creates the error for a run, the wait's length and the run's last status. */
  constructor(runId: string, timeoutMs: number, status: string) {
    super(
      `run ${runId} is still ${status} after ${timeoutMs} ms: it goes on; wait again with ` +
        'a longer timeoutMs, or look at run.status()',
    );
    this.name = 'RunTimeoutError';
    this.runId = runId;
    this.timeoutMs = timeoutMs;
    this.status = status;
  }
}
