/**
 * Queue name rules (docs/design/overview.md#identity-rules) and the two generated names: a plain
 * flow's private queue
 * and a `withStepQueues()` per-step private queue.
 *
 * A queue name matches `^[a-z][a-z0-9_]*$` and has at most 47 characters: PGMQ stores a queue
 * in tables `q_<name>` and `a_<name>` whose indexes add further prefixes, and Postgres cuts
 * identifiers at 63 bytes. Explicit (routed) names must not contain `__`, which is reserved for
 * generated private names, so the two can never collide. Generated names are never truncated
 * or hashed: a name that cannot be made is an error.
 *
 * The rule is checked in three places: {@link ValidQueueName} for literal types, the
 * synchronous runtime checks here, and SQL.
 *
 * @module
 */

import { InvalidQueueNameError } from '../errors.ts';
import { type AsciiDigit, assertFlowSlug, assertStepSlug, type LowerAsciiLetter } from './slugs.ts';

/**
 * The pattern every queue name must match.
 *
 * @example
 * ```ts
 * import { QUEUE_NAME_PATTERN } from './queue_names.ts';
 *
 * console.assert(QUEUE_NAME_PATTERN.test('classify_threads'));
 * ```
 */
export const QUEUE_NAME_PATTERN: RegExp = /^[a-z][a-z0-9_]*$/;

/**
 * The longest allowed queue name, in characters.
 *
 * @example
 * ```ts
 * import { QUEUE_NAME_MAX_LENGTH } from './queue_names.ts';
 *
 * console.assert(QUEUE_NAME_MAX_LENGTH === 47);
 * ```
 */
export const QUEUE_NAME_MAX_LENGTH: number = 47;

/**
 * The queue name rule in words, as used in error messages.
 *
 * @example
 * ```ts
 * import { QUEUE_NAME_RULE } from './queue_names.ts';
 *
 * console.log(`queue names must ${QUEUE_NAME_RULE}`);
 * ```
 */
export const QUEUE_NAME_RULE: string =
  `use lower-case letters, digits and single underscores (${QUEUE_NAME_PATTERN.source}, ` +
  `at most ${QUEUE_NAME_MAX_LENGTH} characters)`;

/**
 * The extra rule for explicit (routed) queue names, in words.
 *
 * @example
 * ```ts
 * import { EXPLICIT_QUEUE_NAME_RULE } from './queue_names.ts';
 *
 * console.log(EXPLICIT_QUEUE_NAME_RULE);
 * ```
 */
export const EXPLICIT_QUEUE_NAME_RULE: string =
  'explicit queue names must not contain "__", which is reserved for generated private queue ' +
  'names';

/** Options of {@link isValidQueueName} and {@link assertQueueName}. */
export interface QueueNameOptions {
  /**
   * `true` for a name a user wrote (routed placement, scaffolds): `__` is then forbidden.
   * `false` for a generated private name.
   */
  explicit: boolean;
}

/**
 * Whether `name` is a valid queue name. With `{ explicit: true }` it must also not contain
 * `__`. Defaults to `{ explicit: false }` (the bare canonical format).
 *
 * @example
 * ```ts
 * import { isValidQueueName } from './queue_names.ts';
 *
 * console.assert(isValidQueueName('classify_threads', { explicit: true }));
 * console.assert(isValidQueueName('threads__fetch'));
 * console.assert(!isValidQueueName('threads__fetch', { explicit: true }));
 * console.assert(!isValidQueueName('Classify-Threads'));
 * ```
 */
export function isValidQueueName(
  name: unknown,
  options: QueueNameOptions = { explicit: false },
): name is string {
  return queueNameProblem(name, options) === null;
}

/**
 * Throws {@link InvalidQueueNameError} (naming the value and the rule) unless `name` is a valid
 * queue name; with `{ explicit: true }` it must also not contain `__`.
 *
 * @example
 * ```ts
 * import { assertQueueName } from './queue_names.ts';
 *
 * assertQueueName('classify_threads', { explicit: true }); // ok
 * // assertQueueName('Classify-Threads', { explicit: true });
 * // throws: queue name "Classify-Threads" is invalid: use lower-case letters, digits and
 * //         single underscores (^[a-z][a-z0-9_]*$, at most 47 characters)
 * ```
 */
export function assertQueueName(
  name: unknown,
  options: QueueNameOptions & {
    /** Context prepended to the message, e.g. `routeFlow(flow "f") step "a"`. */
    where?: string;
  },
): asserts name is string {
  const problem = queueNameProblem(name, options);
  if (problem !== null) throw new InvalidQueueNameError(name, problem, options.where);
}

function queueNameProblem(name: unknown, { explicit }: QueueNameOptions): string | null {
  if (
    typeof name !== 'string' || name.length > QUEUE_NAME_MAX_LENGTH ||
    !QUEUE_NAME_PATTERN.test(name)
  ) {
    return QUEUE_NAME_RULE;
  }
  if (explicit && name.includes('__')) return EXPLICIT_QUEUE_NAME_RULE;
  return null;
}

/**
 * The private queue of a plain flow: its lower-cased slug.
 *
 * @example
 * ```ts
 * import { plainQueueName } from './queue_names.ts';
 *
 * console.assert(plainQueueName('communityThreadsV2') === 'communitythreadsv2');
 * ```
 */
export function plainQueueName(flowSlug: string): string {
  assertFlowSlug(flowSlug);
  // A valid slug is at most 47 characters, so its lower-case form is always a valid name.
  return flowSlug.toLowerCase();
}

/**
 * The generated private queue of one step under `withStepQueues()`:
 * `lower(flow__step)` when that has at most 47 characters, else `lower(flow__<stepIndex>)`,
 * else {@link InvalidQueueNameError}. Never truncated or hashed.
 *
 * Both forms are unambiguous: slugs contain no `__` and step slugs start with a letter, so a
 * step name can never look like an index.
 *
 * @param flowSlug the concrete flow slug
 * @param stepSlug the step slug
 * @param stepIndex the 0-based position of the step in its flow
 *
 * @example
 * ```ts
 * import { stepQueueName } from './queue_names.ts';
 *
 * console.assert(stepQueueName('threads', 'fetchAll', 0) === 'threads__fetchall');
 * console.assert(stepQueueName('threads', 'a'.repeat(47), 3) === 'threads__3');
 * ```
 */
export function stepQueueName(flowSlug: string, stepSlug: string, stepIndex: number): string {
  assertFlowSlug(flowSlug);
  assertStepSlug(stepSlug);
  if (!Number.isSafeInteger(stepIndex) || stepIndex < 0) {
    throw new RangeError(`step index ${stepIndex} is invalid: use an integer >= 0`);
  }
  const byName = `${flowSlug}__${stepSlug}`.toLowerCase();
  if (byName.length <= QUEUE_NAME_MAX_LENGTH) return byName;
  const byIndex = `${flowSlug}__${stepIndex}`.toLowerCase();
  if (byIndex.length <= QUEUE_NAME_MAX_LENGTH) return byIndex;
  throw new InvalidQueueNameError(
    byIndex,
    `${QUEUE_NAME_RULE}; neither "${byName}" nor "${byIndex}" fits, shorten flow slug ` +
      `"${flowSlug}" (generated names are never truncated or hashed)`,
    `withStepQueues(flow "${flowSlug}") step "${stepSlug}"`,
  );
}

/**
 * `true` when every character of `S` is a lower-case ASCII letter, a digit or `_` and `S` has
 * at most 47 characters. Tail-recursive with a counter tuple, so TypeScript evaluates it
 * without hitting its recursion limit.
 *
 * @example
 * ```ts
 * import type { QueueNameCharsOk } from './queue_names.ts';
 *
 * const ok: QueueNameCharsOk<'classify_threads'> = true;
 * const bad: QueueNameCharsOk<'Classify'> = false;
 * ```
 */
export type QueueNameCharsOk<S extends string, Count extends unknown[] = []> =
  Count['length'] extends 48 ? false
    : S extends `${infer Head}${infer Rest}`
      ? Head extends LowerAsciiLetter | AsciiDigit | '_'
        ? QueueNameCharsOk<Rest, [...Count, unknown]>
      : false
    : true;

/**
 * The type-level message for a literal that breaks the queue name rule.
 *
 * @example
 * ```ts
 * import type { InvalidQueueNameMessage } from './queue_names.ts';
 *
 * type M = InvalidQueueNameMessage<'Bad-Name'>;
 * ```
 */
export type InvalidQueueNameMessage<S extends string> =
  `queue name "${S}" is invalid: use lower-case letters, digits and single underscores (^[a-z][a-z0-9_]*$, at most 47 characters)`;

/**
 * The type-level message for an explicit literal that contains `__`.
 *
 * @example
 * ```ts
 * import type { ReservedQueueNameMessage } from './queue_names.ts';
 *
 * type M = ReservedQueueNameMessage<'a__b'>;
 * ```
 */
export type ReservedQueueNameMessage<S extends string> =
  `queue name "${S}" is invalid: explicit queue names must not contain "__", which is reserved for generated private queue names`;

/**
 * Type-level check of an explicit queue name literal: `S` itself when valid, else an error
 * message string type, so that assigning the literal fails type checking with a readable
 * message. A non-literal `string` passes (it is checked at runtime).
 *
 * @example
 * ```ts
 * import type { ValidQueueName } from './queue_names.ts';
 *
 * const ok: ValidQueueName<'classify_threads'> = 'classify_threads';
 * // @ts-expect-error upper case and '-' are not allowed
 * const bad: ValidQueueName<'Classify-Threads'> = 'Classify-Threads';
 * ```
 */
export type ValidQueueName<S extends string> = string extends S ? S
  : S extends `${LowerAsciiLetter}${string}`
    ? S extends `${string}__${string}` ? ReservedQueueNameMessage<S>
    : QueueNameCharsOk<S> extends true ? S
    : InvalidQueueNameMessage<S>
  : InvalidQueueNameMessage<S>;

/**
 * The function name the scaffold gives a queue's function (`order_events` → `order-events-worker`),
 * and the one a worker assumes when its options name none.
 *
 * @example
 * ```ts
 * import { defaultFunctionName } from './queue_names.ts';
 * console.assert(defaultFunctionName('order_events') === 'order-events-worker');
 * ```
 */
export function defaultFunctionName(queueName: string): string {
  return `${queueName.replaceAll('_', '-')}-worker`;
}
