/**
 * JSON values: what flow inputs and step outputs must be, and the check that
 * refuses anything a JSON round trip would drop or reshape.
 *
 * @module
 */
import { InvalidInputError, UnstorableValueError } from '../errors.ts';

/**
 * A JSON value: what flow inputs and step outputs must be.
 *
 * @example
 * ```ts
 * import type { JsonValue } from './json.ts';
 *
 * const input: JsonValue = { threads: [1, 2, 3], since: '2024-01-01' };
 * ```
 */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * Throws {@link InvalidInputError} unless `value` survives a JSON round trip unchanged.
 *
 * Rejected, with the path of the offending value (`input.a.b`, `input.items[2]`):
 * `undefined` (also as an object property or array element, and array holes), functions,
 * symbols, bigints, `NaN` and infinities, cyclic references, symbol-keyed properties and
 * objects that are not plain objects or arrays (`Date`, `Map`, class instances …), because
 * `JSON.stringify` would silently drop or reshape them and the typed output would lie.
 * A value shared by two branches without a cycle is fine.
 *
 * Also rejected, with {@link UnstorableValueError}: strings and property names PostgreSQL
 * cannot store although they are JSON — holding U+0000, or a lone UTF-16 surrogate.
 *
 * @param value the value to check
 * @param path the name of the root value in messages (default `input`)
 *
 * @example
 * ```ts
 * import { assertJson } from './json.ts';
 *
 * assertJson({ ok: true, items: [1, 'two', null] }); // ok
 * // assertJson({ a: { b: undefined } }); // throws: input.a.b is not JSON: undefined ...
 * // assertJson(10n, 'output'); // throws: output is not JSON: bigint ...
 * ```
 */
export function assertJson(value: unknown, path = 'input'): asserts value is JsonValue {
  checkJson(value, path, new Set());
}

function checkJson(value: unknown, path: string, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
      checkStorable(value, path, 'the string');
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) {
        throw new InvalidInputError(path, `${value} is not a finite number`);
      }
      return;
    case 'undefined':
      throw new InvalidInputError(path, 'undefined has no JSON form (use null)');
    case 'bigint':
      throw new InvalidInputError(path, 'bigint has no JSON form (convert it to a string)');
    case 'symbol':
      throw new InvalidInputError(path, 'a symbol has no JSON form');
    case 'function':
      throw new InvalidInputError(path, 'a function has no JSON form');
  }
  if (value === null) return;
  const object = value as object;
  if (ancestors.has(object)) {
    throw new InvalidInputError(path, 'cyclic reference (the value contains itself)');
  }
  if (Object.getOwnPropertySymbols(object).length > 0) {
    throw new InvalidInputError(path, 'symbol-keyed properties have no JSON form');
  }
  ancestors.add(object);
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      if (!(i in object)) throw new InvalidInputError(`${path}[${i}]`, 'an array hole');
      checkJson(object[i], `${path}[${i}]`, ancestors);
    }
  } else {
    const prototype = Object.getPrototypeOf(object);
    if (prototype !== Object.prototype && prototype !== null) {
      const name = prototype?.constructor?.name ?? 'object';
      throw new InvalidInputError(
        path,
        `a ${name} is not a plain object or array (convert it to JSON first)`,
      );
    }
    for (const [key, child] of Object.entries(object)) {
      const childPath = `${path}${propertyPath(key)}`;
      checkStorable(key, childPath, 'the property name');
      checkJson(child, childPath, ancestors);
    }
  }
  ancestors.delete(object);
}

function checkStorable(text: string, path: string, what: string): void {
  const nul = text.indexOf('\u0000');
  if (nul >= 0) {
    throw new UnstorableValueError(
      path,
      `${what} holds U+0000 at index ${nul} (jsonb and text cannot hold it; remove it or ` +
        'encode the data, for example as base64)',
    );
  }
  if (!text.isWellFormed()) {
    const at = text.search(LONE_SURROGATE);
    throw new UnstorableValueError(
      path,
      `${what} holds a lone UTF-16 surrogate at index ${at} (half of a character, which ` +
        'PostgreSQL refuses; cut strings at character boundaries)',
    );
  }
}

/** An unpaired UTF-16 surrogate. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * `text` made storable in a PostgreSQL `text` column: U+0000 becomes the visible escape
 * `\u0000` and a lone surrogate becomes U+FFFD. For messages (error texts, stop reasons),
 * never for data, which {@linkcode assertJson} refuses instead.
 *
 * @example
 * ```ts
 * import { storableText } from './json.ts';
 *
 * console.assert(storableText('a\u0000b\ud800') === 'a\\u0000b\ufffd');
 * ```
 */
export function storableText(text: string): string {
  return text.replaceAll('\u0000', '\\u0000').toWellFormed();
}

function propertyPath(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
