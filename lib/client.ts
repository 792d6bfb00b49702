/**
 * A small client for callers: start runs by alias or slug, read their status,
 * wait for them, and the operator functions of the SQL core.
 *
 * @module
 */
import postgres from 'postgres';
import { assertJson } from './slugs.ts';

/** The status document of one run (`switchyard.run_status`). */
export interface RunStatus {
  run_id: string;
  flow_slug: string;
  started_as: string;
  status: 'started' | 'completed' | 'failed';
  output: unknown;
  error: string | null;
  steps: { step_slug: string; status: string; queue_name: string | null; attempts: number }[];
}

/** The client returned by {@linkcode connect}. */
export interface Client {
  readonly sql: postgres.Sql;
  /** Starts a run of an alias's active version or of a concrete flow; returns the run id. */
  startFlow(flowOrAlias: string, input: unknown): Promise<string>;
  runStatus(runId: string): Promise<RunStatus | null>;
  /** Polls until the run completes or fails (or the deadline passes: then it throws). */
  waitForRun(runId: string, opts?: { timeoutMs?: number; intervalMs?: number }): Promise<RunStatus>;
  activateAlias(alias: string, flowSlug: string): Promise<void>;
  pauseFunction(functionName: string, reason: string): Promise<boolean>;
  resumeFunction(functionName: string): Promise<boolean>;
  drainStatus(queueName?: string): Promise<
    {
      queue_name: string;
      flow_slug: string;
      alias: string | null;
      state: 'active' | 'draining' | 'drained';
      started_runs: number;
      queued_tasks: number;
      started_tasks: number;
    }[]
  >;
  close(): Promise<void>;
}

/**
 * Connects to the database (`connectionString`, else `SUPABASE_DB_URL`, else `DATABASE_URL`).
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
  const url = connectionString ?? Deno.env.get('SUPABASE_DB_URL') ?? Deno.env.get('DATABASE_URL');
  if (!url) throw new Error('no database: pass a connection string or set DATABASE_URL');
  const sql = postgres(url, { prepare: false, max: opts.max ?? 5, onnotice: () => {} });
  const runStatus = async (runId: string) => {
    const [row] = await sql<{ s: RunStatus | null }[]>`
      select switchyard.run_status(${runId}::uuid) as s`;
    return row.s;
  };
  return {
    sql,
    async startFlow(flowOrAlias, input) {
      assertJson(input, 'input');
      const [row] = await sql<{ id: string }[]>`
        select switchyard.start_flow(${flowOrAlias}::text, ${
        sql.json(input as never)
      }::jsonb) as id`;
      return row.id;
    },
    runStatus,
    async waitForRun(runId, { timeoutMs = 30_000, intervalMs = 50 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const status = await runStatus(runId);
        if (status && status.status !== 'started') return status;
        if (Date.now() > deadline) {
          throw new Error(
            `run ${runId} still ${status?.status ?? 'missing'} after ${timeoutMs} ms`,
          );
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    },
    async activateAlias(alias, flowSlug) {
      await sql`select switchyard.activate_alias(${alias}::text, ${flowSlug}::text)`;
    },
    async pauseFunction(name, reason) {
      const [row] = await sql<{ ok: boolean }[]>`
        select switchyard.pause_function(${name}::text, ${reason}::text) as ok`;
      return row.ok;
    },
    async resumeFunction(name) {
      const [row] = await sql<{ ok: boolean }[]>`
        select switchyard.resume_function(${name}::text) as ok`;
      return row.ok;
    },
    async drainStatus(queueName) {
      return await sql`
        select queue_name, flow_slug, alias, state, started_runs::int, queued_tasks::int,
               started_tasks::int
          from switchyard.drain_status(${queueName ?? null}::text)` as never;
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
