/**
 * The dashboard page in a real headless browser (Debian's chromium, driven over CDP by
 * playwright-core) against real PostgreSQL with running work: served by the real
 * `deno task dashboard` command, it shows a paused function's reason, the draining version
 * and a failed run's error; read-only without the bearer; its Pause button pauses the function,
 * Cancel cancels a started run (shown cancelled, with its events) and Retry makes a failed run
 * complete (checked in the database); Send signal on a waiting run's wait step delivers the
 * payload typed into its prompt and the run goes on to complete. The screenshot goes to a temporary file; with
 * `SWITCHYARD_SCREENSHOT=docs` it replaces docs/dashboard.png (the README's image).
 */
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, routeFlow, signalPayload, startWorker } from '../../lib/mod.ts';
import { createDashboard } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { canConnect } from '../../cli/_util.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import {
  BILLING_FUNCTION,
  FAILURE,
  PAUSE_REASON,
  PAUSED_FUNCTION,
  SCHEDULE,
  startDashboardWork,
} from '../_helpers/dashboard_work.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';
import { startChromium } from '../_helpers/chromium.ts';
import { spawnDeno } from '../_helpers/process.ts';

/** What the page functions below read of the page's window (the test has no DOM types). */
type PageGlobals = {
  document: { getElementById(id: string): { innerText: string } | null };
};

const SECRET = 'dashboard-browser-test-secret';
const SCREENSHOT = Deno.env.get('SWITCHYARD_SCREENSHOT') === 'docs'
  ? new URL('../../docs/dashboard.png', import.meta.url)
  : new URL(`file://${await Deno.makeTempFile({ suffix: '.png' })}`);
const ROOT = new URL('../..', import.meta.url).pathname;

/** Runs `deno task dashboard --port N` (same permissions as the task) until `stop()`. */
async function startDashboardCommand(databaseUrl: string) {
  const port = freePort();
  const child = spawnDeno(
    [
      'run',
      '--allow-env',
      '--allow-net',
      '--allow-read',
      'cli/dashboard.ts',
      '--port',
      String(port),
    ],
    { cwd: ROOT, env: { DATABASE_URL: databaseUrl, SWITCHYARD_WORKER_SECRET: SECRET } },
  );
  await waitFor('deno task dashboard to listen', async () => {
    if (child.exited) throw new Error(`deno task dashboard exited: ${child.output}`);
    return await canConnect(port);
  }, { timeoutMs: 60_000, intervalMs: 100 });
  return {
    url: `http://127.0.0.1:${port}/`,
    async stop() {
      const out = await child.stop('SIGTERM');
      return { code: out.code, output: `${out.stdout}\n${out.stderr}` };
    },
  };
}

Deno.test({
  name:
    'dashboard page in headless chromium: running work, read-only, pause, cancel, retry, signal, screenshot',
  // playwright keeps its CDP socket and timers across steps; everything is closed in finally.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    // Cleanups run in reverse order whatever fails, from here on.
    const cleanups: (() => Promise<unknown>)[] = [];
    const problems: string[] = [];
    try {
      const browserProcess = await startChromium(); // fails (never skips) without chromium
      cleanups.push(() => browserProcess.stop());
      const db = await createTestDatabase();
      cleanups.push(() => db.close());
      const client = untypedClient(db.url);
      cleanups.push(() => client.close());
      const work = await startDashboardWork(db.url, db.sql, client);
      cleanups.push(() => work.stop());
      // Row triggers (docs/design/origins.md): one in place (its condition starts nothing, so the
      // work's runs are unchanged) and one whose trigger was dropped by hand.
      await db.sql`create table public.dash_orders (id bigint primary key)`;
      await db.sql`select switchyard.declare_row_trigger('dash_orders_in', 'public.dash_orders',
                     'billing', condition => 'false', backfill => true)`;
      await db.sql`select switchyard.declare_row_trigger('dash_orders_gone', 'public.dash_orders',
                     'billing', events => array['delete'])`;
      await db.sql`drop trigger switchyard_dash_orders_gone on public.dash_orders`;
      // An open batch (docs/design/batching.md) of a batched flow on the paused archive queue:
      // two events, due in an hour, so no tick closes it while the page is read.
      const digest = routeFlow(
        new Flow<{ day: string }[]>({
          slug: 'archiveDigestV1',
          batch: { maxSize: 10, timeout: 3600 },
        }).step({ slug: 'compact' }, () => true),
        { queues: { compact: 'dash_archive' } },
      );
      await db.sql`select switchyard.ensure_flow(${
        db.sql.json(toPlacement(digest).shape as never)
      }::jsonb)`;
      await db.sql`select switchyard.sync_alias('archive_digest', array['archiveDigestV1'])`;
      for (const day of ['d1', 'd2']) {
        await db.sql`select switchyard.start_flow('archive_digest', ${
          db.sql.json({ day })
        }::jsonb, batch_key => 'week:1')`;
      }
      const dashboard = await startDashboardCommand(db.url);
      cleanups.push(async () => {
        const { output } = await dashboard.stop();
        if (problems.length) console.error(output);
      });
      const browser = await chromium.connectOverCDP(browserProcess.cdp);
      cleanups.push(() => browser.close().catch(() => {}));

      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      const watched = async () => {
        const p = await context.newPage();
        p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
        p.on('console', (m) => {
          if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
        });
        return p;
      };
      const page = await watched();
      await page.goto(dashboard.url);
      // Selectors, not string predicates: the page's CSP forbids eval, which those need.
      await page.waitForSelector('body[data-loaded="1"]');

      await t.step('shows the running work', async () => {
        const paused = page.locator(`[data-pause-reason="${PAUSED_FUNCTION}"]`);
        assert.match(await paused.innerText(), new RegExp(PAUSE_REASON));
        const v1 = page.locator('[data-queue="dash_fetch"] tr[data-version="reportsV1"]');
        assert.match(await v1.innerText(), /draining/);
        const v2 = page.locator('[data-queue="dash_fetch"] tr[data-version="reportsV2"]');
        assert.match(await v2.innerText(), /active/);
        const error = page.locator(`[data-run-error="${work.failedRun}"]`);
        assert.match(await error.innerText(), new RegExp(`^charge: .*${FAILURE}`));
        const fetchQueue = await page.locator('[data-queue="dash_fetch"]').innerText();
        assert.match(fetchQueue, /0 visible · 2 hidden/);
        assert.match(fetchQueue, /dash-fetch-worker/);
        assert.match(fetchQueue, /live/);
        // The queue's counters since install, as /metrics serves them
        // (docs/design/observability.md#counters-histograms-and-levels).
        assert.match(
          fetchQueue,
          /since install: \d+ claimed · \d+ completed · \d+ failed attempts/,
        );
        assert.equal(await page.locator('[data-queue="dash_fetch"] .chart svg rect').count(), 60);
        const schedule = await page.locator(`[data-schedule="${SCHEDULE}"]`).innerText();
        assert.match(schedule, /archiveV1/);
        assert.match(schedule, /0 3 \* \* \*\s+Europe\/Berlin/);
        assert.match(schedule, /none yet/, 'never ticked');
        assert.match(schedule, /T0[12]:00:00/, 'the next tick is 03:00 Berlin time, in UTC');
        const inPlace = await page.locator('[data-row-trigger="dash_orders_in"]').innerText();
        assert.match(inPlace, /public\.dash_orders\s+insert\s+billing\s+installed\s+pending/);
        const gone = await page.locator('[data-row-trigger="dash_orders_gone"]').innerText();
        assert.match(gone, /delete\s+billing\s+missing\s+none declared\s+0/);
        const batch = await page.locator('[data-batch="archive_digest/week:1"]').innerText();
        assert.match(batch, /archive_digest\s+week:1\s+2 \/ 10\s+.+ ago\s+in 59m \d+s/);
      });

      await t.step('read-only without the bearer: no action buttons', async () => {
        assert.equal(await page.locator('#access').innerText(), 'read-only');
        assert.equal(await page.locator('button[data-action]').count(), 0);
        assert.equal(await page.locator('button[data-run-id]').count(), 0, 'no Cancel, no Retry');
        assert.doesNotMatch(await page.locator('#runs tr').first().innerText(), /action/);
      });

      await t.step('with the bearer, Pause pauses the function in the database', async () => {
        await page.fill('#token', SECRET);
        await page.click('#token-use');
        await page.waitForSelector(
          `button[data-action="pause"][data-function="${BILLING_FUNCTION}"]`,
        );
        assert.equal(await page.locator('#access').innerText(), 'actions enabled');
        await page.fill(`[data-reason-for="${BILLING_FUNCTION}"]`, 'declines under review');
        await page.click(`button[data-action="pause"][data-function="${BILLING_FUNCTION}"]`);
        const row = await waitFor('the function to be paused', async () => {
          const [r] = await db.sql`select paused_at, pause_reason from switchyard.worker_functions
            where function_name = ${BILLING_FUNCTION} and paused_at is not null`;
          return r;
        });
        assert.equal(row.pause_reason, 'declines under review');
        await page.waitForSelector(`[data-pause-reason="${BILLING_FUNCTION}"]`);
        assert.match(
          await page.locator(`[data-pause-reason="${BILLING_FUNCTION}"]`).innerText(),
          /declines under review/,
        );
        await page.waitForSelector(
          `button[data-action="resume"][data-function="${BILLING_FUNCTION}"]`,
        );
      });

      await t.step('a run opens as a timeline of its steps', async () => {
        await page.click(`tr[data-run="${work.failedRun}"]`);
        const failed = page.locator('tr.detail pre.error').first();
        assert.match(await failed.innerText(), new RegExp(FAILURE));
        await page.click(`tr[data-run="${work.v2Runs.at(-1)}"]`);
        assert.equal(await page.locator('tr.detail').count(), 2);
        assert.ok((await page.locator('tr.detail .timeline svg rect').count()) >= 3);
      });

      await t.step('a full-page screenshot of the live page is a non-trivial PNG', async () => {
        // The last refresh succeeded: the shot shows live data.
        await page.waitForSelector('#status.ok');
        await page.screenshot({ path: SCREENSHOT.pathname, fullPage: true });
        const { size } = await Deno.stat(SCREENSHOT);
        assert.ok(size > 40_000, `screenshot is ${size} bytes`);
        const png = await Deno.readFile(SCREENSHOT);
        assert.deepEqual([...png.slice(1, 4)], [0x50, 0x4e, 0x47], 'a PNG');
        const view = new DataView(png.buffer);
        assert.ok(view.getUint32(16) >= 1400 && view.getUint32(20) >= 900, 'full-page size');
      });

      const runStatus = async (run: string) =>
        (await db.sql`select status, error from switchyard.runs where run_id = ${run}`)[0];

      await t.step(
        'Cancel on a started run cancels it: shown cancelled, with its events',
        async () => {
          const run = work.v1Runs[0];
          const cancel = page.locator(`button[data-action="cancel"][data-run-id="${run}"]`);
          await cancel.waitFor();
          assert.equal(await page.locator(`button[data-run-id="${work.v2Runs[0]}"]`).count(), 0);
          // The prompt is the confirmation: dismissed, nothing is sent.
          page.once('dialog', (d) => d.dismiss());
          await cancel.click();
          assert.equal(await cancel.isEnabled(), true, 'nothing was sent');
          assert.equal((await runStatus(run)).status, 'started');
          page.once('dialog', (d) => d.accept('the customer withdrew'));
          await cancel.click();
          // The action's message stays 4 s (then a refresh may replace it): read it while it is
          // shown, not after the checks below, which take longer than that on a loaded machine.
          await page.waitForFunction(
            () =>
              /Cancelled run/.test(
                (globalThis as unknown as PageGlobals).document.getElementById('message')
                  ?.innerText ?? '',
              ),
            undefined,
            { timeout: 15_000 },
          );
          await waitFor(
            'the run to be cancelled',
            async () => (await runStatus(run)).status === 'cancelled',
          );
          assert.equal((await runStatus(run)).error, 'cancelled: the customer withdrew');
          const status = page.locator(`tr[data-run="${run}"] .pill.cancelled`);
          await status.waitFor();
          assert.equal(await status.innerText(), 'cancelled');
          const started = page.locator(`tr[data-run="${work.v1Runs[1]}"] .pill`);
          const colors = await Promise.all([status, started].map((l) =>
            l.evaluate((el) => {
              const style = el.ownerDocument.defaultView!.getComputedStyle(el);
              return `${style.color} on ${style.backgroundColor}`;
            })
          ));
          assert.notEqual(colors[0], colors[1], 'cancelled is styled apart from started');
          assert.match(
            await page.locator(`[data-run-error="${run}"]`).innerText(),
            /cancelled: the customer withdrew/,
          );
          assert.equal(await cancel.count(), 0, 'a cancelled run offers no Cancel');
          await page.click(`tr[data-run="${run}"] td >> nth=1`);
          const events = page.locator(`[data-events="${run}"] li`);
          await events.first().waitFor();
          assert.match(await events.first().innerText(), /run\s+started/);
          assert.match(await events.last().innerText(), /run\s+cancelled/);
          const [{ n }] = await db.sql`select count(*)::int as n from switchyard.run_events
            where run_id = ${run}`;
          assert.equal(await events.count(), n, 'every event of the run is listed');
        },
      );

      await t.step('after a resume, Retry on the failed run makes it complete', async () => {
        // The pause above stopped the billing function's worker: resume it from the page and
        // start a worker, as the next request would on Supabase.
        await page.click(`button[data-action="resume"][data-function="${BILLING_FUNCTION}"]`);
        await waitFor('the function to be resumed', async () => {
          const [r] = await db.sql`select 1 from switchyard.worker_functions
            where function_name = ${BILLING_FUNCTION} and paused_at is null`;
          return r;
        });
        await work.startWorker('dash_billing');
        const retry = page.locator(
          `button[data-action="retry"][data-run-id="${work.failedRun}"]`,
        );
        await retry.click();
        await waitFor(
          'the retried run to complete',
          async () => (await runStatus(work.failedRun)).status === 'completed',
        );
        const status = page.locator(`tr[data-run="${work.failedRun}"] .pill.ok`);
        await status.waitFor();
        assert.equal(await status.innerText(), 'completed');
        assert.equal(await retry.count(), 0, 'a completed run offers no Retry');
        // The table says it completed after a retry, and counts its steps as completed.
        const row = await page.locator(`tr[data-run="${work.failedRun}"]`).innerText();
        assert.match(row, /1 step completed/);
        assert.match(row, /retried/);
        // Its detail, open since the timeline step, lists the retry.
        await page.waitForSelector(`[data-events="${work.failedRun}"] li[data-event="retried"]`);
        assert.match(
          await page.locator(`[data-events="${work.failedRun}"] li`).last().innerText(),
          /run\s+completed/,
        );
      });

      await t.step(
        'Send signal on a waiting run delivers the payload and the run goes on',
        async () => {
          const flow = new Flow({ slug: 'approveDashV1' })
            .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean }>() })
            .step(
              { slug: 'publish', dependsOn: ['approval'] },
              (input) => (input.approval.approved ? 'published' : 'held back'),
            );
          await db.sql`select switchyard.ensure_flow(${
            db.sql.json(toPlacement(flow).shape as never)
          }::jsonb)`;
          const worker = await startWorker(flow, { connectionString: db.url, ...FAST });
          cleanups.push(() => worker.stop());
          const run = await client.startFlow('approveDashV1', {});
          await page.click(`tr[data-run="${run}"]`);
          const send = page.locator(
            `button[data-action="signal"][data-run-id="${run}"][data-step="approval"]`,
          );
          await send.waitFor();
          assert.equal(await send.innerText(), 'Send signal to approval');
          assert.match(
            await page.locator(`tr[data-run="${run}"] + tr.detail`).innerText(),
            /approval[\s\S]*waiting/,
          );
          // The prompt takes the payload; dismissed, nothing is sent.
          page.once('dialog', (d) => d.dismiss());
          await send.click();
          assert.equal((await runStatus(run)).status, 'started');
          page.once('dialog', (d) => d.accept('{"approved": true}'));
          await send.click();
          // Read the action's message while it is shown (4 s; the run's completion may take longer).
          await page.waitForFunction(
            () =>
              /Signal for approval.*delivered/.test(
                (globalThis as unknown as PageGlobals).document.getElementById('message')
                  ?.innerText ?? '',
              ),
            undefined,
            { timeout: 15_000 },
          );
          await waitFor(
            'the signalled run to complete',
            async () => (await runStatus(run)).status === 'completed',
          );
          const [row] = await db.sql`select output from switchyard.runs where run_id = ${run}`;
          assert.deepEqual(row.output, { publish: 'published' });
          const [signal] = await db.sql`select payload, delivered_at is not null as delivered
            from switchyard.run_signals where run_id = ${run} and step_slug = 'approval'`;
          assert.deepEqual({ ...signal }, { payload: { approved: true }, delivered: true });
          await page.locator(`tr[data-run="${run}"] .pill.ok`).waitFor();
          assert.equal(await send.count(), 0, 'a completed run offers no Send signal');
        },
      );

      await t.step('an empty database shows where to start', async () => {
        const empty = await createTestDatabase();
        cleanups.push(() => empty.close());
        const emptyClient = untypedClient(empty.url);
        cleanups.push(() => emptyClient.close());
        const port = freePort();
        const server = Deno.serve(
          { hostname: '127.0.0.1', port, onListen: () => {} },
          createDashboard({ source: emptyClient, env: () => undefined }).fetch,
        );
        cleanups.push(() => server.shutdown());
        const blank = await watched();
        await blank.goto(`http://127.0.0.1:${port}/`);
        await blank.waitForSelector('body[data-loaded="1"]');
        assert.match(await blank.locator('#queues').innerText(), /No queues yet.*scaffold-queue/s);
        assert.match(await blank.locator('#runs').innerText(), /No runs yet.*start_flow/s);
        assert.match(await blank.locator('#batches').innerText(), /None open\..*batch key/s);
        assert.equal(await blank.locator('#access').innerText(), 'read-only');
        await blank.close();
      });

      assert.deepEqual(problems, [], 'no script errors or CSP violations');
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup();
    }
  },
});
