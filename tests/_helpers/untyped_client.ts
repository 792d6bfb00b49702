/**
 * An untyped client for the suites: start a concrete flow or an alias by name without a
 * registry, read and await a run's status document, move an alias. The kit's own untyped
 * `connect()` was removed in 0.5.0 (apps use `createClient(registry)`, operators the calls of
 * `lib/ops.ts`); the suites start flows by concrete slug, so they keep its shape here, built on
 * the public calls: `startRun`, `runStatus` and the typed client's wait on notifications.
 *
 * @module
 */
import { createClient, type RunStatus, type StartRunOptions } from '../../lib/client.ts';
import { RunFailedError } from '../../lib/errors.ts';
import { runStatus, startRun } from '../../lib/ops.ts';
import { connectionOrigin, openSql, type Sql } from '../../lib/sql/connection.ts';
import { call } from '../../lib/sql/source.ts';

/** What {@linkcode untypedClient} returns. */
export interface UntypedClient {
  /** The postgres.js pool; operator calls accept the client itself. */
  readonly sql: Sql;
  /** Starts a run of an alias's active version or of a concrete flow; returns the run id. */
  startFlow(flowOrAlias: string, input: unknown, options?: StartRunOptions): Promise<string>;
  /** The run's status document, or null for an unknown run. */
  runStatus(runId: string): Promise<RunStatus | null>;
  /** Waits until the run is no longer started (completed, failed or cancelled): its status. */
  waitForRun(runId: string, opts?: { timeoutMs?: number }): Promise<RunStatus>;
  /** Points an alias at a compiled concrete version (`switchyard.activate_alias`). */
  activateAlias(alias: string, flowSlug: string): Promise<void>;
  /** Closes the pool. */
  close(): Promise<void>;
}

/** Opens a pool on `url` (`origin` names it in a connection error) and the calls above on it. */
export function untypedClient(
  url: string,
  opts: { max?: number; origin?: string } = {},
): UntypedClient {
  const sql = openSql(url, { max: opts.max ?? 5, origin: opts.origin ?? connectionOrigin(url) });
  const typed = createClient({ sql });
  return {
    sql,
    startFlow: (flowOrAlias, input, options) => startRun(sql, flowOrAlias, input, options),
    runStatus: (runId) => runStatus(sql, runId),
    async waitForRun(runId, { timeoutMs = 30_000 } = {}) {
      try {
        await typed.run(runId).output({ timeoutMs });
      } catch (e) {
        if (!(e instanceof RunFailedError)) throw e; // failed or cancelled: its status below
      }
      const status = await runStatus(sql, runId);
      if (status === null) throw new Error(`run ${runId} vanished after it ended`);
      return status;
    },
    async activateAlias(alias, flowSlug) {
      await call(
        sql,
        () => sql`select switchyard.activate_alias(${alias}::text, ${flowSlug}::text)`,
      );
    },
    async close() {
      await typed.close();
      await sql.end({ timeout: 5 });
    },
  };
}
