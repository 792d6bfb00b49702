/**
 * `Flow`: an immutable, typed builder for a DAG of steps and their handlers — *what* runs.
 * Where each step runs is decided separately by a placement (`withStepQueues()`,
 * `routeFlow()`), and how callers find it by `defineDeployedFlow()`.
 *
 * Steps are added in order and may only depend on steps added before them, so a flow is
 * acyclic by construction. A root step (no `dependsOn`) receives the flow input; a dependent
 * step receives `{ [dependency]: output }`. The concrete slug is the version: change the
 * shape, and you give the flow a new slug (`communityThreadsV2`).
 *
 * @module
 */

import { describeValue, FlowDefinitionError } from '../errors.ts';
import { assertJson, type JsonValue } from './json.ts';
import { assertFlowSlug, assertStepSlug, type ValidSlug } from './slugs.ts';

/**
 * Options of a flow: its slug and the defaults its steps inherit.
 *
 * @example
 * ```ts
 * import type { FlowOptions } from './flow.ts';
 *
 * const options: FlowOptions = { slug: 'threads', maxAttempts: 5, timeout: 120 };
 * ```
 */
export interface FlowOptions {
  /** The concrete flow slug (the version): letters, digits, single underscores. */
  slug: string;
  /** Attempts per task, 1 to 1000. Default 3. */
  maxAttempts?: number;
  /** Base of the exponential retry backoff, in seconds, 0 to 86400. Default 1. */
  baseDelay?: number;
  /**
   * The longest retry delay, in seconds, 0 to 604800 (7 days): a retry waits
   * `min(baseDelay * 2^(attempt - 1), maxDelay)`. Default 86400 (1 day).
   */
  maxDelay?: number;
  /** Time a task may run before it is considered stalled, in seconds, 1 to 86400. Default 60. */
  timeout?: number;
}

/**
 * The resolved options of a flow, defaults applied.
 *
 * @example
 * ```ts
 * import { Flow, type ResolvedFlowOptions } from './flow.ts';
 *
 * const options: ResolvedFlowOptions = new Flow({ slug: 'f' }).options;
 * // { maxAttempts: 3, baseDelay: 1, maxDelay: 86400, timeout: 60 }
 * ```
 */
export interface ResolvedFlowOptions {
  /** Attempts per task. */
  readonly maxAttempts: number;
  /** Base of the exponential retry backoff, in seconds. */
  readonly baseDelay: number;
  /** The longest retry delay, in seconds. */
  readonly maxDelay: number;
  /** Task timeout, in seconds. */
  readonly timeout: number;
}

/**
 * What happens when a step's condition (`if` / `ifNot`) is not met (docs/ARCHITECTURE.md §5.9):
 * `skip` skips the step (dependents run without its output), `skip-cascade` skips it and every
 * step that depends on it, `fail` fails the run.
 *
 * @example
 * ```ts
 * import type { WhenUnmet } from './flow.ts';
 *
 * const mode: WhenUnmet = 'skip-cascade';
 * ```
 */
export type WhenUnmet = 'skip' | 'skip-cascade' | 'fail';

/**
 * What happens when a task used its last attempt (docs/ARCHITECTURE.md §5.9): `fail` fails the
 * run, `skip` skips the step (dependents run without its output), `skip-cascade` skips it and
 * every step that depends on it, and the run goes on without them.
 *
 * @example
 * ```ts
 * import type { WhenExhausted } from './flow.ts';
 *
 * const mode: WhenExhausted = 'skip-cascade';
 * ```
 */
export type WhenExhausted = 'fail' | 'skip' | 'skip-cascade';

/**
 * A JSON containment pattern over `T`, as PostgreSQL's `jsonb @>` reads it: any subset of the
 * object's keys, nested; arrays hold patterns of their elements (an array pattern matches when
 * every pattern element is contained in some element of the array).
 *
 * @example
 * ```ts
 * import type { ContainmentPattern } from './flow.ts';
 *
 * type Ticket = { plan: 'free' | 'pro'; tags: string[]; user: { id: string } };
 * const pro: ContainmentPattern<Ticket> = { plan: 'pro' };
 * const tagged: ContainmentPattern<Ticket> = { tags: ['urgent'], user: { id: 'u1' } };
 * ```
 */
export type ContainmentPattern<T> = T extends readonly (infer E)[]
  ? readonly ContainmentPattern<E>[]
  : T extends object ? { readonly [K in keyof T]?: ContainmentPattern<T[K]> }
  : T;

/**
 * Type-level check that pattern `P` names only keys its step input `S` has (at every depth);
 * an unknown key becomes `never`, so a misspelt condition key fails type checking. An input of
 * type `unknown` accepts any pattern. For a union input, the keys of every member count, and a
 * key's pattern is checked against the members that have it.
 *
 * @example
 * ```ts
 * import type { ExactPattern } from './flow.ts';
 *
 * type Ok = ExactPattern<{ plan: 'pro' }, { plan?: 'free' | 'pro' }>;
 * type Typo = ExactPattern<{ plann: 'pro' }, { plan?: 'free' | 'pro' }>; // { plann: never }
 * ```
 */
export type ExactPattern<P, S> = unknown extends S ? unknown
  : P extends readonly unknown[] ? unknown
  : P extends object ?
      & { readonly [K in Exclude<keyof P, S extends unknown ? keyof S : never>]: never }
      & {
        readonly [K in keyof P & (S extends unknown ? keyof S : never)]?: ExactPattern<
          P[K],
          NonNullable<S extends unknown ? K extends keyof S ? S[K] : never : never>
        >;
      }
  : unknown;

/**
 * Whether a step may end `skipped` while its dependents still run: a condition with
 * `whenUnmet: 'skip'` (the default), or `whenExhausted: 'skip'`. With `skip-cascade` (either
 * option) its dependents are skipped too, so when one runs the output is there.
 *
 * @example
 * ```ts
 * import type { MaySkip } from './flow.ts';
 *
 * type A = MaySkip<{ plan: 'pro' }, never, 'skip', 'fail'>; // true
 * type B = MaySkip<{ plan: 'pro' }, never, 'skip-cascade', 'fail'>; // false
 * type C = MaySkip<never, never, 'skip', 'skip'>; // true
 * type D = MaySkip<never, never, 'skip', 'skip-cascade'>; // false
 * ```
 */
export type MaySkip<If, IfNot, Unmet extends WhenUnmet, Exhausted extends WhenExhausted> =
  [Exhausted] extends ['fail' | 'skip-cascade'] ? [If | IfNot] extends [never] ? false
    : [Unmet] extends ['skip'] ? true
    : false
    : true;

/**
 * The output type a step's dependents see: `Out`, or `Out | undefined` when the step may be
 * skipped (see {@linkcode MaySkip}): a skipped step's output is absent.
 *
 * @example
 * ```ts
 * import type { SeenOutput } from './flow.ts';
 *
 * type Always = SeenOutput<number, never, never, 'skip', 'fail'>; // number
 * type Maybe = SeenOutput<number, { plan: 'pro' }, never, 'skip', 'fail'>; // number | undefined
 * ```
 */
export type SeenOutput<
  Out,
  If,
  IfNot,
  Unmet extends WhenUnmet,
  Exhausted extends WhenExhausted,
> = MaySkip<If, IfNot, Unmet, Exhausted> extends true ? Out | undefined : Out;

/**
 * The resolved options of a step: `null` means "inherit from the flow" (or, for `if` and
 * `ifNot`, no pattern).
 *
 * @example
 * ```ts
 * import type { StepOptions } from './flow.ts';
 *
 * const options: StepOptions = {
 *   maxAttempts: null,
 *   baseDelay: null,
 *   maxDelay: null,
 *   timeout: 30,
 *   startDelay: 0,
 *   if: { plan: 'pro' },
 *   ifNot: null,
 *   whenUnmet: 'skip',
 *   whenExhausted: 'fail',
 * };
 * ```
 */
export interface StepOptions {
  /** Attempts per task, or `null` to inherit. */
  readonly maxAttempts: number | null;
  /** Retry backoff base in seconds, or `null` to inherit. */
  readonly baseDelay: number | null;
  /** The longest retry delay in seconds, or `null` to inherit. */
  readonly maxDelay: number | null;
  /** Task timeout in seconds, or `null` to inherit. */
  readonly timeout: number | null;
  /** Seconds to wait before the step's first task becomes visible. */
  readonly startDelay: number;
  /** The step runs only when its input contains this JSON pattern (`@>`); `null`: no pattern. */
  readonly if: JsonValue | null;
  /** The step runs only when its input does not contain this pattern; `null`: no pattern. */
  readonly ifNot: JsonValue | null;
  /** What an unmet condition does. */
  readonly whenUnmet: WhenUnmet;
  /** What a task out of attempts does. */
  readonly whenExhausted: WhenExhausted;
}

/**
 * A row of a query result: column name → value.
 *
 * @example
 * ```ts
 * import type { SqlRow } from './flow.ts';
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
 * import type { HandlerSql } from './flow.ts';
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
 * import type { HandlerSupabase } from './flow.ts';
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
 * import type { HandlerEnv } from './flow.ts';
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
 * What a step handler receives besides its input (docs/ARCHITECTURE.md §5.5).
 *
 * @example
 * ```ts
 * import type { StepContext } from './flow.ts';
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
   * `shutdownGraceMs` to complete, or throw to hand the task back with the attempt refunded.
   */
  readonly signal: AbortSignal;
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

/**
 * One step as the worker sees it: slug, position, dependencies, options and handler.
 *
 * @example
 * ```ts
 * import { Flow, type StepDefinition } from './flow.ts';
 *
 * const flow = new Flow<{ n: number }>({ slug: 'f' }).step({ slug: 'a' }, (input) => input.n);
 * const step: StepDefinition | undefined = flow.getStep('a');
 * console.assert(step?.index === 0);
 * ```
 */
export interface StepDefinition {
  /** The step slug. */
  readonly slug: string;
  /** 0-based position in the order the steps were added. */
  readonly index: number;
  /**
   * `single`: one task; `map`: one task per element of an array (docs/ARCHITECTURE.md §5.10),
   * the flow input when `dependsOn` is empty, else the output of its one dependency.
   */
  readonly kind: StepKind;
  /** Slugs of the steps this one depends on, in the order given. */
  readonly dependsOn: readonly string[];
  /** Step options; `null` means inherit from the flow. */
  readonly options: StepOptions;
  /**
   * The handler, untyped: the worker builds the input from the flow input or dependencies (a
   * map step: one element).
   */
  readonly handler: (input: unknown, context: StepContext<unknown>) => unknown;
}

/**
 * How a step runs: `single` (one task) or `map` (one task per array element).
 *
 * @example
 * ```ts
 * import type { StepKind } from './flow.ts';
 *
 * const kind: StepKind = 'map';
 * ```
 */
export type StepKind = 'single' | 'map';

/**
 * Options of `Flow.step()`.
 *
 * @example
 * ```ts
 * import type { StepConfig } from './flow.ts';
 *
 * const config: StepConfig<'summarize', readonly ['fetch']> = {
 *   slug: 'summarize',
 *   dependsOn: ['fetch'],
 *   timeout: 300,
 * };
 * ```
 */
export interface StepConfig<Slug extends string, Deps extends readonly string[]> {
  /** The step slug, unique (case-insensitively) within the flow; `run` is reserved. */
  slug: Slug;
  /** Slugs of earlier steps whose outputs this step receives. Empty or absent: a root step. */
  dependsOn?: Deps;
  /** Attempts per task, 1 to 1000. Absent: inherit from the flow. */
  maxAttempts?: number;
  /** Retry backoff base in seconds, 0 to 86400. Absent: inherit from the flow. */
  baseDelay?: number;
  /** The longest retry delay in seconds, 0 to 604800. Absent: inherit from the flow. */
  maxDelay?: number;
  /** Task timeout in seconds, 1 to 86400. Absent: inherit from the flow. */
  timeout?: number;
  /** Seconds before the step's first task becomes visible, 0 to 86400. Default 0. */
  startDelay?: number;
  /**
   * Run the step only when its input contains this JSON pattern (PostgreSQL `@>`, evaluated in
   * SQL when the step becomes ready; docs/ARCHITECTURE.md §5.9). The input is the flow input
   * for a root step, else the object of dependency outputs.
   */
  if?: JsonValue;
  /** Run the step only when its input does not contain this JSON pattern. */
  ifNot?: JsonValue;
  /** What an unmet condition does: `skip` (default), `skip-cascade` or `fail`. Needs if/ifNot. */
  whenUnmet?: WhenUnmet;
  /**
   * What a task out of attempts does: `fail` (default) fails the run, `skip` skips the step,
   * `skip-cascade` skips it and its dependents.
   */
  whenExhausted?: WhenExhausted;
}

/**
 * The condition options of a step, typed against its input `SI`: patterns of the input's own
 * keys (see {@linkcode ContainmentPattern} and {@linkcode ExactPattern}) and the two modes as
 * literals, which decide the output type dependents see ({@linkcode SeenOutput}).
 *
 * @example
 * ```ts
 * import type { ConditionConfig } from './flow.ts';
 *
 * type In = { plan: 'free' | 'pro' };
 * const config: ConditionConfig<In, { plan: 'pro' }, never, 'fail', 'fail'> = {
 *   if: { plan: 'pro' },
 *   whenUnmet: 'fail',
 * };
 * ```
 */
export interface ConditionConfig<
  SI,
  If,
  IfNot,
  Unmet extends WhenUnmet,
  Exhausted extends WhenExhausted,
> {
  /** See {@linkcode StepConfig.if}. */
  if?: If & ExactPattern<If, ContainmentPattern<SI>>;
  /** See {@linkcode StepConfig.ifNot}. */
  ifNot?: IfNot & ExactPattern<IfNot, ContainmentPattern<SI>>;
  /** See {@linkcode StepConfig.whenUnmet}. */
  whenUnmet?: Unmet;
  /** See {@linkcode StepConfig.whenExhausted}. */
  whenExhausted?: Exhausted;
}

/**
 * The input of a step handler: the flow input for a root step, else an object keyed by
 * dependency slug holding each dependency's output.
 *
 * @example
 * ```ts
 * import type { StepInput } from './flow.ts';
 *
 * type Root = StepInput<{ url: string }, { fetch: string }, readonly []>; // { url: string }
 * type Dep = StepInput<{ url: string }, { fetch: string }, readonly ['fetch']>; // { fetch: string }
 * ```
 */
export type StepInput<
  Input,
  Steps extends Record<string, unknown>,
  Deps extends readonly (keyof Steps)[],
> = [Deps[number]] extends [never] ? Input : { [K in Deps[number]]: Steps[K] };

/**
 * The slugs of a flow's steps whose output is an array: what a map step's `array` may name.
 *
 * @example
 * ```ts
 * import type { ArrayStepSlugs } from './flow.ts';
 *
 * type Outputs = { urls: string[]; count: number; pages: { n: number }[] };
 * type S = ArrayStepSlugs<Outputs>; // 'urls' | 'pages'
 * ```
 */
export type ArrayStepSlugs<Steps extends Record<string, unknown>> = {
  [K in keyof Steps & string]: Steps[K] extends readonly unknown[] ? K : never;
}[keyof Steps & string];

/**
 * The element type a map step's handler receives: an element of the named step's output, or,
 * for a root map (`Source` is `never`), of the flow input.
 *
 * @example
 * ```ts
 * import type { MapItem } from './flow.ts';
 *
 * type FromStep = MapItem<unknown, { urls: string[] }, 'urls'>; // string
 * type FromInput = MapItem<{ id: number }[], {}, never>; // { id: number }
 * ```
 */
export type MapItem<Input, Steps extends Record<string, unknown>, Source extends keyof Steps> =
  [Source] extends [never] ? Input extends readonly (infer E)[] ? E : never
    : Steps[Source] extends readonly (infer E)[] ? E
    : never;

/**
 * The input a map step's condition is evaluated over: `{ [source]: array }`, or the flow input
 * for a root map.
 *
 * @example
 * ```ts
 * import type { MapInput } from './flow.ts';
 *
 * type I = MapInput<unknown, { urls: string[] }, 'urls'>; // { urls: string[] }
 * ```
 */
export type MapInput<Input, Steps extends Record<string, unknown>, Source extends keyof Steps> =
  [Source] extends [never] ? Input : { [K in Source]: Steps[K] };

/**
 * Options of `Flow.map()`: those of a step, with `array` in place of `dependsOn`.
 *
 * @example
 * ```ts
 * import type { MapConfig } from './flow.ts';
 *
 * const config: MapConfig<'fetch', 'urls'> = { slug: 'fetch', array: 'urls', maxAttempts: 5 };
 * ```
 */
export interface MapConfig<Slug extends string, Source extends string>
  extends Omit<StepConfig<Slug, readonly []>, 'dependsOn'> {
  /**
   * The earlier step whose output (an array) is mapped, one task per element. Absent: a root
   * map over the flow input, which must then be an array.
   */
  array?: Source;
}

/**
 * Type-level check for a root map (no `array`): the flow input must be an array, else the
 * `array` key is demanded with this message.
 *
 * @example
 * ```ts
 * import type { RootMapCheck } from './flow.ts';
 *
 * type Ok = RootMapCheck<string[], never>; // unknown
 * type NotArray = RootMapCheck<{ urls: string[] }, never>; // { array: '...' }
 * ```
 */
export type RootMapCheck<Input, Source> = [Source] extends [never]
  ? Input extends readonly unknown[] ? unknown
  : {
    array: 'a map without array maps the flow input, which is not an array: name an array step';
  }
  : unknown;

/**
 * Type-level step slug check: `Slug` when it is well-formed, new to the flow (case-insensitively)
 * and not reserved, else an error message string type, so the slug literal fails type checking
 * with that message. Every rule is checked again at runtime.
 *
 * @example
 * ```ts
 * import type { NewStepSlug } from './flow.ts';
 *
 * type Ok = NewStepSlug<'b', { a: number }>; // 'b'
 * type Dup = NewStepSlug<'A', { a: number }>; // 'step slug "A" is already used ...'
 * ```
 */
export type NewStepSlug<Slug extends string, Steps extends Record<string, unknown>> = string extends
  Slug ? Slug
  : ValidSlug<Slug, 'step slug'> extends Slug
    ? Lowercase<Slug> extends 'run' ? `step slug "${Slug}" is invalid: "run" is reserved`
    : Lowercase<Slug> extends Lowercase<keyof Steps & string>
      ? `step slug "${Slug}" is already used in this flow (step slugs are unique case-insensitively)`
    : Slug
  : ValidSlug<Slug, 'step slug'>;

declare const flowTypes: unique symbol;

/**
 * Any flow, whatever its input and steps.
 *
 * @example
 * ```ts
 * import type { AnyFlow } from './flow.ts';
 *
 * function slugOf(flow: AnyFlow): string {
 *   return flow.slug;
 * }
 * ```
 */
// deno-lint-ignore no-explicit-any
export type AnyFlow = Flow<any, Record<string, any>, string>;

/**
 * The input type of a flow.
 *
 * @example
 * ```ts
 * import { Flow, type FlowInput } from './flow.ts';
 *
 * const flow = new Flow<{ url: string }>({ slug: 'f' });
 * const input: FlowInput<typeof flow> = { url: 'https://example.com' };
 * ```
 */
// deno-lint-ignore no-explicit-any
export type FlowInput<F extends AnyFlow> = F extends Flow<infer Input, Record<string, any>> ? Input
  : never;

/**
 * The step outputs of a flow: step slug → awaited handler output.
 *
 * @example
 * ```ts
 * import { Flow, type StepOutputs } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1);
 * const outputs: StepOutputs<typeof flow> = { a: 1 };
 * ```
 */
export type StepOutputs<F extends AnyFlow> = F extends Flow<unknown, infer Steps> ? Steps
  : never;

/**
 * The union of a flow's step slug literals.
 *
 * @example
 * ```ts
 * import { Flow, type StepSlugs } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1).step({ slug: 'b' }, () => 2);
 * const slug: StepSlugs<typeof flow> = 'b'; // 'a' | 'b'
 * ```
 */
export type StepSlugs<F extends AnyFlow> = keyof StepOutputs<F> & string;

/**
 * The union of a flow's leaf step slugs: the steps no other step depends on. A completed
 * run's output holds exactly their outputs (docs/ARCHITECTURE.md §5.5).
 *
 * @example
 * ```ts
 * import { Flow, type LeafSlugs } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' })
 *   .step({ slug: 'a' }, () => 1)
 *   .step({ slug: 'b', dependsOn: ['a'] }, () => 2)
 *   .step({ slug: 'c', dependsOn: ['a'] }, () => 3);
 * const leaf: LeafSlugs<typeof flow> = 'c'; // 'b' | 'c'
 * ```
 */
// deno-lint-ignore no-explicit-any
export type LeafSlugs<F extends AnyFlow> = F extends Flow<any, Record<string, any>, infer L> ? L
  : never;

/**
 * The output of a completed run of a flow: the outputs of its leaf steps, keyed by step slug
 * (what `switchyard.complete_tasks` stores in `runs.output`).
 *
 * @example
 * ```ts
 * import { Flow, type FlowOutput } from './flow.ts';
 *
 * const flow = new Flow<{ n: number }>({ slug: 'f' })
 *   .step({ slug: 'a' }, (input) => input.n)
 *   .step({ slug: 'b', dependsOn: ['a'] }, (input) => `${input.a}`);
 * const output: FlowOutput<typeof flow> = { b: '1' };
 * ```
 */
export type FlowOutput<F extends AnyFlow> = F extends Flow<unknown, infer Steps, infer L>
  ? { [K in L & keyof Steps]: Steps[K] }
  : never;

const FLOW_DEFAULTS: ResolvedFlowOptions = Object.freeze({
  maxAttempts: 3,
  baseDelay: 1,
  maxDelay: 86400,
  timeout: 60,
});

/** Option bounds, shared by flows and steps (docs/ARCHITECTURE.md §2). */
const OPTION_RULES = {
  maxAttempts: { min: 1, max: 1000, unit: '' },
  baseDelay: { min: 0, max: 86400, unit: ' seconds' },
  maxDelay: { min: 0, max: 604800, unit: ' seconds' },
  timeout: { min: 1, max: 86400, unit: ' seconds' },
  startDelay: { min: 0, max: 86400, unit: ' seconds' },
} as const;

function checkOption(
  owner: string,
  name: keyof typeof OPTION_RULES,
  value: unknown,
): number | null {
  if (value === undefined) return null;
  const { min, max, unit } = OPTION_RULES[name];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new FlowDefinitionError(
      `${owner} option ${name} ${describeValue(value)} is invalid: use an integer from ` +
        `${min} to ${max}${unit}`,
    );
  }
  return value;
}

const FLOW_OPTION_KEYS = new Set(['slug', 'maxAttempts', 'baseDelay', 'maxDelay', 'timeout']);
const STEP_OPTION_KEYS = new Set([
  'slug',
  'dependsOn',
  'maxAttempts',
  'baseDelay',
  'maxDelay',
  'timeout',
  'startDelay',
  'if',
  'ifNot',
  'whenUnmet',
  'whenExhausted',
]);

const MAP_OPTION_KEYS = new Set(
  [...STEP_OPTION_KEYS].filter((k) => k !== 'dependsOn').concat('array'),
);
/** What #defineStep accepts for a map: its dependsOn is derived from array. */
const MAP_STEP_KEYS = new Set(
  [...MAP_OPTION_KEYS].filter((k) => k !== 'array').concat('dependsOn'),
);

const WHEN_UNMET: readonly WhenUnmet[] = ['skip', 'skip-cascade', 'fail'];
const WHEN_EXHAUSTED: readonly WhenExhausted[] = ['fail', 'skip', 'skip-cascade'];

function checkChoice<T extends string>(
  owner: string,
  name: string,
  value: unknown,
  choices: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !choices.includes(value as T)) {
    throw new FlowDefinitionError(
      `${owner} option ${name} ${describeValue(value)} is invalid: use one of ` +
        choices.map((c) => `'${c}'`).join(', '),
    );
  }
  return value as T;
}

function checkPattern(owner: string, name: string, value: unknown): JsonValue | null {
  if (value === undefined) return null;
  if (value === null) {
    throw new FlowDefinitionError(
      `${owner} option ${name} null is invalid: a condition is a JSON pattern (leave the ` +
        'option out for none)',
    );
  }
  try {
    assertJson(value, `${owner} option ${name}`);
  } catch (e) {
    throw new FlowDefinitionError((e as Error).message);
  }
  return structuredClone(value);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function checkKnownKeys(owner: string, config: object, known: Set<string>): void {
  for (const key of Object.keys(config)) {
    if (!known.has(key)) {
      throw new FlowDefinitionError(
        `${owner} option ${JSON.stringify(key)} is unknown: use one of ${[...known].join(', ')}`,
      );
    }
  }
}

/**
 * An immutable, typed flow definition: a DAG of steps and their handlers.
 *
 * `.step()` returns a new `Flow`; the original is unchanged, so one base flow can be extended
 * in several ways. Every definition error is thrown synchronously by the constructor or
 * `.step()`.
 *
 * @typeParam Input the flow input (what `start_flow` receives), JSON
 * @typeParam Steps step slug → awaited output of its handler (built up by `.step()`)
 * @typeParam Leaves the slugs of the steps no other step depends on (built up by `.step()`)
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 *
 * const diamond = new Flow<{ n: number }>({ slug: 'diamond', maxAttempts: 5 })
 *   .step({ slug: 'a' }, (input) => ({ n: input.n + 1 }))
 *   .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a.n * 2)
 *   .step({ slug: 'c', dependsOn: ['a'], timeout: 10 }, (input) => input.a.n * 3)
 *   .step({ slug: 'd', dependsOn: ['b', 'c'] }, (input) => Promise.resolve(`${input.b + input.c}`));
 *
 * console.assert(diamond.steps.length === 4);
 * ```
 */
export class Flow<
  Input = unknown,
  // deno-lint-ignore ban-types
  Steps extends Record<string, unknown> = {},
  Leaves extends string = keyof Steps & string,
> {
  /** Discriminates a bare flow from placements and deployments. */
  readonly kind = 'flow' as const;

  /** Type-only carrier of the type parameters; absent at runtime. */
  declare readonly [flowTypes]?: {
    readonly input: Input;
    readonly steps: Steps;
    readonly leaves: Leaves;
  };

  #slug: string;
  #options: ResolvedFlowOptions;
  #steps: readonly StepDefinition[];

  /**
   * Creates an empty flow. Throws {@link InvalidSlugError} for a bad slug and
   * {@link FlowDefinitionError} for a bad option.
   */
  constructor(options: FlowOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new FlowDefinitionError(
        `flow options ${describeValue(options)} are invalid: pass an object with a slug`,
      );
    }
    assertFlowSlug(options.slug);
    const owner = `flow "${options.slug}"`;
    checkKnownKeys(owner, options, FLOW_OPTION_KEYS);
    this.#slug = options.slug;
    this.#options = Object.freeze({
      maxAttempts: checkOption(owner, 'maxAttempts', options.maxAttempts) ??
        FLOW_DEFAULTS.maxAttempts,
      baseDelay: checkOption(owner, 'baseDelay', options.baseDelay) ?? FLOW_DEFAULTS.baseDelay,
      maxDelay: checkOption(owner, 'maxDelay', options.maxDelay) ?? FLOW_DEFAULTS.maxDelay,
      timeout: checkOption(owner, 'timeout', options.timeout) ?? FLOW_DEFAULTS.timeout,
    });
    this.#steps = Object.freeze([]);
    Object.freeze(this);
  }

  /** The concrete flow slug (the version). */
  get slug(): string {
    return this.#slug;
  }

  /** The flow options with defaults applied (maxAttempts 3, baseDelay 1, maxDelay 86400, timeout 60). */
  get options(): ResolvedFlowOptions {
    return this.#options;
  }

  /** The steps, in the order they were added (`index` 0, 1, …). */
  get steps(): readonly StepDefinition[] {
    return this.#steps;
  }

  /**
   * The step with exactly this slug, or `undefined`.
   *
   * @example
   * ```ts
   * import { Flow } from './flow.ts';
   *
   * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1);
   * console.assert(flow.getStep('a')?.index === 0);
   * console.assert(flow.getStep('zzz') === undefined);
   * ```
   */
  getStep(slug: string): StepDefinition | undefined {
    return this.#steps.find((step) => step.slug === slug);
  }

  /**
   * Returns a new flow with one more step. The handler's input is typed from the flow input
   * (root step) or from the outputs of `dependsOn`; its awaited return value becomes the
   * step's output type. Throws {@link InvalidSlugError} or {@link FlowDefinitionError} for a
   * malformed, duplicate (case-insensitive) or reserved slug, an unknown or repeated
   * dependency, a bad option or a missing handler.
   *
   * `if` / `ifNot` make the step conditional (evaluated in SQL over the step's input with
   * `@>`; docs/ARCHITECTURE.md §5.9), with `whenUnmet` and `whenExhausted` deciding what an
   * unmet condition and a task out of attempts do. When the step may be skipped while its
   * dependents run, they see its output as `T | undefined` ({@linkcode SeenOutput}).
   *
   * @example
   * ```ts
   * import { Flow } from './flow.ts';
   *
   * const base = new Flow<{ url: string }>({ slug: 'page' });
   * const flow = base
   *   .step({ slug: 'fetch', maxAttempts: 5 }, async (input) => (await fetch(input.url)).status)
   *   .step({ slug: 'report', dependsOn: ['fetch'] }, (input) => ({ ok: input.fetch === 200 }));
   * console.assert(base.steps.length === 0 && flow.steps.length === 2);
   *
   * // Conditional steps: only pro customers get the call, anything but spam gets stored.
   * new Flow<{ plan: 'free' | 'pro'; spam: boolean }>({ slug: 'signup' })
   *   .step({ slug: 'call', if: { plan: 'pro' } }, () => 'booked')
   *   .step({ slug: 'store', ifNot: { spam: true }, whenUnmet: 'fail' }, () => 'stored')
   *   .step({ slug: 'report', dependsOn: ['call', 'store'] }, (input) => ({
   *     call: input.call ?? 'not a pro customer', // string | undefined: call may be skipped
   *     store: input.store, // string: an unmet condition fails the run instead
   *   }));
   * ```
   */
  step<
    const Slug extends string,
    const Deps extends readonly (keyof Steps & string)[] = readonly [],
    Out = unknown,
    const If extends ContainmentPattern<StepInput<Input, Steps, Deps>> = never,
    const IfNot extends ContainmentPattern<StepInput<Input, Steps, Deps>> = never,
    const Unmet extends WhenUnmet = 'skip',
    const Exhausted extends WhenExhausted = 'fail',
  >(
    config:
      & Omit<StepConfig<Slug, Deps>, 'slug' | 'if' | 'ifNot' | 'whenUnmet' | 'whenExhausted'>
      & { slug: NewStepSlug<Slug, Steps> }
      & ConditionConfig<StepInput<Input, Steps, Deps>, If, IfNot, Unmet, Exhausted>,
    handler: (input: StepInput<Input, Steps, Deps>, context: StepContext<Input>) => Out,
  ): Flow<
    Input,
    {
      [K in keyof Steps | Slug]: K extends Slug
        ? SeenOutput<Awaited<Out>, If, IfNot, Unmet, Exhausted>
        : Steps[K];
    },
    Exclude<Leaves, Deps[number]> | Slug
  > {
    const definition = this.#defineStep(config, handler);
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  /**
   * Returns a new flow with one more map step (docs/ARCHITECTURE.md §5.10): one task per element
   * of an array, each with its own attempts, timeout and retries. `array` names an earlier step
   * whose output is an array; without it the map reads the flow input, which must be an array.
   * The handler receives one element (typed) and the context (`ctx.taskIndex` is the element's
   * index); dependents receive the outputs in element order, typed `Out[]`. The fan-out is
   * SQL's: an empty array completes the step with `[]` and no task, a value that is not an
   * array fails the run naming the step and the value's type, and more than
   * `switchyard.max_map_elements()` (10,000) elements fails it with the count and the limit.
   * Conditions and their modes work as for {@linkcode Flow.step}; a map's condition is
   * evaluated over `{ [array]: value }` (or the flow input of a root map).
   *
   * @example
   * ```ts
   * import { Flow } from './flow.ts';
   *
   * const crawl = new Flow<{ urls: string[] }>({ slug: 'crawlV1' })
   *   .step({ slug: 'urls' }, (input) => input.urls)
   *   .map({ slug: 'fetch', array: 'urls', maxAttempts: 5 }, async (url, ctx) => {
   *     const response = await fetch(url, { signal: ctx.signal });
   *     return { url, size: (await response.arrayBuffer()).byteLength, index: ctx.taskIndex };
   *   })
   *   .step({ slug: 'total', dependsOn: ['fetch'] }, (input) =>
   *     input.fetch.reduce((n, page) => n + page.size, 0));
   *
   * // A root map: the flow input is the array.
   * const squares = new Flow<number[]>({ slug: 'squaresV1' })
   *   .map({ slug: 'square' }, (n) => n * n)
   *   .map({ slug: 'half', array: 'square' }, (n) => n / 2);
   * console.assert(crawl.steps.length === 3 && squares.steps[1].kind === 'map');
   * ```
   */
  map<
    const Slug extends string,
    Out = unknown,
    const Source extends ArrayStepSlugs<Steps> = never,
    const If extends ContainmentPattern<MapInput<Input, Steps, Source>> = never,
    const IfNot extends ContainmentPattern<MapInput<Input, Steps, Source>> = never,
    const Unmet extends WhenUnmet = 'skip',
    const Exhausted extends WhenExhausted = 'fail',
  >(
    config:
      & Omit<
        MapConfig<Slug, Source>,
        'slug' | 'array' | 'if' | 'ifNot' | 'whenUnmet' | 'whenExhausted'
      >
      & { slug: NewStepSlug<Slug, Steps>; array?: Source }
      & RootMapCheck<Input, Source>
      & ConditionConfig<MapInput<Input, Steps, Source>, If, IfNot, Unmet, Exhausted>,
    handler: (item: MapItem<Input, Steps, Source>, context: StepContext<Input>) => Out,
  ): Flow<
    Input,
    {
      [K in keyof Steps | Slug]: K extends Slug
        ? SeenOutput<Awaited<Out>[], If, IfNot, Unmet, Exhausted>
        : Steps[K];
    },
    Exclude<Leaves, Source> | Slug
  > {
    const definition = this.#defineMap(config, handler);
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  #defineMap(config: unknown, handler: unknown): StepDefinition {
    if (typeof config !== 'object' || config === null) {
      throw new FlowDefinitionError(
        `flow "${this.#slug}" map options ${describeValue(config)} are invalid: pass an ` +
          'object with a slug',
      );
    }
    const { array, ...rest } = config as { array?: unknown; slug?: unknown };
    const owner = `flow "${this.#slug}" map step "${String(rest.slug)}"`;
    if (typeof rest.slug === 'string') checkKnownKeys(owner, config, MAP_OPTION_KEYS);
    if ('dependsOn' in rest) {
      throw new FlowDefinitionError(
        `${owner} option "dependsOn" is unknown: a map step names the step it maps with array`,
      );
    }
    if (array !== undefined) {
      const source = typeof array === 'string' ? this.getStep(array) : undefined;
      if (source === undefined) {
        const known = this.#steps.map((s) => `"${s.slug}"`).join(', ') || 'none';
        throw new FlowDefinitionError(
          `${owner} array ${describeValue(array)} is invalid: name an earlier step of this ` +
            `flow whose output is an array, spelled exactly (known steps: ${known}), or leave ` +
            'array out to map the flow input',
        );
      }
    }
    const dependsOn = array === undefined ? [] : [array];
    return Object.freeze({
      ...this.#defineStep({ ...rest, dependsOn }, handler, MAP_STEP_KEYS),
      kind: 'map' as const,
    });
  }

  #defineStep(
    config: unknown,
    handler: unknown,
    known: Set<string> = STEP_OPTION_KEYS,
  ): StepDefinition {
    if (typeof config !== 'object' || config === null) {
      throw new FlowDefinitionError(
        `flow "${this.#slug}" step options ${describeValue(config)} are invalid: pass an ` +
          'object with a slug',
      );
    }
    const step = config as Partial<StepConfig<string, readonly string[]>>;
    const slug = step.slug;
    assertStepSlug(slug);
    const owner = `flow "${this.#slug}" step "${slug}"`;
    checkKnownKeys(owner, step, known);
    const clash = this.#steps.find((s) => s.slug.toLowerCase() === slug.toLowerCase());
    if (clash !== undefined) {
      throw new FlowDefinitionError(
        `${owner} is a duplicate of step "${clash.slug}": step slugs must be unique ` +
          'case-insensitively within a flow',
      );
    }
    const dependsOn = this.#checkDependencies(owner, step.dependsOn);
    if (typeof handler !== 'function') {
      throw new FlowDefinitionError(
        `${owner} handler ${describeValue(handler)} is invalid: pass a function`,
      );
    }
    const condition = {
      if: checkPattern(owner, 'if', step.if),
      ifNot: checkPattern(owner, 'ifNot', step.ifNot),
      whenUnmet: checkChoice(owner, 'whenUnmet', step.whenUnmet, WHEN_UNMET, 'skip'),
      whenExhausted: checkChoice(
        owner,
        'whenExhausted',
        step.whenExhausted,
        WHEN_EXHAUSTED,
        'fail',
      ),
    };
    if (step.whenUnmet !== undefined && condition.if === null && condition.ifNot === null) {
      throw new FlowDefinitionError(
        `${owner} option whenUnmet needs a condition: add if or ifNot, or leave whenUnmet out`,
      );
    }
    return Object.freeze({
      slug,
      index: this.#steps.length,
      kind: 'single' as const,
      dependsOn,
      options: Object.freeze({
        maxAttempts: checkOption(owner, 'maxAttempts', step.maxAttempts),
        baseDelay: checkOption(owner, 'baseDelay', step.baseDelay),
        maxDelay: checkOption(owner, 'maxDelay', step.maxDelay),
        timeout: checkOption(owner, 'timeout', step.timeout),
        startDelay: checkOption(owner, 'startDelay', step.startDelay) ?? 0,
        if: deepFreeze(condition.if),
        ifNot: deepFreeze(condition.ifNot),
        whenUnmet: condition.whenUnmet,
        whenExhausted: condition.whenExhausted,
      }),
      handler: handler as StepDefinition['handler'],
    });
  }

  #checkDependencies(owner: string, dependsOn: unknown): readonly string[] {
    if (dependsOn === undefined) return Object.freeze([]);
    if (!Array.isArray(dependsOn)) {
      throw new FlowDefinitionError(
        `${owner} dependsOn ${describeValue(dependsOn)} is invalid: pass an array of earlier ` +
          'step slugs',
      );
    }
    const seen = new Set<string>();
    for (const dependency of dependsOn) {
      if (typeof dependency !== 'string' || !this.getStep(dependency)) {
        const near = typeof dependency === 'string'
          ? this.#steps.find((s) => s.slug.toLowerCase() === dependency.toLowerCase())
          : undefined;
        const known = this.#steps.map((s) => `"${s.slug}"`).join(', ') || 'none';
        throw new FlowDefinitionError(
          `${owner} depends on unknown step ${describeValue(dependency)}: dependencies must ` +
            `be steps added earlier to this flow, spelled exactly (` +
            (near ? `did you mean "${near.slug}"?` : `known steps: ${known}`) + ')',
        );
      }
      if (seen.has(dependency)) {
        throw new FlowDefinitionError(
          `${owner} lists dependency "${dependency}" twice: each dependency must appear once`,
        );
      }
      seen.add(dependency);
    }
    return Object.freeze([...dependsOn]);
  }
}
