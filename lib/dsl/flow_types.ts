/**
 * The flow DSL's type-level machinery: flow and step options, the step configurations
 * `Flow.step()` and `Flow.map()` accept, and the types that compute a step's input, a map's
 * element and a new slug's checks from the steps before it. `lib/dsl/flow.ts` builds flows
 * with them; nothing here runs.
 *
 * @module
 */

import type { JsonValue } from './json.ts';
import type { ValidSlug } from './slugs.ts';
import type { StepContext } from './context.ts';

/**
 * Options of a flow: its slug and the defaults its steps inherit.
 *
 * @example
 * ```ts
 * import type { FlowOptions } from './flow_types.ts';
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
  /**
   * The whole run's time limit in seconds, 1 to 31536000 (365 days): a run still going that long
   * after it started is cancelled by the SQL core with the reason `deadline`, whether a worker is
   * alive or not (docs/design/client.md). A start may set an earlier `deadlineAt`. Default
   * none.
   */
  runTimeout?: number;
  /**
   * `false` for throughput-only work: the flow's runs and steps write no `run_events` rows (no
   * `events()` stream, no Realtime rows); their transitions still notify, so `output()` and the
   * client's other waits work as before (docs/design/client.md). A runtime option: changing it
   * is not a new version, and it applies from the next transition. Default `true`.
   */
  events?: boolean;
  /**
   * Batching (docs/guide/batching.md): the flow's runs are batches of events. An event is a
   * start with a batch key (`start_flow(..., batch_key => k)`, `startRun(..., { batchKey })`) or
   * a row of a row trigger declared with `batchBy`; events of one key collect into one open
   * batch, which becomes one run when it holds `maxSize` events or `timeout` seconds after its
   * first event (closed by the SQL core's tick, up to a tick late). The run's input is the list
   * of the events' inputs, in the order they joined, so the flow's input type is that list.
   * Part of the flow's structure: adding, changing or removing it is a new version.
   */
  batch?: {
    /** Events per batch, 1 to 10000: the batch closes when it holds this many. */
    readonly maxSize: number;
    /** Seconds from a batch's first event until the tick closes it, 1 to 86400. */
    readonly timeout: number;
  };
}

/**
 * The resolved options of a flow, defaults applied.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import type { ResolvedFlowOptions } from './flow_types.ts';
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
  /** The whole run's time limit in seconds; absent when the flow has none. */
  readonly runTimeout?: number;
  /** `false` when the flow writes no run events; absent when it does (the default). */
  readonly events?: false;
  /** The batching of its runs (`maxSize`, `timeout`); absent when the flow is not batched. */
  readonly batch?: { readonly maxSize: number; readonly timeout: number };
}

/**
 * What happens when a step's condition (`if` / `ifNot`) is not met
 * (docs/design/runs.md#ready-steps-conditions-and-skips):
 * `skip` skips the step (dependents run without its output), `skip-cascade` skips it and every
 * step that depends on it, `fail` fails the run.
 *
 * @example
 * ```ts
 * import type { WhenUnmet } from './flow_types.ts';
 *
 * const mode: WhenUnmet = 'skip-cascade';
 * ```
 */
export type WhenUnmet = 'skip' | 'skip-cascade' | 'fail';

/**
 * What happens when a task used its last attempt
 * (docs/design/runs.md#ready-steps-conditions-and-skips): `fail` fails the
 * run, `skip` skips the step (dependents run without its output), `skip-cascade` skips it and
 * every step that depends on it, and the run goes on without them; `pause` pauses the run for an
 * operator (the step stays started; `resume_run` retries it, docs/design/rerun.md).
 *
 * @example
 * ```ts
 * import type { WhenExhausted } from './flow_types.ts';
 *
 * const mode: WhenExhausted = 'skip-cascade';
 * ```
 */
export type WhenExhausted = 'fail' | 'skip' | 'skip-cascade' | 'pause';

/**
 * A JSON containment pattern over `T`, as PostgreSQL's `jsonb @>` reads it: any subset of the
 * object's keys, nested; arrays hold patterns of their elements (an array pattern matches when
 * every pattern element is contained in some element of the array).
 *
 * @example
 * ```ts
 * import type { ContainmentPattern } from './flow_types.ts';
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
 * import type { ExactPattern } from './flow_types.ts';
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
 * import type { MaySkip } from './flow_types.ts';
 *
 * type A = MaySkip<{ plan: 'pro' }, never, 'skip', 'fail'>; // true
 * type B = MaySkip<{ plan: 'pro' }, never, 'skip-cascade', 'fail'>; // false
 * type C = MaySkip<never, never, 'skip', 'skip'>; // true
 * type D = MaySkip<never, never, 'skip', 'skip-cascade'>; // false
 * ```
 */
export type MaySkip<If, IfNot, Unmet extends WhenUnmet, Exhausted extends WhenExhausted> =
  [Exhausted] extends ['fail' | 'skip-cascade' | 'pause'] ? [If | IfNot] extends [never] ? false
    : [Unmet] extends ['skip'] ? true
    : false
    : true;

/**
 * The output type a step's dependents see: `Out`, or `Out | undefined` when the step may be
 * skipped (see {@linkcode MaySkip}): a skipped step's output is absent.
 *
 * @example
 * ```ts
 * import type { SeenOutput } from './flow_types.ts';
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
 * import type { StepOptions } from './flow_types.ts';
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
  /** The shared rate limit the step's tasks draw from; absent: none. */
  readonly rateLimit?: RateLimitOption;
  /** The step's keyed concurrency; absent: none. */
  readonly concurrency?: ConcurrencyOption;
}

/**
 * A step's rate limit (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): the name of
 * a limit shared by every step
 * that names it (set with SQL `switchyard.set_rate_limit`), and the tokens one start costs.
 *
 * @example
 * ```ts
 * import type { RateLimitOption } from './flow_types.ts';
 *
 * const limit: RateLimitOption = { name: 'openai', cost: 1 };
 * ```
 */
export interface RateLimitOption {
  /** The limit's name: a letter or digit, then letters, digits, `_ . : -`; at most 100. */
  readonly name: string;
  /** Tokens one start takes, 1 to 1000. Default 1. */
  readonly cost: number;
}

/**
 * A step's keyed concurrency as compiled
 * (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): at most `limit` started
 * tasks per value at `key` (a JSON path, as keys) of the run input or the task's input.
 *
 * @example
 * ```ts
 * import type { ConcurrencyOption } from './flow_types.ts';
 *
 * const option: ConcurrencyOption = { key: ['tenant'], input: 'run', limit: 2 };
 * ```
 */
export interface ConcurrencyOption {
  /** The path of keys to the value. */
  readonly key: readonly string[];
  /** Where the path is read: the run input or the task's own input. */
  readonly input: 'run' | 'step';
  /** Started tasks per key value, 1 to 10000. */
  readonly limit: number;
}

/**
 * The dotted paths into `T` a concurrency key may name: its keys, and nested objects' keys
 * joined with `.` (four levels), any of them when `T` is not known.
 *
 * @example
 * ```ts
 * import type { KeyPath } from './flow_types.ts';
 *
 * const path: KeyPath<{ tenant: { id: string } }> = 'tenant.id';
 * ```
 */
export type KeyPath<T, Depth extends unknown[] = []> = unknown extends T ? string
  : T extends readonly unknown[] ? never
  : T extends object ? {
      [K in keyof T & string]:
        | K
        | (Depth['length'] extends 3 ? never
          : NonNullable<T[K]> extends object ? `${K}.${KeyPath<NonNullable<T[K]>, [...Depth, 1]>}`
          : never);
    }[keyof T & string]
  : never;

/**
 * The `concurrency` option of a step, typed: `key` is a dotted path of the run input (the
 * default, `input: 'run'`) or of the step's own input (`input: 'step'`), so a misspelt key fails
 * `deno check`.
 *
 * @example
 * ```ts
 * import type { ConcurrencyConfig } from './flow_types.ts';
 *
 * const config: ConcurrencyConfig<{ tenant: string }, number> = { key: 'tenant', limit: 2 };
 * ```
 */
export type ConcurrencyConfig<RunIn, StepIn> =
  | { key: KeyPath<RunIn>; limit: number; input?: 'run' }
  | { key: KeyPath<StepIn>; limit: number; input: 'step' };

/**
 * One step as the worker sees it: slug, position, dependencies, options and handler.
 *
 * @example
 * ```ts
 * import { Flow } from './flow.ts';
 * import type { StepDefinition } from './flow_types.ts';
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
   * `single`: one task; `map`: one task per element of an array (docs/design/runs.md#map-steps),
   * the flow input when `dependsOn` is empty, else the output of its one dependency; `wait`
   * and `sleep`: no task (docs/design/waits.md).
   */
  readonly kind: StepKind;
  /** Slugs of the steps this one depends on, in the order given. */
  readonly dependsOn: readonly string[];
  /** Step options; `null` means inherit from the flow. */
  readonly options: StepOptions;
  /** A wait or sleep step's timeout and what it does; `null` for a step with a handler. */
  readonly wait: WaitStepOptions | null;
  /** A flow step's alias: the deployed flow whose active version its child run runs. */
  readonly childAlias?: string;
  /**
   * The handler, untyped (a wait or sleep step has none: this one throws): the worker builds the input from the flow input or dependencies (a
   * map step: one element).
   */
  readonly handler: (input: unknown, context: StepContext<unknown>) => unknown;
}

/**
 * How a step runs: `single` (one task), `map` (one task per array element), `wait` (no task:
 * until a signal or its timeout), `sleep` (no task: for a number of seconds) or `flow` (no
 * task: a child run of another deployed flow).
 *
 * @example
 * ```ts
 * import type { StepKind } from './flow_types.ts';
 *
 * const kind: StepKind = 'map';
 * ```
 */
export type StepKind = 'single' | 'map' | 'wait' | 'sleep' | 'flow';

/**
 * What a wait step's timeout does (docs/design/waits.md): `fail` fails the run, `skip`
 * skips the step (its dependents run without its output).
 *
 * @example
 * ```ts
 * import type { OnTimeout } from './flow_types.ts';
 *
 * const mode: OnTimeout = 'skip';
 * ```
 */
export type OnTimeout = 'fail' | 'skip';

/**
 * The options of a wait or sleep step (docs/design/waits.md): its timeout (a sleep's
 * length) in seconds, `null` for a wait without timeout, and what the timeout does.
 *
 * @example
 * ```ts
 * import type { WaitStepOptions } from './flow_types.ts';
 *
 * const wait: WaitStepOptions = { timeout: 3600, onTimeout: 'skip' };
 * ```
 */
export interface WaitStepOptions {
  /**
   * Seconds until the timeout (a sleep: its length); `null`: a wait that waits until signalled,
   * or a sleep until a time read from the input (`until`).
   */
  readonly timeout: number | null;
  /** What the timeout of a wait does (a sleep completes). */
  readonly onTimeout: OnTimeout;
  /** A sleep until a time only: where the time is read. */
  readonly until?: SleepUntilOption;
}

/**
 * A sleep step's `until` as compiled (docs/design/waits.md): the SQL core reads an ISO
 * 8601 timestamp at `key` (a JSON path, as keys) of the run input or of the step's input when
 * the step becomes ready, and the sleep ends then.
 *
 * @example
 * ```ts
 * import type { SleepUntilOption } from './flow_types.ts';
 *
 * const until: SleepUntilOption = { key: ['sendAt'], input: 'run' };
 * ```
 */
export interface SleepUntilOption {
  /** The path of keys to the timestamp. */
  readonly key: readonly string[];
  /** Where the path is read: the run input or the step's own input. */
  readonly input: 'run' | 'step';
}

/**
 * The dotted paths into `T` whose value is a string (four levels): what a sleep's `until` may
 * name (the string must be an ISO 8601 timestamp with a time zone, checked when the step
 * becomes ready); any path when `T` is not known.
 *
 * @example
 * ```ts
 * import type { TimePath } from './flow_types.ts';
 *
 * const path: TimePath<{ reminder: { at: string; count: number } }> = 'reminder.at';
 * ```
 */
export type TimePath<T, Depth extends unknown[] = []> = unknown extends T ? string
  : T extends readonly unknown[] ? never
  : T extends object ? {
      [K in keyof T & string]:
        | (unknown extends T[K] ? K : NonNullable<T[K]> extends string ? K : never)
        | (Depth['length'] extends 3 ? never
          : unknown extends T[K] ? never
          : NonNullable<T[K]> extends string ? never
          : NonNullable<T[K]> extends object ? `${K}.${TimePath<NonNullable<T[K]>, [...Depth, 1]>}`
          : never);
    }[keyof T & string]
  : never;

/**
 * The `until` option of a sleep step, typed: `key` is a dotted path to a string of the run
 * input (the default, `input: 'run'`) or of the step's own input (`input: 'step'`: the flow
 * input for a root step, else its dependencies' outputs by slug), so a misspelt key or one
 * naming a number fails `deno check`.
 *
 * @example
 * ```ts
 * import type { SleepUntilConfig } from './flow_types.ts';
 *
 * const config: SleepUntilConfig<{ sendAt: string }, { draft: { at: string } }> = {
 *   key: 'draft.at',
 *   input: 'step',
 * };
 * ```
 */
export type SleepUntilConfig<RunIn, StepIn> =
  | { key: TimePath<RunIn>; input?: 'run' }
  | { key: TimePath<StepIn>; input: 'step' };

/**
 * The type of a wait step's signal payload, carried by a value: see {@linkcode signalPayload}
 * in `lib/dsl/flow.ts`. Nothing is checked at runtime: the payload is whatever JSON
 * `switchyard.signal_run` receives. For signals from browsers (`switchyard.signal_user_run`)
 * declare the shape in SQL too, as `user_signal_steps.payload_schema`
 * (docs/design/client.md): the SQL core refuses a payload that does not match it.
 *
 * @example
 * ```ts
 * import { signalPayload } from './flow.ts';
 * import type { SignalPayload } from './flow_types.ts';
 *
 * const approval: SignalPayload<{ approved: boolean }> = signalPayload<{ approved: boolean }>();
 * ```
 */
export interface SignalPayload<P> {
  /** Discriminates the marker. */
  readonly kind: 'signal_payload';
  /** Type-only carrier of the payload type; absent at runtime. */
  readonly payload?: P;
}

/**
 * Options of `Flow.wait()`.
 *
 * @example
 * ```ts
 * import { signalPayload } from './flow.ts';
 * import type { WaitConfig } from './flow_types.ts';
 *
 * const config: WaitConfig<'approval', readonly ['draft'], { approved: boolean }, 'skip'> = {
 *   slug: 'approval',
 *   dependsOn: ['draft'],
 *   payload: signalPayload<{ approved: boolean }>(),
 *   timeout: 86400,
 *   onTimeout: 'skip',
 * };
 * ```
 */
export interface WaitConfig<
  Slug extends string,
  Deps extends readonly string[],
  P,
  T extends OnTimeout,
> {
  /** The step slug, unique (case-insensitively) within the flow; `run` is reserved. */
  slug: Slug;
  /** Slugs of earlier steps that must be done before the step waits. Absent: it waits at once. */
  dependsOn?: Deps;
  /** The payload's type (the step's output), as `signalPayload<T>()`. Absent: any JSON. */
  payload?: SignalPayload<P>;
  /** Seconds the step waits for its signal once ready, 1 to 31536000. Absent: no timeout. */
  timeout?: number;
  /** What the timeout does: `fail` (default) fails the run, `skip` skips the step. */
  onTimeout?: T;
}

/**
 * Options of `Flow.childFlow()`.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { ChildFlowConfig } from './flow_types.ts';
 *
 * const child = defineDeployedFlow(new Flow({ slug: 'childV1' }).step({ slug: 'a' }, () => 1), {
 *   alias: 'child',
 * });
 * const config: ChildFlowConfig<'sub', readonly [], typeof child> = { slug: 'sub', flow: child };
 * ```
 */
export interface ChildFlowConfig<
  Slug extends string,
  Deps extends readonly string[],
  D extends { readonly kind: 'deployed'; readonly alias: string },
> {
  /** The step slug, unique (case-insensitively) within the flow; `run` is reserved. */
  slug: Slug;
  /** Slugs of earlier steps whose outputs are the child run's input. Absent: the flow input. */
  dependsOn?: Deps;
  /** The deployed flow the child run runs: the active version of its alias when it starts. */
  flow: D;
}

/**
 * Type-level check that a flow step's input can be its child flow's input: `unknown` when it
 * can, else the `flow` key is demanded with this message.
 *
 * @example
 * ```ts
 * import type { ChildInputCheck } from './flow_types.ts';
 *
 * type Ok = ChildInputCheck<{ id: string }, { id: string }>; // unknown
 * ```
 */
export type ChildInputCheck<StepIn, ChildIn> = [StepIn] extends [ChildIn] ? unknown
  : {
    flow:
      "the step's input (the flow input, or its dependencies' outputs) is not the child flow's input";
  };

/**
 * Options of `Flow.sleep()`: its slug and {@linkcode SleepOptions}.
 *
 * @example
 * ```ts
 * import type { SleepConfig } from './flow_types.ts';
 *
 * const config: SleepConfig<'nap', readonly []> = { slug: 'nap', seconds: 60 };
 * const until: SleepConfig<'wake', readonly [], { at: string }> = {
 *   slug: 'wake',
 *   until: { key: 'at' },
 * };
 * ```
 */
export type SleepConfig<
  Slug extends string,
  Deps extends readonly string[],
  RunIn = unknown,
  StepIn = unknown,
> = {
  /** The step slug, unique (case-insensitively) within the flow; `run` is reserved. */
  slug: Slug;
} & SleepOptions<Deps, RunIn, StepIn>;

/**
 * How long a sleep step sleeps once ready: `seconds`, or `until` a time read from the run input
 * or the step's input (exactly one of them).
 *
 * @example
 * ```ts
 * import type { SleepOptions } from './flow_types.ts';
 *
 * const options: SleepOptions<readonly [], { sendAt: string }> = { until: { key: 'sendAt' } };
 * ```
 */
export type SleepOptions<Deps extends readonly string[], RunIn = unknown, StepIn = unknown> =
  | {
    /** Slugs of earlier steps that must be done before the sleep starts. */
    dependsOn?: Deps;
    /** How long the step sleeps once ready, in seconds, 1 to 31536000. */
    seconds: number;
    /** Not with `seconds`. */
    until?: never;
  }
  | {
    /** Slugs of earlier steps that must be done before the sleep starts. */
    dependsOn?: Deps;
    /**
     * Sleep until the ISO 8601 time (with a time zone, at most 365 days ahead) at this path
     * of the run input or the step's input, read when the step becomes ready; a time past
     * ends the sleep at once, a value that is not such a time fails the step and the run.
     */
    until: SleepUntilConfig<RunIn, StepIn>;
    /** Not with `until`. */
    seconds?: never;
  };

/**
 * Options of `Flow.step()`.
 *
 * @example
 * ```ts
 * import type { StepConfig } from './flow_types.ts';
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
   * SQL when the step becomes ready; docs/design/runs.md#ready-steps-conditions-and-skips). The
   * input is the flow input
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
  /**
   * A rate limit shared by name (docs/design/flow-control.md#rate-limits-and-keyed-concurrency):
   * each start of a task takes
   * `cost` (default 1) tokens of the limit `name`; a task the limit cannot pay for waits, with
   * no attempt used. The limit's rate is a row the operator sets with
   * `switchyard.set_rate_limit(name, rate, per_seconds, burst)`; no row: no limit.
   */
  rateLimit?: { name: string; cost?: number };
  /**
   * Keyed concurrency (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): at most
   * `limit` started tasks of this step
   * per value at the dotted path `key` of the run input (or with `input: 'step'`, of the task's
   * input), across every worker; the others wait, with no attempt used.
   */
  concurrency?: { key: string; limit: number; input?: 'run' | 'step' };
}

/**
 * The condition options of a step, typed against its input `SI`: patterns of the input's own
 * keys (see {@linkcode ContainmentPattern} and {@linkcode ExactPattern}) and the two modes as
 * literals, which decide the output type dependents see ({@linkcode SeenOutput}).
 *
 * @example
 * ```ts
 * import type { ConditionConfig } from './flow_types.ts';
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
 * import type { StepInput } from './flow_types.ts';
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
 * import type { ArrayStepSlugs } from './flow_types.ts';
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
 * import type { MapItem } from './flow_types.ts';
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
 * import type { MapInput } from './flow_types.ts';
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
 * import type { MapConfig } from './flow_types.ts';
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
 * import type { RootMapCheck } from './flow_types.ts';
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
 * import type { NewStepSlug } from './flow_types.ts';
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
