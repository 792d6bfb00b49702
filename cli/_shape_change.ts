/**
 * How a concrete flow's shape changed between two compiled shape documents, without a database:
 * what `deno task compile` decides before a push
 * (docs/design/worker.md#compiling-at-deploy-and-in-local-development). It mirrors the SQL
 * core's comparison exactly — `switchyard._canonical_shape` (an absent key compares as its
 * default), `switchyard._shape_structure` (runtime options are not shape) — and
 * tests/e2e/compile_refusal_test.ts proves both agree on every kind of change. A change of
 * runtime options only is applied at push (`ensure_flow` answers `updated`); any other change
 * would be refused there (`SY004`), so compile refuses it first.
 *
 * The differences are named by step slug, not by position, so a step added in the middle reads
 * as that step added, not as every later step changed.
 *
 * @module
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };

/** The flow options that are runtime options (never shape). */
const FLOW_RUNTIME = ['maxAttempts', 'baseDelay', 'maxDelay', 'timeout', 'runTimeout', 'events'];
/** The step options that are runtime options (never shape). */
const STEP_RUNTIME = [
  'maxAttempts',
  'baseDelay',
  'maxDelay',
  'timeout',
  'startDelay',
  'rateLimit',
  'concurrency',
];

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `switchyard._canonical_shape`: every option with the value an absent key means. */
export function canonicalShape(shape: Obj): Obj {
  if (!Array.isArray(shape.steps) || !isObj(shape.options ?? {})) return shape;
  const options: Obj = {
    maxAttempts: 3,
    baseDelay: 1,
    maxDelay: 86400,
    timeout: 60,
    ...(shape.options as Obj | undefined),
  };
  if (options.runTimeout === null) delete options.runTimeout;
  if (options.events === null || options.events === true) delete options.events;
  const steps = shape.steps.map((s) => {
    if (!isObj(s) || !isObj(s.options ?? {})) return s;
    const wait = s.kind === 'wait' || s.kind === 'sleep';
    const stepOptions: Obj = {
      maxAttempts: null,
      baseDelay: null,
      maxDelay: null,
      timeout: null,
      startDelay: 0,
      if: null,
      ifNot: null,
      whenUnmet: 'skip',
      whenExhausted: 'fail',
      ...(wait ? { waitTimeout: null, onTimeout: 'fail' } : {}),
      ...(s.options as Obj | undefined),
    };
    for (const k of ['rateLimit', 'concurrency', 'sleepUntil']) {
      if (stepOptions[k] === null) delete stepOptions[k];
    }
    return { kind: 'single', dependsOn: [], ...s, options: stepOptions } as Obj;
  });
  return { ...shape, options, steps };
}

function without(options: Json | undefined, keys: string[]): Obj {
  const out: Obj = { ...(isObj(options) ? options : {}) };
  for (const k of keys) delete out[k];
  return out;
}

/** `switchyard._shape_structure`: a canonical shape without its runtime options. */
export function shapeStructure(canonical: Obj): Obj {
  return {
    ...canonical,
    options: without(canonical.options, FLOW_RUNTIME),
    steps: (Array.isArray(canonical.steps) ? canonical.steps : []).map((s) =>
      isObj(s) ? { ...s, options: without(s.options, STEP_RUNTIME) } : s
    ),
  };
}

/** JSON with object keys sorted: equal texts for values jsonb compares equal. */
export function stableJson(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (isObj(value)) {
    return `{${
      Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(
        ',',
      )
    }}`;
  }
  return JSON.stringify(value);
}

const same = (a: Json | undefined, b: Json | undefined) =>
  stableJson(a ?? null) === stableJson(b ?? null);
const show = (v: Json | undefined) => v === undefined ? 'absent' : stableJson(v);

function optionDiffs(what: string, before: Json | undefined, after: Json | undefined): string[] {
  const a = isObj(before) ? before : {};
  const b = isObj(after) ? after : {};
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !same(a[k], b[k]))
    .map((k) => `${what} option ${k} ${show(a[k])} -> ${show(b[k])}`);
}

function stepsOf(shape: Obj): Obj[] {
  return (Array.isArray(shape.steps) ? shape.steps : []).filter(isObj);
}

/** What a step is, for a line that names it: its kind, its queue, what it depends on. */
function describeStep(s: Obj): string {
  const deps = Array.isArray(s.dependsOn) ? s.dependsOn : [];
  return [
    String(s.kind ?? 'single'),
    s.queue == null ? null : `queue ${s.queue}`,
    deps.length === 0 ? 'a root step' : `after ${deps.join(', ')}`,
  ].filter((x) => x !== null).join(', ');
}

/** The differences between two shapes (both canonical, or both structures), by step slug. */
function differences(before: Obj, after: Obj): string[] {
  const out: string[] = [];
  if (!same(before.placement, after.placement)) {
    out.push(`placement ${show(before.placement)} -> ${show(after.placement)}`);
  }
  out.push(...optionDiffs('flow', before.options, after.options));
  const oldSteps = stepsOf(before);
  const newSteps = stepsOf(after);
  const oldBySlug = new Map(oldSteps.map((s) => [String(s.slug), s]));
  const newBySlug = new Map(newSteps.map((s) => [String(s.slug), s]));
  for (const s of newSteps) {
    if (!oldBySlug.has(String(s.slug))) out.push(`step ${s.slug} added (${describeStep(s)})`);
  }
  for (const s of oldSteps) {
    if (!newBySlug.has(String(s.slug))) out.push(`step ${s.slug} removed`);
  }
  const oldOrder = oldSteps.map((s) => String(s.slug)).filter((slug) => newBySlug.has(slug));
  const newOrder = newSteps.map((s) => String(s.slug)).filter((slug) => oldBySlug.has(slug));
  if (oldOrder.join() !== newOrder.join()) {
    out.push(`step order ${oldOrder.join(', ')} -> ${newOrder.join(', ')}`);
  }
  for (const s of newSteps) {
    const o = oldBySlug.get(String(s.slug));
    if (!o) continue;
    for (const key of ['kind', 'queue', 'dependsOn']) {
      if (!same(o[key], s[key])) {
        out.push(`step ${s.slug} ${key} ${show(o[key])} -> ${show(s[key])}`);
      }
    }
    out.push(...optionDiffs(`step ${s.slug}`, o.options, s.options));
    for (const key of new Set([...Object.keys(o), ...Object.keys(s)])) {
      if (['slug', 'index', 'kind', 'queue', 'dependsOn', 'options'].includes(key)) continue;
      if (!same(o[key], s[key])) {
        out.push(`step ${s.slug} ${key} ${show(o[key])} -> ${show(s[key])}`);
      }
    }
  }
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (['slug', 'placement', 'options', 'steps'].includes(key)) continue;
    if (!same(before[key], after[key])) {
      out.push(`${key} ${show(before[key])} -> ${show(after[key])}`);
    }
  }
  if (out.length === 0 && !same(before, after)) out.push('shape documents differ');
  return out;
}

/** How a compiled flow's shape changed. */
export type ShapeChange =
  | { kind: 'same' }
  /** Runtime options only: applied at push, recorded (`flow_option_history`). */
  | { kind: 'options'; differences: string[] }
  /** Steps, dependencies, kinds, conditions, queues or placement: refused (`SY004`). */
  | { kind: 'shape'; differences: string[] };

/**
 * Compares the shape a flow was compiled with to the one the registry gives it now.
 *
 * @example
 * ```ts
 * import { shapeChange } from './_shape_change.ts';
 *
 * const step = { slug: 'a', index: 0, kind: 'single', dependsOn: [], queue: 'q', options: {} };
 * const before = { slug: 'f', placement: 'routed', options: {}, steps: [step] };
 * const after = { ...before, options: { maxAttempts: 5 } };
 * console.assert(shapeChange(before, after).kind === 'options');
 * ```
 */
export function shapeChange(before: unknown, after: unknown): ShapeChange {
  const a = canonicalShape(before as Obj);
  const b = canonicalShape(after as Obj);
  if (same(a, b)) return { kind: 'same' };
  const sa = shapeStructure(a);
  const sb = shapeStructure(b);
  if (same(sa, sb)) return { kind: 'options', differences: differences(a, b) };
  return { kind: 'shape', differences: differences(sa, sb) };
}

/**
 * The next free slug in a flow's own naming: its trailing number plus one (`ordersV3` →
 * `ordersV4`, `orders_v9` → `orders_v10`), or `V2` added to a slug without one; never one of
 * `taken` (compared case-insensitively, as slugs are unique).
 *
 * @example
 * ```ts
 * import { nextSlug } from './_shape_change.ts';
 *
 * console.assert(nextSlug('ordersV3', ['ordersV4']) === 'ordersV5');
 * console.assert(nextSlug('orders', []) === 'ordersV2');
 * ```
 */
export function nextSlug(slug: string, taken: Iterable<string>): string {
  const used = new Set([...taken].map((s) => s.toLowerCase()));
  const m = /^(.*?)(\d+)$/.exec(slug);
  const prefix = m ? m[1] : `${slug}V`;
  let n = m ? Number(m[2]) + 1 : 2;
  while (used.has(`${prefix}${n}`.toLowerCase())) n++;
  return `${prefix}${n}`;
}
