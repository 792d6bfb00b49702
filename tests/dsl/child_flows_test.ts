/**
 * Child flows (issue 22, docs/design/waits.md) on real PostgreSQL with a real worker: a
 * flow step starts a run of another deployed flow (by alias) whose id is derived from the
 * parent run and step, waits with no worker held, and completes with the child's output, or
 * fails with it; a retry of the parent retries the same child instead of starting a second;
 * cancelling the parent cancels its children, and a cancelled child cancels its parent.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const QUEUE = 'kids_q' as const;
const options = { connectionString: db.url, ...FAST, queueName: QUEUE };

let failChild = true;

const grandchild = defineDeployedFlow(
  routeFlow(
    new Flow<{ n: number }>({ slug: 'grandchildV1' }).step(
      { slug: 'square' },
      (input) => input.n * input.n,
    ),
    { queues: { square: QUEUE } },
  ),
  { alias: 'grandchild' },
);

const child = defineDeployedFlow(
  routeFlow(
    new Flow<{ n: number }>({ slug: 'childV1', maxAttempts: 1 })
      .childFlow({ slug: 'deeper', flow: grandchild })
      .step({ slug: 'check', dependsOn: ['deeper'] }, (input) => {
        if (failChild) throw new Error('the child fails until fixed');
        return { squared: input.deeper.square };
      }),
    { queues: { check: QUEUE } },
  ),
  { alias: 'child' },
);

const parent = defineDeployedFlow(
  routeFlow(
    new Flow<{ n: number }>({ slug: 'parentV1' })
      .childFlow({ slug: 'sub', flow: child })
      .step({ slug: 'report', dependsOn: ['sub'] }, (input) => `got ${input.sub.check.squared}`),
    { queues: { report: QUEUE } },
  ),
  { alias: 'parent' },
);

// A child that waits for a signal, so it stays open for the cancel tests.
const waiting = defineDeployedFlow(new Flow({ slug: 'waitingChildV1' }).wait({ slug: 'w' }), {
  alias: 'waitingChild',
});
const holder = defineDeployedFlow(
  new Flow({ slug: 'holderV1' }).childFlow({ slug: 'held', flow: waiting }),
  { alias: 'holder' },
);

for (const target of [grandchild, child, parent, waiting, holder]) {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(target).shape as never)
  }::jsonb)`;
  await client.activateAlias(target.alias, toPlacement(target).flow.slug);
}

async function childOf(runId: string, step: string): Promise<string | undefined> {
  const [row] = await db.sql<{ run_id: string }[]>`select run_id from switchyard.child_runs
    where parent_run_id = ${runId} and parent_step = ${step}`;
  return row?.run_id;
}

Deno.test('two levels of child flows; a failed child fails the parent; a retry retries the same child', async () => {
  const worker = await startWorker([grandchild, child, parent], options);
  try {
    failChild = true;
    const runId = await client.startFlow('parent', { n: 7 });
    const failed = await client.waitForRun(runId);
    assert.equal(failed.status, 'failed');
    const childId = await childOf(runId, 'sub');
    assert.ok(childId);
    const [derived] = await db
      .sql`select switchyard._child_run_id(${runId}::uuid, 'sub')::text as id`;
    assert.equal(childId, derived.id, 'the child id is derived from the parent run and step');
    assert.match(String(failed.error), new RegExp(`child run ${childId} failed`));
    const grandId = await childOf(childId, 'deeper');
    assert.equal((await client.runStatus(grandId!))?.status, 'completed');

    // Fixed, the parent is retried: the same child run is retried, no second one starts.
    failChild = false;
    await db.sql`select switchyard.retry_run(${runId}::uuid)`;
    const done = await client.waitForRun(runId);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.output, { report: 'got 49' });
    assert.equal(await childOf(runId, 'sub'), childId);
    const counts = await db.sql`select flow_slug, count(*)::int as n from switchyard.runs
      group by flow_slug order by flow_slug`;
    assert.deepEqual(counts.map((r) => [r.flow_slug, r.n]), [
      ['childV1', 1],
      ['grandchildV1', 1],
      ['parentV1', 1],
    ]);
    const [childRun] = await db.sql`select owner, started_as from switchyard.runs
      where run_id = ${childId}`;
    assert.equal(childRun.started_as, 'child');
  } finally {
    await worker.stop();
  }
});

Deno.test('cancelling the parent cancels its waiting child; a cancelled child cancels its parent', async () => {
  // No worker: the child waits for a signal, the parent for the child.
  const a = await client.startFlow('holder', {});
  const aChild = await childOf(a, 'held');
  assert.ok(aChild);
  assert.equal((await client.runStatus(aChild))?.status, 'started');
  await db.sql`select switchyard.cancel_run(${a}::uuid, 'no longer needed')`;
  const aChildStatus = await client.runStatus(aChild);
  assert.equal(aChildStatus?.status, 'cancelled');
  assert.match(String(aChildStatus?.error), new RegExp(`its parent run ${a} was cancelled`));

  const b = await client.startFlow('holder', {});
  const bChild = await childOf(b, 'held');
  await db.sql`select switchyard.cancel_run(${bChild!}::uuid, 'withdrawn')`;
  const bStatus = await client.runStatus(b);
  assert.equal(bStatus?.status, 'cancelled');
  assert.match(String(bStatus?.error), new RegExp(`its child run ${bChild} .*was cancelled`));

  // A signalled child completes its parent, with the child's output.
  const c = await client.startFlow('holder', {});
  const cChild = await childOf(c, 'held');
  await db.sql`select switchyard.signal_run(${cChild!}::uuid, 'w', '{"ok": true}'::jsonb)`;
  await waitFor(
    'the parent to complete',
    async () => (await client.runStatus(c))?.status === 'completed',
  );
  assert.deepEqual((await client.runStatus(c))?.output, { held: { w: { ok: true } } });
});

Deno.test('a flow step whose alias has no active version fails its run, naming the alias', async () => {
  const orphan = defineDeployedFlow(new Flow({ slug: 'orphanV1' }).wait({ slug: 'w' }), {
    alias: 'orphanAlias',
  });
  const flow = new Flow({ slug: 'orphanParentV1' }).childFlow({ slug: 'sub', flow: orphan });
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
  const runId = await client.startFlow('orphanParentV1', {});
  const status = await client.runStatus(runId);
  assert.equal(status?.status, 'failed');
  assert.match(String(status?.error), /could not start a run of alias "orphanAlias"/);
});

Deno.test({
  name: 'teardown',
  async fn() {
    await client.close();
    await db.close();
  },
});
