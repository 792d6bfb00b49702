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
 * Also rejected: arrays and objects nested more than 1000 levels
 * deep; and, with {@link UnstorableValueError}, strings and property names PostgreSQL cannot
 * store although they are JSON — holding U+0000, or a lone UTF-16 surrogate.
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

/**
 * How deep arrays and objects may nest in a value {@linkcode assertJson} accepts: deeper values
 * are refused with the path (a JSON parser takes them, but the check itself and PostgreSQL's
 * JSON functions walk them recursively).
 */
const MAX_JSON_DEPTH = 1000;

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
  if (ancestors.size >= MAX_JSON_DEPTH) {
    throw new InvalidInputError(
      path,
      `arrays and objects nest more than ${MAX_JSON_DEPTH} levels deep here (the limit)`,
    );
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

/**
 * Bytes of `value` as PostgreSQL prints it as `jsonb` text (UTF-8): the measure of the SQL
 * core's size limits on flow inputs and step outputs (docs/design/limits.md), computed the
 * way `octet_length(value::jsonb::text)` counts, so the worker refuses exactly what SQL would:
 * `, ` and `: ` between items, strings escaped as JSON, numbers without an exponent (`jsonb`
 * stores them as `numeric`: `1e21` prints as 22 digits).
 *
 * @example
 * ```ts
 * import { jsonTextBytes } from './json.ts';
 *
 * console.assert(jsonTextBytes({ name: 'é', n: [1, 2] }) === 27); // {"n": [1, 2], "name": "é"}
 * ```
 */
export function jsonTextBytes(value: JsonValue): number {
  if (value === null) return 4;
  switch (typeof value) {
    case 'boolean':
      return value ? 4 : 5;
    case 'number':
      return numericTextLength(value);
    case 'string':
      return utf8Length(JSON.stringify(value));
  }
  if (Array.isArray(value)) {
    let bytes = 2 + Math.max(0, value.length - 1) * 2; // [] and ", "
    for (const item of value) bytes += jsonTextBytes(item);
    return bytes;
  }
  const keys = Object.keys(value);
  let bytes = 2 + Math.max(0, keys.length - 1) * 2; // {} and ", "
  for (const key of keys) {
    bytes += utf8Length(JSON.stringify(key)) + 2 + jsonTextBytes(value[key]); // "key": value
  }
  return bytes;
}

/** UTF-8 length without encoding: 1-3 bytes per UTF-16 unit, 4 per surrogate pair. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Characters of a number as PostgreSQL's `numeric` prints the JSON text JavaScript writes for
 * it: plain decimal, the exponent spelled out (`1.5e-7` is `0.00000015`).
 */
function numericTextLength(n: number): number {
  const text = JSON.stringify(n);
  const e = text.search(/e/i);
  if (e < 0) return text.length;
  const sign = text.startsWith('-') ? 1 : 0;
  const mantissa = text.slice(sign, e);
  const exponent = Number(text.slice(e + 1));
  const point = mantissa.indexOf('.');
  const digits = mantissa.replace('.', '');
  const intDigits = (point < 0 ? mantissa.length : point) + exponent;
  if (intDigits <= 0) return sign + 2 + -intDigits + digits.length; // 0.000ddd
  const fraction = Math.max(0, digits.length - intDigits);
  return sign + intDigits + (fraction > 0 ? 1 + fraction : 0);
}
