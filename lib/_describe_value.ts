/**
 * How an error message names a value it refuses: one helper for the DSL, the SQL layer and the
 * error classes (private: not part of any entry).
 *
 * @module
 */

/**
 * Renders any value for an error message: strings are JSON-quoted (so invisible or unicode
 * characters and quotes show), everything else is named by its type or printed briefly.
 *
 * @example
 * ```ts
 * import { describeValue } from './_describe_value.ts';
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
