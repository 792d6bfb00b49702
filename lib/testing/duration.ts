/**
 * Durations a test moves the virtual clock by (docs/design/clock.md#the-test-engine): milliseconds,
 * or text
 * of whole numbers with units, largest first (`'7d'`, `'36h'`, `'1h30m'`, `'90s'`, `'250ms'`).
 *
 * @module
 */
import { SwitchyardError } from '../errors.ts';

/**
 * A duration: milliseconds (a finite number, at least 0), or text such as `'7d'`, `'1h30m'`,
 * `'2m 30s'`, `'250ms'` (units `w`, `d`, `h`, `m`, `s`, `ms`).
 *
 * @example
 * ```ts
 * import type { Duration } from './duration.ts';
 *
 * const week: Duration = '7d';
 * const backoff: Duration = 2_000;
 * ```
 */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  w: 604_800_000,
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
};

const RULE =
  "use milliseconds (a number, at least 0) or whole numbers with units, largest first: 'w', " +
  "'d', 'h', 'm', 's', 'ms' (e.g. '7d', '1h30m', '250ms')";

/**
 * The milliseconds of a duration; throws a `SwitchyardError` naming the value and the rule for
 * anything else (a negative or fractional text amount, an unknown unit, units out of order).
 *
 * @example
 * ```ts
 * import { durationMs } from './duration.ts';
 *
 * console.assert(durationMs('1h30m') === 5_400_000);
 * console.assert(durationMs('7d') === 604_800_000);
 * console.assert(durationMs(250) === 250);
 * ```
 */
export function durationMs(value: Duration): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0) return value;
    throw new SwitchyardError(`duration ${value} is invalid: ${RULE}`);
  }
  if (typeof value !== 'string') {
    throw new SwitchyardError(`duration ${String(value)} (${typeof value}) is invalid: ${RULE}`);
  }
  const text = value.trim();
  const parts = [...text.matchAll(/(\d+)\s*(ms|w|d|h|m|s)\s*/gy)];
  const order = ['w', 'd', 'h', 'm', 's', 'ms'];
  const units = parts.map((p) => p[2]);
  const consumed = parts.reduce((n, p) => n + p[0].length, 0);
  const ordered = units.every((u, i) => i === 0 || order.indexOf(units[i - 1]) < order.indexOf(u));
  if (parts.length === 0 || consumed !== text.length || !ordered) {
    throw new SwitchyardError(`duration ${JSON.stringify(value)} is invalid: ${RULE}`);
  }
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNIT_MS[p[2]], 0);
}
