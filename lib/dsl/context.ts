/**
 * What a step handler receives besides its input (docs/design/claim.md#dispatch-and-completion):
 * `StepContext`
 * and the structural types of the clients it hands out (`HandlerSql`, `HandlerSupabase`,
 * `HandlerEnv`). The DSL describes them structurally because it imports no database or npm
 * code; the worker (`lib/worker/handler_resources.ts`) provides them.
 *
 * @module
 */

/**
 * A row of a query result: column name → value.
 *
 * @example
 * ```ts
 * import type { SqlRow } from './context.ts';
 *
 * const row: SqlRow = { id: 1, name: 'a' };
 * ```
 */
export type SqlRow = Record<string, unknown>;

/**
 * The part of a postgres.js client a handler uses through `ctx.sql`: tagged-template queries,
 * `unsafe`, `begin` and `json`. It is the worker's own postgres.js pool for handlers (see
 * {@linkcode StepContext.sql}); the DSL describes it structurally because it imports no
 * database code. For the full postgres.js type, cast: `ctx.sql as unknown as Sql` with `Sql`
 * from `switchyard/ops.ts`.
 *
 * @example
 * ```ts
 * import type { HandlerSql } from './context.ts';
 *
 * async function countUsers(sql: HandlerSql): Promise<number> {
 *   const [row] = await sql<{ n: number }[]>`select count(*)::int as n from auth.users`;
 *   return row.n;
 * }
 * ```
 */
export interface HandlerSql {
  /** Runs a query; interpolated values are sent as parameters, never spliced into the text. */
  <T extends readonly object[] = SqlRow[]>(
    template: TemplateStringsArray,
    ...parameters: readonly unknown[]
  ): Promise<T>;
  /** Runs a query given as text, with `$1`-style parameters. */
  unsafe<T extends readonly object[] = SqlRow[]>(
    query: string,
    parameters?: readonly unknown[],
  ): Promise<T>;
  /** Runs `fn` in a transaction on one connection; commits when it resolves. */
  begin<T>(fn: (sql: HandlerSql) => T | Promise<T>): Promise<T>;
  /** Marks a value to be sent as `json`. */
  json(value: unknown): unknown;
}

/**
 * The part of a supabase-js client a handler uses through `ctx.supabase`. The DSL describes it
 * structurally because it imports no npm code; the object is a real `SupabaseClient`, so for
 * its full types cast: `ctx.supabase as SupabaseClient | undefined` (from
 * `@supabase/supabase-js`).
 *
 * @example
 * ```ts
 * import type { HandlerSupabase } from './context.ts';
 *
 * async function profile(supabase: HandlerSupabase, id: string) {
 *   const { data, error } = await supabase.from('profiles').select('*').eq('id', id).single();
 *   if (error) throw error;
 *   return data;
 * }
 * ```
 */
export interface HandlerSupabase {
  // supabase-js' builders are deeply generic; their results are `any` here on purpose.
  /** A query builder on a table or view. */
  // deno-lint-ignore no-explicit-any
  from(relation: string): any;
  /** Calls a PostgreSQL function through PostgREST. */
  // deno-lint-ignore no-explicit-any
  rpc(fn: string, args?: object, options?: object): any;
  /** The client for another exposed schema. */
  // deno-lint-ignore no-explicit-any
  schema(schema: string): any;
  /** Storage buckets and objects. */
  // deno-lint-ignore no-explicit-any
  readonly storage: any;
  /** Invokes Edge Functions. */
  // deno-lint-ignore no-explicit-any
  readonly functions: any;
  /** Auth (the service role client: admin calls). */
  // deno-lint-ignore no-explicit-any
  readonly auth: any;
}

/**
 * Read-only access to the environment of the worker (secrets on Supabase).
 *
 * @example
 * ```ts
 * import type { HandlerEnv } from './context.ts';
 *
 * function webhook(env: HandlerEnv): string | undefined {
 *   return env.get('SLACK_WEBHOOK_URL');
 * }
 * ```
 */
export interface HandlerEnv {
  /** The variable's value, or `undefined` when unset (or not readable). */
  get(name: string): string | undefined;
}

/**
 * What a step handler receives besides its input (docs/design/claim.md#dispatch-and-completion).
 *
 * @example
 * ```ts
 * import type { StepContext } from './context.ts';
 *
 * async function log(ctx: StepContext<{ url: string }>) {
 *   console.log(ctx.runId, ctx.stepSlug, ctx.taskIndex, ctx.attempt, ctx.flowInput.url);
 *   const [{ now }] = await ctx.sql<{ now: Date }[]>`select now()`;
 *   if (ctx.supabase) await ctx.supabase.from('audit').insert({ run: ctx.runId, at: now });
 *   console.log(ctx.env.get('SLACK_WEBHOOK_URL') ? 'will post' : 'dry run');
 * }
 * ```
 */
export interface StepContext<Input> {
  /** The run this task belongs to. */
  readonly runId: string;
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The step being executed. */
  readonly stepSlug: string;
  /** The task's position: the element index of a map step's task, 0 for an ordinary step. */
  readonly taskIndex: number;
  /** The attempt number, starting at 1. */
  readonly attempt: number;
  /** The input the run was started with. */
  readonly flowInput: Input;
  /**
   * Aborted when the task times out (the reason is the timeout error) or the worker shuts down
   * (the reason is a `WorkerShutdownError`): stop and return within the worker's
   * `shutdownGraceMs` to complete, or throw the reason (after a checkpoint, to keep your place)
   * to hand the task back with the attempt refunded, within bounds
   * (docs/design/worker.md#worker-states-and-parts);
   * another error, or still running after the grace period with no checkpoint, uses the attempt.
   */
  readonly signal: AbortSignal;
  /**
   * Milliseconds left in this runtime instance: until the worker's `wallClockMs` runs out, or
   * until the grace period of a stop (`beforeunload`) ends; `Infinity` with neither. A long
   * handler checks it between chunks of work and checkpoints before it runs out.
   */
  readonly deadline: number;
  /**
   * Saves the task's position in its work (bounded JSON, at most 256 KiB of text:
   * `switchyard.max_checkpoint_bytes()`), and keeps its message hidden for another timeout. The
   * next attempt, on any worker, reads it with {@linkcode StepContext.resume}: after this
   * instance ends (the task handed back with its attempt refunded) or after a crash (stall
   * recovery). Rejects, naming the size and the limit, for a larger state; a handler that does
   * not catch that fails its attempt with it.
   */
  checkpoint(state: unknown): Promise<void>;
  /**
   * The state the last {@linkcode StepContext.checkpoint} of this task saved, or undefined. A
   * checkpoint survives failed attempts and a retry of the run, so a task resumes where it was;
   * {@linkcode StepContext.clearCheckpoint} (or `retryRun(..., { resetCheckpoints: true })`)
   * starts it over.
   */
  resume<T = unknown>(): Promise<T | undefined>;
  /**
   * Deletes this task's checkpoint, so the next attempt's {@linkcode StepContext.resume} reads
   * nothing: for a handler that finds its saved state bad (e.g. it failed on it before,
   * `ctx.attempt > 1`). Resolves with whether there was one; rejects, as `checkpoint` does, once
   * the attempt no longer holds the task.
   */
  clearCheckpoint(): Promise<boolean>;
  /**
   * Reports progress to whoever follows the run (docs/design/observability.md): appends a
   * `progress` event to the run's events (`switchyard.report_progress`), in order with its
   * transitions, readable under the same row-level security, with `data` and this task's index;
   * resolves with the event's id. `data` is JSON of at most 8 KiB of text (`max_progress_bytes`)
   * and a task reports at most 20 events in any second (`progress_per_second`): beyond either it
   * rejects naming the value and the limit, as it does once the attempt no longer holds the task
   * or the run ended. Nothing is written for a handler that never calls it.
   */
  progress(data: unknown): Promise<number>;
  /** Read-only environment variables of the worker. */
  readonly env: HandlerEnv;
  /**
   * A postgres.js client for the handler's own queries: a pool the worker opens on first use
   * (at most `maxConnections` connections and never more than `maxConcurrent`, same connection
   * string as the worker) and closes when it stops, separate from the worker's own pool so that
   * a handler's queries never hold up claims, completions or heartbeats. A worker given an
   * existing client (`sql` option) hands out that client instead.
   */
  readonly sql: HandlerSql;
  /**
   * A supabase-js client built from `SUPABASE_URL` and `SUPABASE_SERVICE_ROLE_KEY` (service
   * role: it bypasses row-level security) when both are set; absent otherwise.
   */
  readonly supabase?: HandlerSupabase;
}
