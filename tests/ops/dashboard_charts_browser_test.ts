/**
 * The dashboard's charts of lag, p95 step latency and failures per queue (issue 26;
 * docs/design/observability.md) in a real headless browser (Debian's chromium over CDP by
 * playwright-core), drawn by the page from real data: tasks run by a real worker (spread over
 * the last hour by writing the counters' per-minute samples after each run, as a busy hour would
 * have left them) and a queue no worker reads. What the page draws is checked against
 * `metricsHistory`, which the test reads itself. The screenshot of the cards goes to a temporary file; with
 * `SWITCHYARD_SCREENSHOT=docs` it replaces docs/dashboard_charts.png (the README's image).
 */
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { createDashboard, metricsHistory } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { startChromium } from '../_helpers/chromium.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const SCREENSHOT = Deno.env.get('SWITCHYARD_SCREENSHOT') === 'docs'
  ? new URL('../../docs/dashboard_charts.png', import.meta.url)
  : new URL(`file://${await Deno.makeTempFile({ suffix: '.png' })}`);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const RUNS = 48;
const LOCK = `hashtextextended('switchyard.sample_metrics', 0)`;

Deno.test({
  name: 'the charts draw lag, p95 latency and failures per minute from the database',
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cleanups: (() => Promise<unknown>)[] = [];
    const problems: string[] = [];
    try {
      const browserProcess = await startChromium(); // fails (never skips) without chromium
      cleanups.push(() => browserProcess.stop());
      const db = await createTestDatabase();
      cleanups.push(() => db.close());
      const sql = db.sql;
      const client = untypedClient(db.url);
      cleanups.push(() => client.close());

      // Real work: every fourth run's first attempt fails; durations vary with the input.
      const flow = new Flow<{ n: number }>({ slug: 'chartsWorkV1', baseDelay: 0 })
        .step({ slug: 'render' }, async (input, ctx) => {
          await new Promise((r) => setTimeout(r, 5 + (input.n % 7) * 6));
          if (input.n % 4 === 0 && ctx.attempt === 1) throw new Error('upstream timeout');
          return input.n;
        });
      // A queue no worker reads, from the start: its messages wait while the hour is written.
      const idle = new Flow<{ n: number }>({ slug: 'chartsIdleV1' }).step({ slug: 'x' }, () => 1);
      await sql`select switchyard.ensure_flow(${
        sql.json(toPlacement(idle).shape as never)
      }::jsonb)`;
      for (let n = 0; n < 3; n++) {
        await sql`select switchyard.start_flow('chartsIdleV1', ${sql.json({ n })}::jsonb)`;
      }
      // As an hour of work would have left the counters' samples
      // (docs/design/observability.md#counters-histograms-and-levels): this session holds
      // the samplers' lock, so the worker's heartbeats sample nothing, and after run n ends it
      // writes the sample of RUNS - n minutes ago, so run n's work (its duration, its failed
      // attempt) is the minute RUNS - n + 1 minutes ago.
      const sampler = await sql.reserve();
      cleanups.push(async () => {
        await sampler.unsafe(`select pg_advisory_unlock(${LOCK})`);
        sampler.release();
      });
      await sampler.unsafe(`select pg_advisory_lock(${LOCK})`);
      const [{ t }] = await sampler`select date_trunc('minute', now()) as t`;
      const sample = async (back: number) =>
        await sampler`select switchyard.sample_metrics(
          ${new Date((t as Date).getTime() - back * 60_000)}::timestamptz + interval '30 s')`;
      const worker = await startWorker(flow, {
        connectionString: db.url,
        ...FAST,
        maxConcurrent: 8,
        logger: SILENT,
      });
      try {
        await sample(RUNS + 1);
        for (let n = 0; n < RUNS; n++) {
          const [{ id }] = await sql`select switchyard.start_flow('chartsWorkV1',
            ${sql.json({ n })}::jsonb) as id`;
          await waitFor(`run ${n} to complete`, async () => {
            const [{ status }] = await sql`select status from switchyard.runs where run_id = ${id}`;
            return status === 'completed';
          });
          await sample(RUNS - n);
        }
      } finally {
        await within(30_000, 'the worker to stop', worker.stop());
      }
      // The idle queue's oldest message has been visible for 4 minutes; the samples of this
      // minute (and of the next, should the clock have passed it) see it.
      await sql`update pgmq.q_chartsidlev1
                   set vt = now() - interval '4 minutes', enqueued_at = now() - interval '4 minutes'`;
      await sampler`select switchyard.sample_metrics(m)
                      from generate_series(${t}::timestamptz, now(), interval '1 minute') m`;

      const dashboard = createDashboard({ source: client, env: () => undefined });
      const port = freePort();
      const server = Deno.serve(
        { hostname: '127.0.0.1', port, onListen: () => {} },
        dashboard.fetch,
      );
      cleanups.push(() => server.shutdown());
      const browser = await chromium.connectOverCDP(browserProcess.cdp);
      cleanups.push(() => browser.close().catch(() => {}));
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } }))
        .newPage();
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
      });
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForSelector('body[data-loaded="1"]');

      const history = await metricsHistory(client);
      const work = history.find((h) => h.queueName === 'chartsworkv1')!;
      const card = page.locator('[data-queue="chartsworkv1"]');
      const failures = card.locator('[data-chart="failures"]');
      // One bar per minute with failures, as many as the database has.
      const failedMinutes = work.failures.filter((n) => n > 0).length;
      assert.equal(failedMinutes, RUNS / 4, 'the workload put one failure in each of 12 minutes');
      assert.equal(await failures.locator('svg rect').count(), failedMinutes);
      assert.equal(Number(await failures.getAttribute('data-peak')), Math.max(...work.failures));
      assert.match(await failures.innerText(), new RegExp(`${RUNS / 4} in 60 min`));
      const p95 = card.locator('[data-chart="p95"]');
      const latencyMinutes = work.p95Ms.filter((v) => v !== null).length;
      assert.equal(latencyMinutes, RUNS, 'one completion in each of 48 minutes');
      assert.equal(Number(await p95.getAttribute('data-points')), latencyMinutes);
      const peak = Math.max(...work.p95Ms.filter((v): v is number => v !== null));
      assert.ok(Math.abs(Number(await p95.getAttribute('data-peak')) - peak) < 1e-6);
      // Consecutive minutes with completions make one line.
      assert.equal(await p95.locator('svg polyline').count(), 1);
      const lag = page.locator('[data-queue="chartsidlev1"] [data-chart="lag"]');
      const lagPeak = Number(await lag.getAttribute('data-peak'));
      assert.ok(lagPeak >= 240 && lagPeak < 260, `the waiting tasks' lag ${lagPeak}`);
      assert.match(await lag.innerText(), /now 24\d s · peak 24\d s/);
      assert.equal(await lag.locator('svg polyline').count(), 1);

      await page.waitForSelector('#status.ok');
      await page.locator('#queues').screenshot({ path: SCREENSHOT.pathname });
      const png = await Deno.readFile(SCREENSHOT);
      assert.deepEqual([...png.slice(1, 4)], [0x50, 0x4e, 0x47], 'a PNG');
      assert.ok(png.length > 10_000, `screenshot is ${png.length} bytes`);
      assert.deepEqual(problems, []);
    } finally {
      for (const c of cleanups.reverse()) await c().catch((e) => problems.push(String(e)));
    }
  },
});
