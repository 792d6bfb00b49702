/**
 * Work of ended runs stays ended (issue 11): the stall sweep's search for lost messages
 * (docs/design/claim.md#stall-recovery) sends no new message for a queued task of a run that
 * failed,
 * whose message `_fail_run` archived on purpose; a started run's lost message is still sent
 * again.
 */
import assert from 'node:assert/strict';
import { Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const quiet = { info() {}, warn() {}, error() {} };

Deno.test('the lost-message search leaves the queued tasks of a failed run alone', async () => {
  // Two root steps on two queues; only `a` has a worker, and it fails for good.
  const flow = new Flow<{ fail: boolean }>({ slug: 'ended', maxAttempts: 1 })
    .step({ slug: 'a' }, (input) => {
      if (input.fail) throw new Error('a fails');
      return 'a';
    })
    .step({ slug: 'b' }, () => 'b');
  const registry = [routeFlow(flow, { queues: { a: 'ended_a', b: 'ended_b' } })] as const;
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'ended_a',
    logger: quiet,
    ...FAST,
  });
  let failed: string, started: string;
  try {
    failed = await client.startFlow('ended', { fail: true });
    assert.equal((await client.waitForRun(failed)).status, 'failed');
    started = await client.startFlow('ended', { fail: false });
  } finally {
    await worker.stop();
  }
  // The failed run's `b` is queued with its message archived; the started run's `b`
  // message is removed outside the kit. Both have been queued longer than the grace.
  const [{ id }] = await db.sql`select message_id::text as id from switchyard.step_tasks
                                 where run_id = ${started} and step_slug = 'b'`;
  await db.sql`select pgmq.delete('ended_b', ${id}::bigint)`;
  await db.sql`update switchyard.step_tasks set queued_at = now() - interval '1 hour'
                where step_slug = 'b'`;
  const before = await db.sql`select run_id::text, message_id::text from switchyard.step_tasks
                               where step_slug = 'b' order by run_id`;

  const [{ n }] = await db.sql`select switchyard.recover_stalled('ended_b') as n`;
  assert.equal(n, 1, "only the started run's lost message is sent again");
  const after = new Map(
    (await db.sql`select run_id::text, message_id::text from switchyard.step_tasks
                   where step_slug = 'b'`).map((r) => [r.run_id, r.message_id]),
  );
  const was = new Map(before.map((r) => [r.run_id, r.message_id]));
  assert.equal(after.get(failed), was.get(failed), 'the failed run keeps its archived message');
  assert.notEqual(after.get(started), was.get(started));
  const queued = await db.sql`select msg_id::text from pgmq.q_ended_b`;
  assert.deepEqual(queued.map((r) => r.msg_id), [after.get(started)]);
});

Deno.test('a task that answers after its run ended starts nothing (recorded when failed, refused when cancelled)', async () => {
  // `slow` runs while its run ends; `after` depends on it and must never start.
  const gates = new Map<string, () => void>();
  const flow = new Flow<{ fail: boolean }>({ slug: 'endedLate', maxAttempts: 1, timeout: 120 })
    .step({ slug: 'slow' }, async (_input, ctx) => {
      await new Promise<void>((r) => gates.set(ctx.runId, r));
      return 'late';
    })
    .step({ slug: 'boom' }, async (input, ctx) => {
      // Only once slow runs, so the run ends with slow started, never with it still queued.
      while (!gates.has(ctx.runId) && !ctx.signal.aborted) {
        await new Promise((r) => setTimeout(r, 10));
      }
      if (input.fail) throw new Error('boom ends the run');
      return 'held';
    })
    .step({ slug: 'after', dependsOn: ['slow'] }, (input) => input.slow);
  const worker = await startWorker(flow, {
    connectionString: db.url,
    logger: quiet,
    maxConcurrent: 4,
    ...FAST,
  });
  try {
    const failed = await client.startFlow('endedLate', { fail: true });
    assert.equal((await client.waitForRun(failed)).status, 'failed');
    const cancelled = await client.startFlow('endedLate', { fail: false });
    await waitFor('slow to run in the second run', () => gates.has(cancelled));
    await db.sql`select switchyard.cancel_run(${cancelled}::uuid, 'ended on purpose')`;
    for (const open of gates.values()) open();
    for (const [run, status] of [[failed, 'failed'], [cancelled, 'cancelled']]) {
      await waitFor(
        `the late completion of ${status} run's slow to be recorded`,
        async () =>
          (await db.sql`select 1 from switchyard.step_tasks where run_id = ${run}
                        and step_slug = 'slow' and status <> 'started'`).length > 0,
      );
      const states = await db.sql<{ step_slug: string; status: string }[]>`
        select step_slug, status from switchyard.step_states
         where run_id = ${run} and step_slug = 'after'`;
      assert.notEqual(states[0].status, 'started', `${status}: after never started`);
      const tasks = await db.sql`select 1 from switchyard.step_tasks
                                  where run_id = ${run} and step_slug = 'after'`;
      assert.equal(tasks.length, 0, `${status}: no task for after`);
      assert.equal((await client.runStatus(run))?.status, status, `${status}: stays ${status}`);
    }
  } finally {
    for (const open of gates.values()) open();
    await worker.stop();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
