/**
 * Which SQL core a runtime needs (docs/design/testing.md#upgrades-with-work-in-flight). Migrations
 * are applied before the
 * functions are redeployed, so a runtime meets a core at least as new as itself; a runtime
 * that meets an older core (deployed first) refuses to start and says to apply the migrations,
 * instead of calling SQL that is not there yet.
 *
 * @module
 */

/**
 * The oldest SQL core release (`switchyard.core_version()`) this runtime works with.
 *
 * @example
 * ```ts
 * import { REQUIRED_CORE_VERSION } from './core_version.ts';
 * console.log(`needs the SQL core ${REQUIRED_CORE_VERSION} or later`);
 * ```
 */
export const REQUIRED_CORE_VERSION = '0.4.0';

/** `X.Y.Z` as three numbers, or null for anything else. */
function parts(version: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/**
 * Why a database's SQL core cannot serve this runtime, or null when it can. `found` is what
 * `switchyard.core_version()` returned, null when the function is missing (a core before 0.3.0).
 *
 * @example
 * ```ts
 * import { coreVersionProblem } from './core_version.ts';
 * console.assert(coreVersionProblem('0.4.0') === null);
 * console.assert(coreVersionProblem(null)?.includes('apply the migrations'));
 * ```
 */
export function coreVersionProblem(
  found: string | null,
  required: string = REQUIRED_CORE_VERSION,
): string | null {
  const need = parts(required)!;
  const have = found === null ? null : parts(found);
  if (have !== null) {
    const cmp = have[0] - need[0] || have[1] - need[1] || have[2] - need[2];
    if (cmp >= 0) return null;
  }
  const what = found === null
    ? `older than ${required} (it has no switchyard.core_version())`
    : JSON.stringify(found);
  return `the Switchyard SQL core in this database is ${what}; this runtime needs ${required} or ` +
    'later: apply the migrations first (supabase db push --linked, with Supabase CLI 3 --remote; ' +
    'or npx switchyard db:push), then ' +
    'redeploy the functions';
}
