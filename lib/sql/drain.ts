/**
 * Version drain (`switchyard.drain_status`; docs/design/versions.md): per queue and
 * concrete version, whether it is active, draining or drained.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/** One queue × concrete version from `switchyard.drain_status`. */
export interface DrainState {
  /** The physical queue. */
  queueName: string;
  /** The concrete flow version. */
  flowSlug: string;
  /** The alias the version belongs to (null for none). */
  alias: string | null;
  /** `active`: an alias target (or its own alias); `draining`: work remains; `drained`: none. */
  state: 'active' | 'draining' | 'drained';
  /** Started runs that may still reach the queue. */
  startedRuns: number;
  /** Executable (queued) tasks of started runs on the queue. */
  queuedTasks: number;
  /** Recoverable (started) tasks of started runs on the queue. */
  startedTasks: number;
}

/**
 * Per queue and concrete version: active, draining (with counts) or drained.
 * An old version's handlers may leave a registry once it is drained on every queue.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { drainStatus } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const old = (await drainStatus(client)).filter((d) => d.flowSlug === 'threadsV1');
 * console.log(old.every((d) => d.state === 'drained') ? 'remove threadsV1' : 'still draining');
 * await client.close();
 * ```
 */
export async function drainStatus(source: SqlSource, queueName?: string): Promise<DrainState[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        queue_name: string;
        flow_slug: string;
        alias: string | null;
        state: DrainState['state'];
        started_runs: number;
        queued_tasks: number;
        started_tasks: number;
      }[]
    >`
      select queue_name, flow_slug, alias, state, started_runs::int, queued_tasks::int,
             started_tasks::int
        from switchyard.drain_status(${queueName ?? null}::text)`);
  return rows.map((r) => ({
    queueName: r.queue_name,
    flowSlug: r.flow_slug,
    alias: r.alias,
    state: r.state,
    startedRuns: r.started_runs,
    queuedTasks: r.queued_tasks,
    startedTasks: r.started_tasks,
  }));
}
