/**
 * Run deadlines (issue 25; docs/design/client.md, "Deadlines"): a flow's runTimeout and a
 * start's deadlineAt, the earlier one kept; the SQL core cancels overdue runs with the reason
 * `deadline` on the keep-alive tick with no worker alive, and on a worker's stall sweep, where
 * the running handler hears of it through ctx.signal. Real PostgreSQL, real workers.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { FlowDefinitionError, RunCancelledError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, startWorker } from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const sql = db.sql;
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

const reports = new Flow<{ day: string }>({ slug: 'deadlineReportV1', runTimeout: 3600 })
  .step({ slug: 'gather' }, () => 1)
  .step({ slug: 'render', dependsOn: ['gather'] }, () => 2);
const registry = [defineDeployedFlow(reports, { alias: 'deadlineReport' })] as const;
const client = createClient(registry, { connectionString: db.url });
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(reports).shape as never)}::jsonb)`;
await sql`select switchyard.sync_alias('deadlineReport', array['deadlineReportV1'])`;

async function run(runId: string) {
  const [r] = await sql<
    { status: string; error: string | null; deadline_at: Date | null; started_at: Date }[]
  >`select status, error, deadline_at, started_at from switchyard.runs where run_id = ${runId}`;
  return r;
}

Deno.test("the flow's runTimeout sets the deadline; an earlier deadlineAt wins; a later one does not", async () => {
  const plain = await client.start('deadlineReport', { day: 'mon' });
  let r = await run(plain.runId);
  assert.equal(r.deadline_at!.getTime() - r.started_at.getTime(), 3600_000);
  const soon = new Date(Date.now() + 60_000);
  const early = await client.start('deadlineReport', { day: 'tue' }, { deadlineAt: soon });
  r = await run(early.runId);
  assert.equal(r.deadline_at!.toISOString(), soon.toISOString());
  const late = await client.start('deadlineReport', { day: 'wed' }, {
    deadlineAt: new Date(Date.now() + 86_400_000),
  });
  r = await run(late.runId);
  assert.equal(r.deadline_at!.getTime() - r.started_at.getTime(), 3600_000, 'the flow bounds it');
  for (const h of [plain, early, late]) await h.cancel('done with it');
});

Deno.test('with no worker alive, the keep-alive tick cancels an overdue run with reason deadline', async () => {
  const handle = await client.start('deadlineReport', { day: 'thu' }, {
    deadlineAt: new Date(Date.now() + 1000),
  });
  const [{ queued }] = await sql`select count(*)::int as queued from pgmq.q_deadlinereportv1`;
  assert.ok(queued >= 1, 'its first task is queued');
  // Not yet due: nothing happens.
  assert.equal((await sql`select switchyard.cancel_overdue_runs() as n`)[0].n, 0);
  await new Promise((r) => setTimeout(r, 1100));
  await sql`select * from switchyard.keep_alive()`;
  const r = await run(handle.runId);
  assert.equal(r.status, 'cancelled');
  assert.equal(r.error, 'cancelled: deadline');
  const [{ left }] = await sql`select count(*)::int as left from pgmq.q_deadlinereportv1
                                where message ->> 'run_id' = ${handle.runId}`;
  assert.equal(left, 0, 'its queued message was archived');
  await assert.rejects(handle.output(), /cancelled: deadline/);
});

Deno.test("a worker's stall sweep cancels an overdue run; its running handler is aborted", async () => {
  const seen: unknown[] = [];
  const slow = new Flow<{ n: number }>({ slug: 'deadlineSlowV1', runTimeout: 2, timeout: 120 })
    .step({ slug: 'wait' }, (_input, ctx) =>
      new Promise((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          seen.push(ctx.signal.reason);
          resolve('late');
        });
      }));
  const worker = await startWorker(slow, { connectionString: db.url, ...FAST, logger: SILENT });
  try {
    const runId = (await sql`select switchyard.start_flow('deadlineSlowV1', '{"n": 1}') as id`)[0]
      .id;
    await waitFor('the handler to be aborted', () => seen.length === 1, { timeoutMs: 20_000 });
    const reason = seen[0] as RunCancelledError;
    assert.ok(reason instanceof RunCancelledError, String(reason));
    assert.equal(reason.reason, 'cancelled: deadline');
    assert.equal((await run(runId)).status, 'cancelled');
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test('bad deadlines are refused with the rule; a changed runTimeout is an option change', async () => {
  assert.throws(
    () => new Flow({ slug: 'badDeadlineV1', runTimeout: 0 }),
    (e) => e instanceof FlowDefinitionError && /option runTimeout 0 is invalid/.test(e.message),
  );
  await assert.rejects(
    client.start('deadlineReport', { day: 'fri' }, { deadlineAt: new Date(Date.now() - 1000) }),
    /deadlineAt .* is invalid: pass a Date in the future/,
  );
  const v = (runTimeout?: number) =>
    new Flow<{ n: number }>({ slug: 'deadlineOptsV1', ...(runTimeout ? { runTimeout } : {}) })
      .step({ slug: 'a' }, () => 1);
  const ensure = async (f: ReturnType<typeof v>) =>
    (await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(f).shape as never)
    }::jsonb) as r`)[0].r;
  assert.equal(await ensure(v()), 'created');
  assert.equal(await ensure(v(600)), 'updated');
  const [{ run_timeout }] = await sql`select run_timeout from switchyard.flows
                                       where flow_slug = 'deadlineOptsV1'`;
  assert.equal(run_timeout, 600);
  assert.equal(await ensure(v(600)), 'verified');
  assert.equal(await ensure(v()), 'updated', 'removing it is a change too');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
