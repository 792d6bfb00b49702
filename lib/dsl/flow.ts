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

import { FlowDefinitionError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { assertJson, type JsonValue } from './json.ts';
import { assertFlowSlug, assertStepSlug } from './slugs.ts';
import type { StepContext } from './context.ts';
import type {
  ArrayStepSlugs,
  ChildFlowConfig,
  ChildInputCheck,
  ConcurrencyConfig,
  ConcurrencyOption,
  ConditionConfig,
  ContainmentPattern,
  FlowOptions,
  MapConfig,
  MapInput,
  MapItem,
  NewStepSlug,
  OnTimeout,
  RateLimitOption,
  ResolvedFlowOptions,
  RootMapCheck,
  SeenOutput,
  SignalPayload,
  SleepOptions,
  SleepUntilOption,
  StepConfig,
  StepDefinition,
  StepInput,
  WaitConfig,
  WhenExhausted,
  WhenUnmet,
} from './flow_types.ts';

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
export type AnyFlow = Flow<
  // deno-lint-ignore no-explicit-any
  any,
  // deno-lint-ignore no-explicit-any
  Record<string, any>,
  string,
  // deno-lint-ignore no-explicit-any
  Record<string, any>,
  Record<string, HandlerTypes>
>;

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
 * run's output holds exactly their outputs (docs/design/claim.md#dispatch-and-completion).
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

/**
 * The slugs of a flow's wait and sleep steps: the steps with no handler and no queue
 * (docs/design/waits.md), which `routeFlow()` does not route.
 *
 * @example
 * ```ts
 * import { Flow, type WaitSlugs } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' })
 *   .step({ slug: 'draft' }, () => 'text')
 *   .wait({ slug: 'approval', dependsOn: ['draft'] })
 *   .sleep({ slug: 'pause', seconds: 60 });
 * const slug: WaitSlugs<typeof flow> = 'pause'; // 'approval' | 'pause'
 * ```
 */
export type WaitSlugs<F extends AnyFlow> = F extends // deno-lint-ignore no-explicit-any
Flow<any, Record<string, any>, string, infer W>
  // Any flow (its waits unknown): none, so a placement of AnyFlow routes every step.
  ? string extends keyof W ? never : keyof W & string
  : never;

/**
 * The slugs of a flow's wait steps, the ones `switchyard.signal_run` signals (a sleep takes
 * no signal). Distributes over a union of flows.
 *
 * @example
 * ```ts
 * import { Flow, type SignalSlugs } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).wait({ slug: 'approval' }).sleep({ slug: 'pause', seconds: 1 });
 * const slug: SignalSlugs<typeof flow> = 'approval';
 * ```
 */
export type SignalSlugs<F extends AnyFlow> = F extends // deno-lint-ignore no-explicit-any
Flow<any, Record<string, any>, string, infer W>
  ? { [K in keyof W & string]: [W[K]] extends [never] ? never : K }[keyof W & string]
  : never;

/**
 * The payload type of wait step `S` of a flow (a union of flows: the union of theirs).
 *
 * @example
 * ```ts
 * import { Flow, signalPayload, type SignalPayloadOf } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' })
 *   .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean }>() });
 * const payload: SignalPayloadOf<typeof flow, 'approval'> = { approved: true };
 * ```
 */
export type SignalPayloadOf<F extends AnyFlow, S extends string> = F extends // deno-lint-ignore no-explicit-any
Flow<any, Record<string, any>, string, infer W> ? S extends keyof W ? W[S] : never
  : never;

/**
 * What a flow records, at the type level only, of the handler of one step: the input it receives
 * (a map step's: one element) and the output it returns (awaited; a map step's: one element's).
 * A test engine types a step's mock with it (`switchyard/testing`, docs/design/clock.md).
 *
 * @example
 * ```ts
 * import type { HandlerTypes } from './flow.ts';
 *
 * const charge: HandlerTypes<{ cents: number }, { receipt: string }> = {
 *   input: { cents: 500 },
 *   output: { receipt: 'r-1' },
 * };
 * ```
 */
export interface HandlerTypes<I = unknown, O = unknown> {
  /** The handler's input. */
  readonly input: I;
  /** The handler's output, awaited. */
  readonly output: O;
}

/**
 * The slugs of a flow's steps that have a handler (`step` and `map`; a wait, sleep or flow step
 * has none). Distributes over a union of flows.
 *
 * @example
 * ```ts
 * import { Flow, type HandlerSlugs } from './flow.ts';
 *
 * const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1).wait({ slug: 'ok' });
 * const slug: HandlerSlugs<typeof flow> = 'a'; // not 'ok'
 * ```
 */
export type HandlerSlugs<F extends AnyFlow> = F extends // deno-lint-ignore no-explicit-any
Flow<any, Record<string, any>, string, Record<string, any>, infer H>
  ? string extends keyof H ? string : keyof H & string
  : never;

/**
 * The input the handler of step `S` receives: the flow input for a root step, its dependencies'
 * outputs by slug, or one element for a map step (a union of flows: the union of theirs).
 *
 * @example
 * ```ts
 * import { Flow, type HandlerInput } from './flow.ts';
 *
 * const flow = new Flow<{ n: number }>({ slug: 'f' })
 *   .step({ slug: 'a' }, (input) => input.n)
 *   .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a + 1);
 * const input: HandlerInput<typeof flow, 'b'> = { a: 1 };
 * ```
 */
export type HandlerInput<F extends AnyFlow, S extends string> = F extends // deno-lint-ignore no-explicit-any
Flow<any, Record<string, any>, string, Record<string, any>, infer H>
  ? S extends keyof H ? H[S]['input'] : never
  : never;

/**
 * What the handler of step `S` returns, awaited (a map step: one element's output).
 *
 * @example
 * ```ts
 * import { Flow, type HandlerOutput } from './flow.ts';
 *
 * const flow = new Flow<string[]>({ slug: 'f' }).map({ slug: 'len' }, async (s) => s.length);
 * const one: HandlerOutput<typeof flow, 'len'> = 3; // number, not number[]
 * ```
 */
export type HandlerOutput<F extends AnyFlow, S extends string> = F extends // deno-lint-ignore no-explicit-any
Flow<any, Record<string, any>, string, Record<string, any>, infer H>
  ? S extends keyof H ? H[S]['output'] : never
  : never;

/**
 * The marker of a wait step's payload type (docs/design/waits.md):
 * `.wait({ slug, payload: signalPayload<{ approved: boolean }>() })` types the step's output,
 * what its dependents receive and what `client.signal` accepts. (A marker value rather than a
 * type argument: TypeScript infers either all of a call's type arguments or none, and the
 * step's slug must stay an inferred literal.)
 *
 * @example
 * ```ts
 * import { Flow, signalPayload } from './flow.ts';
 *
 * const flow = new Flow<{ text: string }>({ slug: 'review' })
 *   .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean }>(), timeout: 3600 })
 *   .step({ slug: 'publish', dependsOn: ['approval'] }, (input) => input.approval.approved);
 * console.assert(flow.getStep('approval')?.kind === 'wait');
 * ```
 */
export function signalPayload<P extends JsonValue>(): SignalPayload<P> {
  return SIGNAL_PAYLOAD as SignalPayload<P>;
}

const SIGNAL_PAYLOAD: SignalPayload<never> = Object.freeze({ kind: 'signal_payload' as const });

const FLOW_DEFAULTS: ResolvedFlowOptions = Object.freeze({
  maxAttempts: 3,
  baseDelay: 1,
  maxDelay: 86400,
  timeout: 60,
});

/** Option bounds, shared by flows and steps (docs/design/overview.md#identity-rules). */
const OPTION_RULES = {
  maxAttempts: { min: 1, max: 1000, unit: '' },
  baseDelay: { min: 0, max: 86400, unit: ' seconds' },
  maxDelay: { min: 0, max: 604800, unit: ' seconds' },
  timeout: { min: 1, max: 86400, unit: ' seconds' },
  startDelay: { min: 0, max: 86400, unit: ' seconds' },
  timeoutSeconds: { min: 1, max: 31536000, unit: ' seconds' },
  runTimeout: { min: 1, max: 31536000, unit: ' seconds' },
  maxSize: { min: 1, max: 10000, unit: ' events' },
  batchTimeout: { min: 1, max: 86400, unit: ' seconds' },
} as const;

const WAIT_OPTION_KEYS = new Set(['slug', 'dependsOn', 'payload', 'timeout', 'onTimeout']);
const SLEEP_OPTION_KEYS = new Set(['slug', 'dependsOn', 'seconds', 'until']);
const FLOW_STEP_KEYS = new Set(['slug', 'dependsOn']);
const ON_TIMEOUT: readonly OnTimeout[] = ['fail', 'skip'];
const NO_HANDLER = (): never => {
  throw new FlowDefinitionError(
    'a wait, sleep or flow step has no handler: it never runs on a worker',
  );
};

function checkOption(
  owner: string,
  name: keyof typeof OPTION_RULES,
  value: unknown,
  label: string = name,
): number | null {
  if (value === undefined) return null;
  const { min, max, unit } = OPTION_RULES[name];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new FlowDefinitionError(
      `${owner} option ${label} ${describeValue(value)} is invalid: use an integer from ` +
        `${min} to ${max}${unit}`,
    );
  }
  return value;
}

/** The flow option `events`: a boolean, default true. */
function checkEvents(owner: string, value: unknown): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') {
    throw new FlowDefinitionError(
      `${owner} option events ${describeValue(value)} is invalid: use true or false`,
    );
  }
  return value;
}

/** The flow option `batch` (docs/guide/batching.md): `{ maxSize, timeout }`, both required. */
function checkBatch(
  owner: string,
  value: unknown,
): { readonly maxSize: number; readonly timeout: number } | undefined {
  if (value === undefined) return undefined;
  const rule = 'use { maxSize: 1 to 10000, timeout: 1 to 86400 seconds }';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FlowDefinitionError(
      `${owner} option batch ${describeValue(value)} is invalid: ${rule}`,
    );
  }
  const extra = Object.keys(value).filter((k) => k !== 'maxSize' && k !== 'timeout');
  if (extra.length > 0) {
    throw new FlowDefinitionError(
      `${owner} option batch has unknown key ${JSON.stringify(extra[0])}: ${rule}`,
    );
  }
  const { maxSize, timeout } = value as { maxSize?: unknown; timeout?: unknown };
  if (maxSize === undefined || timeout === undefined) {
    throw new FlowDefinitionError(
      `${owner} option batch needs ${maxSize === undefined ? 'maxSize' : 'timeout'}: ${rule}`,
    );
  }
  return Object.freeze({
    maxSize: checkOption(owner, 'maxSize', maxSize, 'batch.maxSize')!,
    timeout: checkOption(owner, 'batchTimeout', timeout, 'batch.timeout')!,
  });
}

const FLOW_OPTION_KEYS = new Set([
  'slug',
  'maxAttempts',
  'baseDelay',
  'maxDelay',
  'timeout',
  'runTimeout',
  'events',
  'batch',
]);
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
  'rateLimit',
  'concurrency',
]);

const MAP_OPTION_KEYS = new Set(
  [...STEP_OPTION_KEYS].filter((k) => k !== 'dependsOn').concat('array'),
);
/** What #defineStep accepts for a map: its dependsOn is derived from array. */
const MAP_STEP_KEYS = new Set(
  [...MAP_OPTION_KEYS].filter((k) => k !== 'array').concat('dependsOn'),
);

const WHEN_UNMET: readonly WhenUnmet[] = ['skip', 'skip-cascade', 'fail'];
const WHEN_EXHAUSTED: readonly WhenExhausted[] = ['fail', 'skip', 'skip-cascade', 'pause'];

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

const RATE_LIMIT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;
const KEY_SEGMENT = /^[^.]+$/;

/** A value as an error shows it: a long string cut at 200 characters, as SQL clips it. */
function shown(value: unknown): string {
  return typeof value === 'string' && value.length > 200
    ? `${JSON.stringify(value.slice(0, 200))}...`
    : describeValue(value);
}

/**
 * An option that must be a plain object with only `keys`: refused naming the unknown key, or
 * the value when it is no object at all.
 */
function checkOptionObject(owner: string, option: string, value: unknown, keys: string[]): void {
  const rule = `pass { ${keys.join(', ')} }`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FlowDefinitionError(
      `${owner} option ${option} ${describeValue(value)} is invalid: ${rule}`,
    );
  }
  const known = keys.map((k) => k.replace(/\?$/, ''));
  const extra = Object.keys(value).find((k) => !known.includes(k));
  if (extra !== undefined) {
    throw new FlowDefinitionError(
      `${owner} option ${option} has an unknown key ${shown(extra)}: ${rule}`,
    );
  }
}

/** A step's `rateLimit` as compiled, or null; docs/design/flow-control.md#rate-limits-and-keyed-concurrency. */
function checkRateLimit(owner: string, value: unknown): RateLimitOption | null {
  if (value === undefined) return null;
  checkOptionObject(owner, 'rateLimit', value, ['name', 'cost?']);
  const v = value as { name?: unknown; cost?: unknown };
  if (typeof v.name !== 'string' || !RATE_LIMIT_NAME.test(v.name)) {
    // The rule of switchyard.set_rate_limit's name.
    throw new FlowDefinitionError(
      `${owner} option rateLimit.name ${shown(v.name)} is invalid: use a name of a letter or ` +
        'digit, then letters, digits, "_", ".", ":" or "-" (at most 100)',
    );
  }
  const cost = v.cost ?? 1;
  if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 1 || cost > 1000) {
    throw new FlowDefinitionError(
      `${owner} option rateLimit.cost ${describeValue(v.cost)} is invalid: use an integer from ` +
        '1 to 1000',
    );
  }
  return Object.freeze({ name: v.name, cost });
}

/** A step's `concurrency` as compiled, or null; docs/design/flow-control.md#rate-limits-and-keyed-concurrency. */
function checkConcurrency(owner: string, value: unknown): ConcurrencyOption | null {
  if (value === undefined) return null;
  checkOptionObject(owner, 'concurrency', value, ['key', 'limit', 'input?']);
  const v = value as { key?: unknown; limit?: unknown; input?: unknown };
  const key = typeof v.key === 'string' ? v.key.split('.') : [];
  if (key.length === 0 || key.length > 8 || !key.every((k) => KEY_SEGMENT.test(k))) {
    throw new FlowDefinitionError(
      `${owner} option concurrency.key ${shown(v.key)} is invalid: use a dotted path of one to ` +
        "8 keys such as 'tenant' or 'customer.id' (no empty key)",
    );
  }
  const limit = v.limit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10000) {
    throw new FlowDefinitionError(
      `${owner} option concurrency.limit ${describeValue(limit)} is invalid: use an integer ` +
        'from 1 to 10000',
    );
  }
  const input = v.input ?? 'run';
  if (input !== 'run' && input !== 'step') {
    throw new FlowDefinitionError(
      `${owner} option concurrency.input ${describeValue(v.input)} is invalid: use 'run' (the ` +
        "run input, default) or 'step' (the task's input)",
    );
  }
  return Object.freeze({ key: Object.freeze(key), input, limit });
}

/** A sleep step's `until` as compiled; docs/design/waits.md. */
function checkSleepUntil(owner: string, value: unknown): SleepUntilOption {
  const v = value as { key?: unknown; input?: unknown };
  const extra = typeof value === 'object' && value !== null
    ? Object.keys(value).filter((k) => k !== 'key' && k !== 'input')
    : [];
  const key = typeof v?.key === 'string' ? v.key.split('.') : [];
  const input = v?.input ?? 'run';
  if (
    typeof value !== 'object' || value === null || Array.isArray(value) || extra.length > 0 ||
    key.length === 0 || key.length > 8 || !key.every((k) => KEY_SEGMENT.test(k)) ||
    (input !== 'run' && input !== 'step')
  ) {
    throw new FlowDefinitionError(
      `${owner} option until ${describeValue(value)} is invalid: pass { key, input? } with key ` +
        "a dotted path of one to 8 keys such as 'sendAt' or 'draft.sendAt', and input 'run' " +
        "(the run input, default) or 'step' (the step's input)",
    );
  }
  return Object.freeze({ key: Object.freeze(key), input });
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
  // deno-lint-ignore ban-types
  Waits extends Record<string, unknown> = {},
  // deno-lint-ignore ban-types
  Handlers extends Record<string, HandlerTypes> = {},
> {
  /** Discriminates a bare flow from placements and deployments. */
  readonly kind = 'flow' as const;

  /** Type-only carrier of the type parameters; absent at runtime. */
  declare readonly [flowTypes]?: {
    readonly input: Input;
    readonly steps: Steps;
    readonly leaves: Leaves;
    readonly waits: Waits;
    readonly handlers: Handlers;
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
      ...(options.runTimeout === undefined
        ? {}
        : { runTimeout: checkOption(owner, 'runTimeout', options.runTimeout)! }),
      ...(checkEvents(owner, options.events) ? {} : { events: false as const }),
      ...(options.batch === undefined ? {} : { batch: checkBatch(owner, options.batch)! }),
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
   * `@>`; docs/design/runs.md#ready-steps-conditions-and-skips), with `whenUnmet` and
   * `whenExhausted` deciding what an
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
      & Omit<
        StepConfig<Slug, Deps>,
        'slug' | 'if' | 'ifNot' | 'whenUnmet' | 'whenExhausted' | 'concurrency'
      >
      & { slug: NewStepSlug<Slug, Steps> }
      & { concurrency?: ConcurrencyConfig<Input, StepInput<Input, Steps, Deps>> }
      & ConditionConfig<StepInput<Input, Steps, Deps>, If, IfNot, Unmet, Exhausted>,
    handler: (input: StepInput<Input, Steps, Deps>, context: StepContext<Input>) => Out,
  ): Flow<
    Input,
    {
      [K in keyof Steps | Slug]: K extends Slug
        ? SeenOutput<Awaited<Out>, If, IfNot, Unmet, Exhausted>
        : Steps[K];
    },
    Exclude<Leaves, Deps[number]> | Slug,
    Waits,
    {
      [K in keyof Handlers | Slug]: K extends Slug
        ? HandlerTypes<StepInput<Input, Steps, Deps>, Awaited<Out>>
        : Handlers[K];
    }
  > {
    const definition = this.#defineStep(config, handler);
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  /**
   * Returns a new flow with one more map step (docs/design/runs.md#map-steps): one task per element
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
        'slug' | 'array' | 'if' | 'ifNot' | 'whenUnmet' | 'whenExhausted' | 'concurrency'
      >
      & { slug: NewStepSlug<Slug, Steps>; array?: Source }
      & { concurrency?: ConcurrencyConfig<Input, MapItem<Input, Steps, Source>> }
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
    Exclude<Leaves, Source> | Slug,
    Waits,
    {
      [K in keyof Handlers | Slug]: K extends Slug
        ? HandlerTypes<MapItem<Input, Steps, Source>, Awaited<Out>>
        : Handlers[K];
    }
  > {
    const definition = this.#defineMap(config, handler);
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  /**
   * Returns a new flow with one more wait step (docs/design/waits.md): no handler, no
   * queue, no task. When its dependencies are done it waits — nothing runs, no worker is
   * needed — until `switchyard.signal_run(run_id, slug, payload, key)` (or `client.signal`)
   * delivers its signal, whose payload becomes its output, typed with `payload:
   * signalPayload<T>()`. A signal sent before the step is ready is kept until it is. With
   * `timeout` (seconds) the SQL core ends the wait when no signal came in time: `onTimeout:
   * 'fail'` (default) fails the run, `'skip'` skips the step, so dependents see its output as
   * `T | undefined`. `routeFlow()` takes no queue for it.
   *
   * @example
   * ```ts
   * import { Flow, signalPayload } from './flow.ts';
   *
   * const review = new Flow<{ text: string }>({ slug: 'reviewV1' })
   *   .step({ slug: 'draft' }, (input) => input.text.trim())
   *   .wait({
   *     slug: 'approval',
   *     dependsOn: ['draft'],
   *     payload: signalPayload<{ approved: boolean }>(),
   *     timeout: 86400,
   *     onTimeout: 'skip',
   *   })
   *   .step({ slug: 'publish', dependsOn: ['draft', 'approval'] }, (input) =>
   *     input.approval?.approved === true ? `published: ${input.draft}` : 'not approved');
   * console.assert(review.getStep('approval')?.wait?.onTimeout === 'skip');
   * ```
   */
  wait<
    const Slug extends string,
    const Deps extends readonly (keyof Steps & string)[] = readonly [],
    P = JsonValue,
    const T extends OnTimeout = 'fail',
  >(
    config: Omit<WaitConfig<Slug, Deps, P, T>, 'slug'> & { slug: NewStepSlug<Slug, Steps> },
  ): Flow<
    Input,
    {
      [K in keyof Steps | Slug]: K extends Slug ? [T] extends ['fail'] ? P : P | undefined
        : Steps[K];
    },
    Exclude<Leaves, Deps[number]> | Slug,
    { [K in keyof Waits | Slug]: K extends Slug ? P : Waits[K] },
    Handlers
  > {
    const definition = this.#defineWait(config, 'wait');
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  /**
   * Returns a new flow with one more sleep step (docs/design/waits.md): once its
   * dependencies are done it completes after `seconds` (output `null`), with no worker held
   * and nothing running meanwhile; the SQL core's clock ends it (`switchyard.expire_waits`,
   * run by the keep-alive tick), so it may end up to a tick late. No queue, no signal.
   * With `until: { key, input? }` instead of `seconds` it sleeps until the ISO 8601 time (with
   * a time zone, at most 365 days ahead) at that dotted path of the run input (`input: 'run'`,
   * the default) or of the step's input (`'step'`), read in SQL when the step becomes ready: a
   * time past ends it at once; a value missing or not such a time fails the step and the run,
   * naming the path, the value and the rule. The path is typed: it must name a string.
   *
   * @example
   * ```ts
   * import { Flow } from './flow.ts';
   *
   * const remind = new Flow<{ email: string }>({ slug: 'remindV1' })
   *   .sleep({ slug: 'one_day', seconds: 86400 })
   *   .step({ slug: 'send', dependsOn: ['one_day'] }, () => 'sent');
   * console.assert(remind.getStep('one_day')?.kind === 'sleep');
   *
   * const scheduled = new Flow<{ sendAt: string }>({ slug: 'scheduledV1' })
   *   .sleep({ slug: 'until_send', until: { key: 'sendAt' } })
   *   .step({ slug: 'send', dependsOn: ['until_send'] }, () => 'sent');
   * console.assert(scheduled.getStep('until_send')?.wait?.until?.key[0] === 'sendAt');
   * ```
   */
  sleep<
    const Slug extends string,
    const Deps extends readonly (keyof Steps & string)[] = readonly [],
  >(
    config:
      & SleepOptions<Deps, Input, StepInput<Input, Steps, Deps>>
      & { slug: NewStepSlug<Slug, Steps> },
  ): Flow<
    Input,
    { [K in keyof Steps | Slug]: K extends Slug ? null : Steps[K] },
    Exclude<Leaves, Deps[number]> | Slug,
    { [K in keyof Waits | Slug]: K extends Slug ? never : Waits[K] },
    Handlers
  > {
    const definition = this.#defineWait(config, 'sleep');
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  /**
   * Returns a new flow with one more flow step (docs/design/waits.md): no handler, no
   * queue. When ready it starts a child run of `flow` (a deployment: the active version of its
   * alias), with the step's input (the flow input for a root step, else its dependencies'
   * outputs, which must be the child's input type) and the parent's owner, and waits — no
   * worker held — until the child ends: completed, the step's output is the child's output
   * (typed); failed, the step and the run fail naming it; cancelled, the parent is cancelled.
   * The child's run id is derived from the parent run and the step, so a retry of the parent
   * never starts a second child (it retries a failed one); cancelling the parent cancels its
   * children.
   *
   * @example
   * ```ts
   * import { defineDeployedFlow, Flow } from '../mod.ts';
   *
   * const enrich = defineDeployedFlow(
   *   new Flow<{ id: string }>({ slug: 'enrichV1' }).step({ slug: 'lookup' }, (i) => i.id.length),
   *   { alias: 'enrich' },
   * );
   * const order = new Flow<{ id: string }>({ slug: 'orderV1' })
   *   .childFlow({ slug: 'enriched', flow: enrich })
   *   .step({ slug: 'ship', dependsOn: ['enriched'] }, (input) => input.enriched.lookup > 0);
   * console.assert(order.getStep('enriched')?.childAlias === 'enrich');
   * ```
   */
  childFlow<
    const Slug extends string,
    const D extends { readonly kind: 'deployed'; readonly alias: string; readonly flow: AnyFlow },
    const Deps extends readonly (keyof Steps & string)[] = readonly [],
  >(
    config:
      & Omit<ChildFlowConfig<Slug, Deps, D>, 'slug'>
      & { slug: NewStepSlug<Slug, Steps> }
      & ChildInputCheck<StepInput<Input, Steps, Deps>, FlowInput<D['flow']>>,
  ): Flow<
    Input,
    { [K in keyof Steps | Slug]: K extends Slug ? FlowOutput<D['flow']> : Steps[K] },
    Exclude<Leaves, Deps[number]> | Slug,
    { [K in keyof Waits | Slug]: K extends Slug ? never : Waits[K] },
    Handlers
  > {
    const flow = (config as { flow?: { kind?: unknown; alias?: unknown } } | null)?.flow;
    if (flow?.kind !== 'deployed' || typeof flow.alias !== 'string') {
      throw new FlowDefinitionError(
        `flow "${this.#slug}" flow step option flow ${describeValue(flow)} is invalid: pass ` +
          "defineDeployedFlow(...) (its alias names the child run's flow)",
      );
    }
    const { flow: _flow, ...rest } = config as unknown as Record<string, unknown>;
    const definition = Object.freeze({
      ...this.#defineWait(rest, 'flow'),
      childAlias: flow.alias,
    });
    // deno-lint-ignore no-explicit-any
    const next = new Flow<Input, any, any, any, any>({ slug: this.#slug, ...this.#options });
    next.#steps = Object.freeze([...this.#steps, definition]);
    return next;
  }

  #defineWait(config: unknown, kind: 'wait' | 'sleep' | 'flow'): StepDefinition {
    if (typeof config !== 'object' || config === null) {
      throw new FlowDefinitionError(
        `flow "${this.#slug}" ${kind} options ${describeValue(config)} are invalid: pass an ` +
          'object with a slug',
      );
    }
    const step = config as {
      slug?: unknown;
      dependsOn?: unknown;
      payload?: unknown;
      timeout?: unknown;
      onTimeout?: unknown;
      seconds?: unknown;
      until?: unknown;
    };
    const slug = step.slug;
    assertStepSlug(slug);
    const owner = `flow "${this.#slug}" ${kind} step "${slug}"`;
    checkKnownKeys(
      owner,
      step,
      kind === 'wait' ? WAIT_OPTION_KEYS : kind === 'sleep' ? SLEEP_OPTION_KEYS : FLOW_STEP_KEYS,
    );
    const clash = this.#steps.find((s) => s.slug.toLowerCase() === slug.toLowerCase());
    if (clash !== undefined) {
      throw new FlowDefinitionError(
        `${owner} is a duplicate of step "${clash.slug}": step slugs must be unique ` +
          'case-insensitively within a flow',
      );
    }
    const dependsOn = this.#checkDependencies(owner, step.dependsOn);
    if (step.payload !== undefined && step.payload !== SIGNAL_PAYLOAD) {
      throw new FlowDefinitionError(
        `${owner} option payload ${describeValue(step.payload)} is invalid: pass ` +
          'signalPayload<YourType>(), or leave it out for any JSON',
      );
    }
    let timeout: number | null;
    let until: SleepUntilOption | null = null;
    if (kind === 'flow') {
      timeout = null;
    } else if (kind === 'sleep') {
      if ((step.seconds === undefined) === (step.until === undefined)) {
        throw new FlowDefinitionError(
          `${owner} needs exactly one of seconds and until: say how long the step sleeps ` +
            '(seconds, 1 to 31536000) or where its end time is ({ key, input? })',
        );
      }
      timeout = step.seconds === undefined
        ? null
        : checkOption(owner, 'timeoutSeconds', step.seconds, 'seconds');
      if (step.until !== undefined) until = checkSleepUntil(owner, step.until);
    } else {
      timeout = checkOption(owner, 'timeoutSeconds', step.timeout, 'timeout');
    }
    const onTimeout = checkChoice(owner, 'onTimeout', step.onTimeout, ON_TIMEOUT, 'fail');
    if (step.onTimeout !== undefined && timeout === null) {
      throw new FlowDefinitionError(
        `${owner} option onTimeout needs a timeout: add timeout (seconds), or leave onTimeout out`,
      );
    }
    return Object.freeze({
      slug,
      index: this.#steps.length,
      kind,
      dependsOn,
      options: Object.freeze({
        maxAttempts: null,
        baseDelay: null,
        maxDelay: null,
        timeout: null,
        startDelay: 0,
        if: null,
        ifNot: null,
        whenUnmet: 'skip' as const,
        whenExhausted: 'fail' as const,
      }),
      wait: kind === 'flow'
        ? null
        : Object.freeze(until === null ? { timeout, onTimeout } : { timeout, onTimeout, until }),
      handler: NO_HANDLER,
    });
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
    // Flow control (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): keys present
    // only when given.
    const rateLimit = checkRateLimit(owner, step.rateLimit);
    const concurrency = checkConcurrency(owner, step.concurrency);
    const flowControl = {
      ...(rateLimit ? { rateLimit } : {}),
      ...(concurrency ? { concurrency } : {}),
    };
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
        ...flowControl,
      }),
      wait: null,
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
