/**
 * Runtime option changes (`switchyard.flow_option_history`;
 * docs/design/testing.md#upgrades-with-work-in-flight): a
 * registry that changes only a flow's runtime options (maxAttempts, baseDelay, maxDelay,
 * timeout, startDelay) is accepted under the same slug, applied to tasks created afterwards,
 * and recorded with who and when.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/** The runtime options of one flow: the flow's own and each step's (`null`: inherited). */
export interface FlowRuntimeOptions {
  /** The flow's own options. */
  flow: { maxAttempts?: number; baseDelay?: number; maxDelay?: number; timeout?: number };
  /** Each step's options by step slug. */
  steps: Record<
    string,
    {
      maxAttempts?: number | null;
      baseDelay?: number | null;
      maxDelay?: number | null;
      timeout?: number | null;
      startDelay?: number;
    }
  >;
}

/** One recorded change of a flow's runtime options. */
export interface FlowOptionChange {
  /** The change's id, increasing. */
  changeId: number;
  /** The concrete flow. */
  flowSlug: string;
  /** When the change was compiled. */
  changedAt: Date;
  /** The database session user that compiled the change (a worker's role, or an operator). */
  changedBy: string;
  /** The session's `application_name` (a worker names itself there), or null. */
  applicationName: string | null;
  /** The options before. */
  oldOptions: FlowRuntimeOptions;
  /** The options after. */
  newOptions: FlowRuntimeOptions;
  /** The changes in words, e.g. `step "fetch" option timeout null -> 120`. */
  differences: string[];
}

/**
 * The recorded option changes, newest first (at most `limit`, 1 to 10000, default 100); of one
 * flow when `flowSlug` is given.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { flowOptionHistory } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const c of await flowOptionHistory(client, { flowSlug: 'threadsV1' })) {
 *   console.log(c.changedAt.toISOString(), c.changedBy, c.differences.join('; '));
 * }
 * await client.close();
 * ```
 */
export async function flowOptionHistory(
  source: SqlSource,
  { flowSlug, limit = 100 }: { flowSlug?: string; limit?: number } = {},
): Promise<FlowOptionChange[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        change_id: string;
        flow_slug: string;
        changed_at: Date;
        changed_by: string;
        application_name: string | null;
        old_options: FlowRuntimeOptions;
        new_options: FlowRuntimeOptions;
        differences: string[];
      }[]
    >`
      select change_id::text, flow_slug, changed_at, changed_by, application_name, old_options,
             new_options, differences
        from switchyard.flow_option_history(${flowSlug ?? null}::text, ${limit}::int)`);
  return rows.map((r) => ({
    changeId: Number(r.change_id),
    flowSlug: r.flow_slug,
    changedAt: r.changed_at,
    changedBy: r.changed_by,
    applicationName: r.application_name,
    oldOptions: r.old_options,
    newOptions: r.new_options,
    differences: r.differences,
  }));
}
