/**
 * Error classes of the Switchyard DSL.
 *
 * Every error the kit throws extends {@link SwitchyardError}, so callers can catch the whole
 * family with one `instanceof` check, or match one class. Messages always name the offending
 * value and the rule that was broken. Worker errors live in `lib/worker/errors.ts` and extend
 * the same base class.
 *
 * @module
 */

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
 * import { assertFlowSlug } from './slugs.ts';
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
 * import { assertQueueName } from './queue_names.ts';
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
 * import { Flow } from './flow.ts';
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
 * import { assertJson } from './slugs.ts';
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
 * Renders any value for an error message: strings are JSON-quoted (so invisible or unicode
 * characters and quotes show), everything else is named by its type or printed briefly.
 *
 * @example
 * ```ts
 * import { describeValue } from './errors.ts';
 *
 * console.assert(describeValue('Bad-Name') === '"Bad-Name"');
 * console.assert(describeValue(undefined) === 'undefined');
 * ```
 */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'symbol':
      return value.toString();
    case 'function':
      return `function ${value.name || '(anonymous)'}`;
    default:
      if (value === null) return 'null';
      if (Array.isArray(value)) return 'an array';
      return `an object`;
  }
}
