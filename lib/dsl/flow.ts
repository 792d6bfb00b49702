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
 * // { maxAttempts: 3, baseDelay: 1, timeout: 60 }
 * ```
 */
export interface ResolvedFlowOptions {
  /** Attempts per task. */
  readonly maxAttempts: number;
  /** Base of the exponential retry backoff, in seconds. */
  readonly baseDelay: number;
  /** Task timeout, in seconds. */
  readonly timeout: number;
}

/**
 * The resolved options of a step: `null` means "inherit from the flow".
 *
 * @example
 * ```ts
 * import type { StepOptions } from './flow.ts';
 *
 * const options: StepOptions = { maxAttempts: null, baseDelay: null, timeout: 30, startDelay: 0 };
 * ```
 */
export interface StepOptions {
  /** Attempts per task, or `null` to inherit. */
  readonly maxAttempts: number | null;
  /** Retry backoff base in seconds, or `null` to inherit. */
  readonly baseDelay: number | null;
  /** Task timeout in seconds, or `null` to inherit. */
  readonly timeout: number | null;
  /** Seconds to wait before the step's first task becomes visible. */
  readonly startDelay: number;
}

/**
 * What a step handler receives besides its input.
 *
 * @example
 * ```ts
 * import type { StepContext } from './flow.ts';
 *
 * function log(ctx: StepContext<{ url: string }>) {
 *   console.log(ctx.runId, ctx.stepSlug, ctx.attempt, ctx.flowInput.url);
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
  /** The attempt number, starting at 1. */
  readonly attempt: number;
  /** The input the run was started with. */
  readonly flowInput: Input;
  /** Aborted when the task times out or the worker shuts down. */
  readonly signal: AbortSignal;
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
  /** Slugs of the steps this one depends on, in the order given. */
  readonly dependsOn: readonly string[];
  /** Step options; `null` means inherit from the flow. */
  readonly options: StepOptions;
  /** The handler, untyped: the worker builds the input from the flow input or dependencies. */
  readonly handler: (input: unknown, context: StepContext<unknown>) => unknown;
}

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
  /** Task timeout in seconds, 1 to 86400. Absent: inherit from the flow. */
  timeout?: number;
  /** Seconds before the step's first task becomes visible, 0 to 86400. Default 0. */
  startDelay?: number;
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
  timeout: 60,
});

/** Option bounds, shared by flows and steps (docs/ARCHITECTURE.md §2). */
const OPTION_RULES = {
  maxAttempts: { min: 1, max: 1000, unit: '' },
  baseDelay: { min: 0, max: 86400, unit: ' seconds' },
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

const FLOW_OPTION_KEYS = new Set(['slug', 'maxAttempts', 'baseDelay', 'timeout']);
const STEP_OPTION_KEYS = new Set([
  'slug',
  'dependsOn',
  'maxAttempts',
  'baseDelay',
  'timeout',
  'startDelay',
]);

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
      timeout: checkOption(owner, 'timeout', options.timeout) ?? FLOW_DEFAULTS.timeout,
    });
    this.#steps = Object.freeze([]);
    Object.freeze(this);
  }

  /** The concrete flow slug (the version). */
  get slug(): string {
    return this.#slug;
  }

  /** The flow options with defaults applied (maxAttempts 3, baseDelay 1, timeout 60). */
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
   * @example
   * ```ts
   * import { Flow } from './flow.ts';
   *
   * const base = new Flow<{ url: string }>({ slug: 'page' });
   * const flow = base
   *   .step({ slug: 'fetch', maxAttempts: 5 }, async (input) => (await fetch(input.url)).status)
   *   .step({ slug: 'report', dependsOn: ['fetch'] }, (input) => ({ ok: input.fetch === 200 }));
   * console.assert(base.steps.length === 0 && flow.steps.length === 2);
   * ```
   */
  step<
    const Slug extends string,
    const Deps extends readonly (keyof Steps & string)[] = readonly [],
    Out = unknown,
  >(
    config: Omit<StepConfig<Slug, Deps>, 'slug'> & { slug: NewStepSlug<Slug, Steps> },
    handler: (input: StepInput<Input, Steps, Deps>, context: StepContext<Input>) => Out,
  ): Flow<
    Input,
    { [K in keyof Steps | Slug]: K extends Slug ? Awaited<Out> : Steps[K] },
    Exclude<Leaves, Deps[number]> | Slug
  > {
    const definition = this.#defineStep(config, handler);
    const next = new Flow<
      Input,
      { [K in keyof Steps | Slug]: K extends Slug ? Awaited<Out> : Steps[K] },
      Exclude<Leaves, Deps[number]> | Slug
    >({
      slug: this.#slug,
      ...this.#options,
    });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  #defineStep(config: unknown, handler: unknown): StepDefinition {
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
    checkKnownKeys(owner, step, STEP_OPTION_KEYS);
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
    return Object.freeze({
      slug,
      index: this.#steps.length,
      dependsOn,
      options: Object.freeze({
        maxAttempts: checkOption(owner, 'maxAttempts', step.maxAttempts),
        baseDelay: checkOption(owner, 'baseDelay', step.baseDelay),
        timeout: checkOption(owner, 'timeout', step.timeout),
        startDelay: checkOption(owner, 'startDelay', step.startDelay) ?? 0,
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
