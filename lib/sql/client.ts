/**
 * A small client for applications and operators: start runs by alias or concrete slug,
 * read their status, wait for them, move an alias. Pause, resume, fence and drain are the
 * operator calls of `lib/ops.ts`; they take this client as their database.
 *
 * @module
 */

import { SwitchyardError } from '../errors.ts';
import { assertJson } from '../dsl/json.ts';
import { NO_CONNECTION_MESSAGE, openSql, resolveConnectionString, type Sql } from './connection.ts';
import { call } from './source.ts';

/** The status document of one run (`switchyard.run_status`). */
export interface RunStatus {
  /** The run. */
  run_id: string;
  /** Its concrete flow. */
  flow_slug: string;
  /** The alias or slug it was started as. */
  started_as: string;
  /** Where the run is. */
  status: 'started' | 'completed' | 'failed';
  /** The run's output once completed. */
  output: unknown;
  /** Why it failed. */
  error: string | null;
  /** Every step with its state, queue and attempts. */
  steps: { step_slug: string; status: string; queue_name: string | null; attempts: number }[];
}

/** The client returned by {@linkcode connect}. */
export interface Client {
  /** The postgres.js pool; operator calls accept the client itself. */
  readonly sql: Sql;
  /** Starts a run of an alias's active version or of a concrete flow; returns the run id. */
  startFlow(flowOrAlias: string, input: unknown): Promise<string>;
  /** The run's status document, or null for an unknown run. */
  runStatus(runId: string): Promise<RunStatus | null>;
  /** Polls until the run completes or fails (or the deadline passes: then it throws). */
  waitForRun(runId: string, opts?: { timeoutMs?: number; intervalMs?: number }): Promise<RunStatus>;
  /** Points an alias at a compiled concrete version (`switchyard.activate_alias`). */
  activateAlias(alias: string, flowSlug: string): Promise<void>;
  /** Closes the pool. */
  close(): Promise<void>;
}

/**
 * Connects to the database (`connectionString`, else `SWITCHYARD_DB_URL`, else `SUPABASE_DB_URL`,
 * else `DATABASE_URL`).
 *
 * @example
 * ```ts
 * import { connect } from './client.ts';
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * const runId = await client.startFlow('threads', { text: 'hello' });
 * console.log((await client.waitForRun(runId)).output);
 * await client.close();
 * ```
 */
export function connect(connectionString?: string, opts: { max?: number } = {}): Client {
  const url = resolveConnectionString(connectionString);
  if (!url) throw new SwitchyardError(NO_CONNECTION_MESSAGE);
  const sql = openSql(url, { max: opts.max ?? 5 });
  const runStatus = async (runId: string) => {
    const [row] = await call(() =>
      sql<{ s: RunStatus | null }[]>`select switchyard.run_status(${runId}::uuid) as s`
    );
    return row.s;
  };
  return {
    sql,
    async startFlow(flowOrAlias, input) {
      assertJson(input, 'input');
      const [row] = await call(() =>
        sql<{ id: string }[]>`
          select switchyard.start_flow(${flowOrAlias}::text, ${
          sql.json(input as never)
        }::jsonb) as id`
      );
      return row.id;
    },
    runStatus,
    async waitForRun(runId, { timeoutMs = 30_000, intervalMs = 50 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const status = await runStatus(runId);
        if (status && status.status !== 'started') return status;
        if (Date.now() > deadline) {
          throw new SwitchyardError(
            `run ${runId} still ${status?.status ?? 'missing'} after ${timeoutMs} ms`,
          );
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    },
    async activateAlias(alias, flowSlug) {
      await call(() => sql`select switchyard.activate_alias(${alias}::text, ${flowSlug}::text)`);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
