/**
 * Identity rules for flow slugs, step slugs and aliases (docs/design/overview.md#identity-rules).
 * The JSON
 * check of flow inputs and step outputs is in `json.ts`.
 *
 * A slug starts with a letter and continues with letters, digits and single underscores,
 * without a trailing underscore, at most 47 characters. Because a slug can neither contain
 * `__` nor end with `_`, a generated private queue name `lower(flow__step)` always splits back
 * into exactly one flow and one step.
 *
 * @module
 */

import { FlowDefinitionError, InvalidSlugError } from '../errors.ts';

/**
 * The pattern every flow slug, step slug and alias must match.
 *
 * @example
 * ```ts
 * import { SLUG_PATTERN } from './slugs.ts';
 *
 * console.assert(SLUG_PATTERN.test('communityThreadsV2'));
 * console.assert(!SLUG_PATTERN.test('trailing_'));
 * ```
 */
export const SLUG_PATTERN: RegExp = /^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$/;

/**
 * The longest allowed slug, in characters (the same limit as a queue name, because a plain
 * flow's queue is its lower-cased slug).
 *
 * @example
 * ```ts
 * import { SLUG_MAX_LENGTH } from './slugs.ts';
 *
 * console.assert('a'.repeat(SLUG_MAX_LENGTH).length === 47);
 * ```
 */
export const SLUG_MAX_LENGTH: number = 47;

/**
 * The slug rule in words, as used in error messages.
 *
 * @example
 * ```ts
 * import { SLUG_RULE } from './slugs.ts';
 *
 * console.log(`slugs must ${SLUG_RULE}`);
 * ```
 */
export const SLUG_RULE: string =
  'start with a letter and use letters, digits and single underscores, with no trailing ' +
  `underscore (${SLUG_PATTERN.source}, at most ${SLUG_MAX_LENGTH} characters)`;

/**
 * The step slug every flow reserves (in any case).
 *
 * @example
 * ```ts
 * import { RESERVED_STEP_SLUG } from './slugs.ts';
 *
 * console.assert(RESERVED_STEP_SLUG === 'run');
 * ```
 */
export const RESERVED_STEP_SLUG: string = 'run';

/**
 * Whether `value` is a valid slug (flow slug, step slug or alias).
 *
 * @example
 * ```ts
 * import { isValidSlug } from './slugs.ts';
 *
 * console.assert(isValidSlug('classify_threads'));
 * console.assert(!isValidSlug('classify__threads'));
 * ```
 */
export function isValidSlug(value: unknown): value is string {
  return typeof value === 'string' && value.length <= SLUG_MAX_LENGTH && SLUG_PATTERN.test(value);
}

/**
 * Throws {@link InvalidSlugError} unless `value` is a valid flow slug.
 *
 * @example
 * ```ts
 * import { assertFlowSlug } from './slugs.ts';
 *
 * assertFlowSlug('communityThreadsV2'); // ok
 * // assertFlowSlug('community-threads'); // throws InvalidSlugError
 * ```
 */
export function assertFlowSlug(value: unknown): asserts value is string {
  if (!isValidSlug(value)) throw new InvalidSlugError('flow slug', value, SLUG_RULE);
}

/**
 * Throws {@link InvalidSlugError} unless `value` is a valid deployment alias (same rule as a
 * flow slug).
 *
 * @example
 * ```ts
 * import { assertAlias } from './slugs.ts';
 *
 * assertAlias('communityThreads'); // ok
 * ```
 */
export function assertAlias(value: unknown): asserts value is string {
  if (!isValidSlug(value)) throw new InvalidSlugError('alias', value, SLUG_RULE);
}

/**
 * Throws unless `value` is a valid step slug: {@link InvalidSlugError} for a malformed slug,
 * {@link FlowDefinitionError} for the reserved slug `run` (in any case).
 *
 * @example
 * ```ts
 * import { assertStepSlug } from './slugs.ts';
 *
 * assertStepSlug('fetchThreads'); // ok
 * // assertStepSlug('Run'); // throws FlowDefinitionError: reserved
 * ```
 */
export function assertStepSlug(value: unknown): asserts value is string {
  if (!isValidSlug(value)) throw new InvalidSlugError('step slug', value, SLUG_RULE);
  if (value.toLowerCase() === RESERVED_STEP_SLUG) {
    throw new FlowDefinitionError(
      `step slug "${value}" is invalid: "${RESERVED_STEP_SLUG}" is reserved (in any case)`,
    );
  }
}

/**
 * One lower-case ASCII letter, for type-level name checks.
 *
 * @example
 * ```ts
 * import type { LowerAsciiLetter } from './slugs.ts';
 *
 * const letter: LowerAsciiLetter = 'q';
 * ```
 */
export type LowerAsciiLetter =
  | 'a'
  | 'b'
  | 'c'
  | 'd'
  | 'e'
  | 'f'
  | 'g'
  | 'h'
  | 'i'
  | 'j'
  | 'k'
  | 'l'
  | 'm'
  | 'n'
  | 'o'
  | 'p'
  | 'q'
  | 'r'
  | 's'
  | 't'
  | 'u'
  | 'v'
  | 'w'
  | 'x'
  | 'y'
  | 'z';

/**
 * One ASCII digit, for type-level name checks.
 *
 * @example
 * ```ts
 * import type { AsciiDigit } from './slugs.ts';
 *
 * const digit: AsciiDigit = '7';
 * ```
 */
export type AsciiDigit = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9';

/**
 * One ASCII letter or digit or `_`: the characters a slug may contain.
 *
 * @example
 * ```ts
 * import type { SlugChar } from './slugs.ts';
 *
 * const char: SlugChar = 'Q';
 * ```
 */
export type SlugChar = LowerAsciiLetter | Uppercase<LowerAsciiLetter> | AsciiDigit | '_';

/**
 * `true` when every character of `S` is a {@link SlugChar} and `S` has at most 47 characters.
 * Tail-recursive with a counter tuple, so TypeScript evaluates it without hitting its
 * recursion limit.
 *
 * @example
 * ```ts
 * import type { SlugCharsOk } from './slugs.ts';
 *
 * const ok: SlugCharsOk<'fetch_2'> = true;
 * const bad: SlugCharsOk<'fetch-2'> = false;
 * ```
 */
export type SlugCharsOk<S extends string, Count extends unknown[] = []> = Count['length'] extends 48
  ? false
  : S extends `${infer Head}${infer Rest}`
    ? Head extends SlugChar ? SlugCharsOk<Rest, [...Count, unknown]> : false
  : true;

/**
 * Type-level check of a slug literal: `S` itself when valid, else an error message string
 * type, so that the literal fails type checking with a readable message. A non-literal
 * `string` passes (it is checked at runtime).
 *
 * @example
 * ```ts
 * import type { ValidSlug } from './slugs.ts';
 *
 * const ok: ValidSlug<'fetchThreads'> = 'fetchThreads';
 * // @ts-expect-error '-' is not allowed
 * const bad: ValidSlug<'fetch-threads'> = 'fetch-threads';
 * ```
 */
export type ValidSlug<S extends string, Kind extends string = 'slug'> = string extends S ? S
  : S extends `${LowerAsciiLetter | Uppercase<LowerAsciiLetter>}${string}`
    ? S extends `${string}__${string}` | `${string}_` ? InvalidSlugMessage<Kind, S>
    : SlugCharsOk<S> extends true ? S
    : InvalidSlugMessage<Kind, S>
  : InvalidSlugMessage<Kind, S>;

/**
 * The type-level message for a literal that breaks the slug rule.
 *
 * @example
 * ```ts
 * import type { InvalidSlugMessage } from './slugs.ts';
 *
 * type M = InvalidSlugMessage<'step slug', 'fetch-threads'>;
 * ```
 */
export type InvalidSlugMessage<Kind extends string, S extends string> =
  `${Kind} "${S}" is invalid: start with a letter and use letters, digits and single underscores, with no trailing underscore (^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$, at most 47 characters)`;
