/**
 * What a coverage refusal tells its reader to do about the concrete flows it names that the
 * registry lacks (docs/design/worker.md#worker-start-up, docs/design/versions.md): an alias still
 * pointing at a version the registry
 * no longer lists is moved with the exact `activate_alias` command; a retired version with
 * started runs goes back into the registry until it is drained (or its runs are cancelled).
 *
 * @module
 */
import type { UnlistedFlow } from '../sql/worker_queries.ts';

/** A SQL string literal. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * One sentence per flow the registry lacks, naming the command that fixes it.
 *
 * @example
 * ```ts
 * import { coverageAdvice } from './coverage_advice.ts';
 *
 * const advice = coverageAdvice(new Map([['orders', ['ordersV2', 'ordersV3']]]), [
 *   {
 *     flow_slug: 'ordersV1',
 *     alias: 'orders',
 *     is_target: true,
 *     started_runs: 0,
 *     declared_target: 'ordersV3',
 *   },
 * ]);
 * console.assert(advice[0].includes("activate_alias('orders', 'ordersV3')"));
 * ```
 */
export function coverageAdvice(
  aliases: ReadonlyMap<string, readonly string[]>,
  flows: readonly UnlistedFlow[],
): string[] {
  const advice: string[] = [];
  for (const f of flows) {
    const versions = f.alias === null ? undefined : aliases.get(f.alias);
    const target = versions?.[versions.length - 1];
    if (f.started_runs > 0) {
      advice.push(
        `${f.flow_slug} has ${f.started_runs} started run(s) and this registry lacks it: list ` +
          `it in supabase/functions/_shared/registry.ts again` +
          (f.alias === null ? '' : ` (before the newer versions of alias ${f.alias})`) +
          ', run npx switchyard compile and deploy, and retire it only once ' +
          '`npx switchyard drain` shows it drained; or cancel those runs ' +
          '(npx switchyard cancel <run>)',
      );
    } else if (f.is_target && f.alias !== null && f.declared_target === f.flow_slug) {
      // The compiled registry declares this version: this worker's registry is the older one.
      advice.push(
        `alias ${f.alias} points at ${f.flow_slug}, the version the project's compiled ` +
          'registry declares, which this registry lacks: this function runs an older registry; ' +
          'deploy it with the current one (supabase functions deploy)',
      );
    } else if (f.is_target && f.alias !== null) {
      advice.push(
        `alias ${f.alias} points at ${f.flow_slug}, which this registry lacks and which has no ` +
          "started run: move the alias to the registry's version with " +
          `select switchyard.activate_alias(${literal(f.alias)}, ${
            literal(target ?? '<version>')
          }) (or list ${f.flow_slug} in the registry again)`,
      );
    }
  }
  return advice;
}
