/**
 * Running work for the dashboard suites: real workers on shared queues, a version that
 * drains while its successor is active, a failed run, a paused function with a backlog.
 *
 * - alias `reports`: `reportsV1` and `reportsV2`, steps `fetch` (queue `dash_fetch`) and
 *   `render` (`dash_render`). Two v1 runs start while v1 is the target; then workers with
 *   v1 and v2 start and move the alias to v2. v1's `fetch` handler waits for `release()`,
 *   so v1 stays draining (two started runs, two started tasks on `dash_fetch`).
 * - `V2_RUNS` runs of v2 complete.
 * - alias `billing`: `billingV1`, step `charge` (`dash_billing`, one attempt) throws
 *   `FAILURE` on a run's first attempt: one failed run. A retry's attempt succeeds, so the
 *   retried run completes.
 * - `archiveV1` on `dash_archive`: compiled, `ARCHIVE_RUNS` runs queued, its function
 *   `dash-archive-worker` registered and paused with `PAUSE_REASON`, no worker.
 */
import type postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import type { Worker } from '../../lib/mod.ts';
import { pauseFunction } from '../../lib/ops.ts';
import type { UntypedClient } from './untyped_client.ts';
import { FAST, waitFor } from './wait.ts';

export const V2_RUNS = 6;
export const ARCHIVE_RUNS = 3;
export const FAILURE = 'card declined for customer 42';
export const PAUSE_REASON = 'maintenance window: archive storage migration';
export const PAUSED_FUNCTION = 'dash-archive-worker';
export const BILLING_FUNCTION = 'dash-billing-worker';
/** A schedule of archiveV1 (never ticked here: it starts no run). */
export const SCHEDULE = 'nightly-archive';

/** What {@linkcode startDashboardWork} left running. */
export interface DashboardWork {
  /** The two v1 runs held in `fetch`. */
  v1Runs: string[];
  /** The completed v2 runs. */
  v2Runs: string[];
  /** The failed billing run. */
  failedRun: string;
  /** Lets the held v1 handlers finish. */
  release(): void;
  /**
   * Starts one more worker on a queue, with the same registry: after a resume, as the next
   * request would start one on Supabase (a pause stops a function's workers).
   */
  startWorker(queueName: 'dash_fetch' | 'dash_render' | 'dash_billing'): Promise<void>;
  /** Releases the handlers and stops every worker. */
  stop(): Promise<void>;
}

function reports(slug: string, gate?: Promise<void>) {
  const flow = new Flow<{ report: string }>({ slug, timeout: 120 })
    .step({ slug: 'fetch' }, async (input) => {
      await gate;
      return { rows: input.report.length };
    })
    .step({ slug: 'render', dependsOn: ['fetch'] }, (input) => ({ pages: input.fetch.rows }));
  return defineDeployedFlow(
    routeFlow(flow, { queues: { fetch: 'dash_fetch', render: 'dash_render' } }),
    { alias: 'reports' },
  );
}

/** Starts the work described in the module docs and waits until it is in place. */
export async function startDashboardWork(
  url: string,
  sql: postgres.Sql,
  client: UntypedClient,
): Promise<DashboardWork> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const v1 = reports('reportsV1', gate);
  const v2 = reports('reportsV2');
  const billing = defineDeployedFlow(
    routeFlow(
      new Flow<{ amount: number }>({ slug: 'billingV1', maxAttempts: 1 })
        .step({ slug: 'charge' }, (input, ctx) => {
          if (ctx.attempt === 1) throw new Error(FAILURE);
          return { charged: input.amount };
        }),
      { queues: { charge: 'dash_billing' } },
    ),
    { alias: 'billing' },
  );
  const archive = routeFlow(
    new Flow<{ day: string }>({ slug: 'archiveV1' }).step({ slug: 'compact' }, () => true),
    { queues: { compact: 'dash_archive' } },
  );

  // v1 is the alias's target when its runs start; archive is compiled, never served.
  for (const target of [v1, archive]) {
    await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(target).shape as never)
    }::jsonb)`;
  }
  await sql`select switchyard.sync_alias('reports', array['reportsV1'])`;
  const v1Runs = [
    await client.startFlow('reports', { report: 'weekly' }),
    await client.startFlow('reports', { report: 'monthly' }),
  ];
  for (let i = 0; i < ARCHIVE_RUNS; i++) await client.startFlow('archiveV1', { day: `d${i}` });
  await sql`select switchyard.register_function(${PAUSED_FUNCTION}::text, 'dash_archive')`;
  await pauseFunction(sql, PAUSED_FUNCTION, PAUSE_REASON);

  const base = { connectionString: url, ...FAST };
  const registry = [v1, v2, billing] as const;
  const workers: Worker[] = [];
  for (const queueName of ['dash_fetch', 'dash_render', 'dash_billing'] as const) {
    workers.push(await startWorker(registry, { ...base, queueName, maxConcurrent: 4 }));
  }
  const v2Runs: string[] = [];
  for (let i = 0; i < V2_RUNS; i++) {
    v2Runs.push(await client.startFlow('reports', { report: `daily-${i}` }));
  }
  const failedRun = await client.startFlow('billing', { amount: 42 });
  await sql`select switchyard.create_schedule(${SCHEDULE}, 'archiveV1', '0 3 * * *',
              '{"day": "yesterday"}'::jsonb, 'Europe/Berlin')`;
  for (const id of v2Runs) await client.waitForRun(id);
  await client.waitForRun(failedRun);
  await waitFor('both v1 runs held in fetch', async () => {
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from switchyard.step_tasks
       where flow_slug = 'reportsV1' and step_slug = 'fetch' and status = 'started'`;
    return n === 2;
  });
  let stopped: Promise<void> | undefined;
  return {
    v1Runs,
    v2Runs,
    failedRun,
    release,
    async startWorker(queueName) {
      workers.push(await startWorker(registry, { ...base, queueName, maxConcurrent: 4 }));
    },
    stop() {
      release();
      stopped ??= Promise.all(workers.map((w) => w.stop().catch(() => {}))).then(() => {});
      return stopped;
    },
  };
}
