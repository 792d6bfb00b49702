/**
 * The dashboard page's run controls (issue 41, docs/design/rerun.md) in a real headless
 * browser (Debian's chromium over CDP, playwright-core) against real PostgreSQL with a real
 * worker: with the bearer, a run's detail reruns a failed run from the chosen step with an input
 * patch, forks it onto another version of its alias (the fork's lineage shown in the runs table,
 * linking the original), shows the SQL core's refusal of an incompatible version with each
 * problem (and nothing changes), moves a run whose task is running onto the fixed version, and
 * pauses and resumes a run. Each click is checked in the database.
 */
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { createDashboard } from '../../lib/ops.ts';
import { serveWithTimeouts } from '../../cli/_http_server.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { startChromium } from '../_helpers/chromium.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const SECRET = 'run-controls-browser-secret';
const quiet = { info() {}, warn() {}, error() {} };

// Alias bcFlow on one queue: V1's b fails on a `bad` input; V2 fixes nothing but adds an audit
// step; V3 makes a depend on a new step (incompatible with every run of V1 past a).
const gate: { open?: () => void } = {};
const v1 = new Flow<{ n: number; bad?: boolean; hold?: boolean }>({
  slug: 'bcFlowV1',
  maxAttempts: 1,
  timeout: 120,
})
  .step({ slug: 'a' }, async (input) => {
    if (input.hold) await new Promise<void>((r) => (gate.open = r));
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input, ctx) => {
    if (ctx.flowInput.bad) throw new Error(`b refuses a bad input (${input.a})`);
    return input.a * 10;
  });
const v2 = new Flow<{ n: number; bad?: boolean; hold?: boolean }>({
  slug: 'bcFlowV2',
  maxAttempts: 1,
})
  .step({ slug: 'a' }, (input) => input.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a * 100)
  .step({ slug: 'audit', dependsOn: ['b'] }, (input) => `audited ${input.b}`);
const v3 = new Flow<{ n: number }>({ slug: 'bcFlowV3', maxAttempts: 1 })
  .step({ slug: 'z' }, () => 1)
  .step({ slug: 'a', dependsOn: ['z'] }, (input) => input.z)
  .step({ slug: 'c', dependsOn: ['a'] }, (input) => input.a);
const deployed = [
  defineDeployedFlow(routeFlow(v1, { queues: { a: 'bc_q', b: 'bc_q' } }), { alias: 'bcFlow' }),
  defineDeployedFlow(routeFlow(v2, { queues: { a: 'bc_q', b: 'bc_q', audit: 'bc_q' } }), {
    alias: 'bcFlow',
  }),
  defineDeployedFlow(routeFlow(v3, { queues: { z: 'bc_q', a: 'bc_q', c: 'bc_q' } }), {
    alias: 'bcFlow',
  }),
] as const;

Deno.test({
  name: 'dashboard page: rerun, fork (lineage), a refused fork, move, pause and resume a run',
  // playwright keeps its CDP socket and timers across steps; everything is closed in finally.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const cleanups: (() => Promise<unknown>)[] = [];
    const problems: string[] = [];
    try {
      const browserProcess = await startChromium(); // fails (never skips) without chromium
      cleanups.push(() => browserProcess.stop());
      const db = await createTestDatabase();
      cleanups.push(() => db.close());
      const { sql } = db;
      const client = untypedClient(db.url);
      cleanups.push(() => client.close());
      for (const d of deployed) {
        await sql`select switchyard.ensure_flow(${sql.json(toPlacement(d).shape as never)}::jsonb)`;
      }
      await sql`select switchyard.declare_alias('bcFlow', array['bcFlowV1', 'bcFlowV2', 'bcFlowV3'])`;
      await sql`select switchyard.activate_alias('bcFlow', 'bcFlowV1')`;
      const worker = await startWorker(deployed, {
        connectionString: db.url,
        queueName: 'bc_q',
        logger: quiet,
        ...FAST,
      });
      cleanups.push(() => worker.stop());
      const dashboard = createDashboard({
        source: client.sql,
        env: (n) => (n === 'SWITCHYARD_WORKER_SECRET' ? SECRET : undefined),
        refreshMs: 1000,
      });
      const server = await serveWithTimeouts(dashboard.fetch, { port: 0 });
      cleanups.push(async () => {
        await dashboard.close();
        await server.shutdown();
      });

      // A run that fails on b's bad input, and one whose a runs until the test lets it go (by
      // concrete slug: the worker's registry moves the alias to its last version).
      const failed = await client.startFlow('bcFlowV1', { n: 3, bad: true });
      assert.equal((await client.waitForRun(failed)).status, 'failed');
      const held = await client.startFlow('bcFlowV1', { n: 4, hold: true });
      await waitFor('a of the held run to run', () => gate.open);

      const browser = await chromium.connectOverCDP(browserProcess.cdp);
      cleanups.push(() => browser.close().catch(() => {}));
      const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
      const page = await context.newPage();
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
      });
      await page.goto(`http://127.0.0.1:${server.port}/#token=${SECRET}`);
      await page.waitForSelector('body[data-loaded="1"]');
      const open = async (run: string) => {
        await page.click(`tr.run[data-run="${run}"] td >> nth=1`);
        await page.waitForSelector(`[data-controls="${run}"]`);
      };
      const control = (run: string, name: string) =>
        `[data-control="${name}"][data-control-run="${run}"]`;
      const message = () => page.locator('#message').innerText();
      const row = async (run: string) =>
        (await sql`select flow_slug, status, input, paused_at, forked_from, from_step
                     from switchyard.runs where run_id = ${run}`)[0];

      await t.step('rerun the failed run from b with an input patch: it completes', async () => {
        await open(failed);
        // The failing step is chosen already.
        assert.equal(await page.inputValue(control(failed, 'step')), 'b');
        await page.fill(control(failed, 'patch'), 'not json');
        await page.click(`button[data-action="rerun"][data-run-id="${failed}"]`);
        assert.match(await message(), /the input patch is not JSON/);
        assert.equal((await row(failed)).status, 'failed', 'nothing was sent');
        await page.fill(control(failed, 'patch'), '{"bad": false}');
        await page.click(`button[data-action="rerun"][data-run-id="${failed}"]`);
        await waitFor('the rerun message', async () => /^Rerun run /.test(await message()));
        assert.match(await message(), /from b: 1 step\(s\) run again/);
        const done = await client.waitForRun(failed);
        assert.equal(done.status, 'completed');
        assert.deepEqual((await row(failed)).input, { n: 3, bad: false });
        const [note] = await sql`select data from switchyard.run_events
                                  where run_id = ${failed} and event = 'rerun'`;
        assert.equal(note.data.by, 'dashboard');
        assert.deepEqual(note.data.input_patch, { bad: false });
      });

      await t.step('a fork onto V3 is refused with each problem; nothing changes', async () => {
        const [{ before }] = await sql`select count(*)::int as before from switchyard.runs`;
        await page.selectOption(control(failed, 'step'), 'b');
        await page.selectOption(control(failed, 'fork-to'), 'bcFlowV3');
        await page.click(`button[data-action="fork"][data-run-id="${failed}"]`);
        await waitFor('the refusal', async () => /refused/.test(await message()));
        const text = await message();
        assert.match(text, /^fork run \S+ refused \(422, version_incompatible\)/);
        assert.match(
          text,
          /problems: step "a" depends on \[\] in "bcFlowV1" but on \[z\] in "bcFlowV3"/,
        );
        const [{ after }] = await sql`select count(*)::int as after from switchyard.runs`;
        assert.equal(after, before);
      });

      let fork = '';
      await t.step('fork it from b onto V2: a new run with lineage, shown and linked', async () => {
        await page.selectOption(control(failed, 'fork-to'), 'bcFlowV2');
        await page.click(`button[data-action="fork"][data-run-id="${failed}"]`);
        await waitFor('the fork message', async () => /^Forked run /.test(await message()));
        const [made] = await sql`select run_id from switchyard.runs where forked_from = ${failed}`;
        fork = made.run_id;
        const r = await row(fork);
        assert.deepEqual([r.flow_slug, r.from_step], ['bcFlowV2', 'b']);
        const done = await client.waitForRun(fork);
        assert.equal(done.status, 'completed');
        assert.deepEqual(done.output, { audit: 'audited 300' });
        const lineage = page.locator(`[data-lineage="${fork}"]`);
        await lineage.waitFor({ timeout: 30_000 });
        assert.equal(await lineage.innerText(), `forked from ${failed.slice(0, 8)} at b`);
        // The link opens the original's detail.
        await page.click(`tr.run[data-run="${failed}"] td >> nth=1`); // close it first
        await page.waitForSelector(`[data-controls="${failed}"]`, { state: 'detached' });
        await page.click(`[data-lineage="${fork}"] a[data-open-run="${failed}"]`);
        await page.waitForSelector(`[data-controls="${failed}"]`);
      });

      await t.step(
        'move the run whose a is running onto V2: a finishes, the rest runs on V2',
        async () => {
          await open(held);
          assert.deepEqual(
            await page.locator(`${control(held, 'move-to')} option`).allInnerTexts(),
            ['bcFlowV2', 'bcFlowV3'],
          );
          await page.selectOption(control(held, 'move-to'), 'bcFlowV3');
          await page.click(`button[data-action="move"][data-run-id="${held}"]`);
          await waitFor('the refusal', async () => /refused/.test(await message()));
          assert.match(await message(), /version_incompatible.*problems: step "a" depends on/);
          assert.equal((await row(held)).flow_slug, 'bcFlowV1', 'nothing changed');
          await page.selectOption(control(held, 'move-to'), 'bcFlowV2');
          await page.click(`button[data-action="move"][data-run-id="${held}"]`);
          await waitFor('the move message', async () => /^Moved run /.test(await message()));
          assert.equal((await row(held)).flow_slug, 'bcFlowV2');
          const [task] = await sql`select flow_slug, status from switchyard.step_tasks
                                  where run_id = ${held} and step_slug = 'a'`;
          assert.deepEqual({ ...task }, { flow_slug: 'bcFlowV1', status: 'started' });
          gate.open!();
          const done = await client.waitForRun(held);
          assert.equal(done.status, 'completed');
          assert.deepEqual(done.output, { audit: 'audited 400' });
        },
      );

      await t.step('pause a run and resume it', async () => {
        const later = await client.startFlow('bcFlowV1', { n: 5 }, {
          startAt: new Date(Date.now() + 3_600_000),
        });
        await page.waitForSelector(`tr.run[data-run="${later}"]`, { timeout: 30_000 });
        await open(later);
        await page.fill(control(later, 'reason'), 'waiting for the vendor');
        await page.click(`button[data-action="pause"][data-run-id="${later}"]`);
        await waitFor('the pause message', async () => /^Paused run /.test(await message()));
        const paused = await sql`select paused_at, pause_reason from switchyard.runs
                                  where run_id = ${later}`;
        assert.ok(paused[0].paused_at);
        assert.equal(paused[0].pause_reason, 'waiting for the vendor');
        const pill = page.locator(`[data-run-paused="${later}"]`);
        await pill.waitFor({ timeout: 30_000 });
        await page.click(`button[data-action="resume"][data-run-id="${later}"]`);
        await waitFor('the resume message', async () => /^Resumed run /.test(await message()));
        assert.equal((await row(later)).paused_at, null);
        await pill.waitFor({ state: 'detached', timeout: 30_000 });
        await sql`select switchyard.cancel_run(${later}::uuid, 'test over')`;
      });

      // Chromium logs each non-2xx answer: the two refusals above (the fork and the move onto
      // V3) and nothing else.
      const refusals = 'console error: Failed to load resource: the server responded with a ' +
        'status of 422 (Unprocessable Entity)';
      assert.deepEqual(problems, [refusals, refusals]);
    } finally {
      gate.open?.();
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    }
  },
});
