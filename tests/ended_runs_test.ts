/**
 * Work of ended runs stays ended (issue 11): the stall sweep's search for lost messages
 * (docs/ARCHITECTURE.md §5.6) sends no new message for a queued task of a run that failed,
 * whose message `_fail_run` archived on purpose; a started run's lost message is still sent
 * again.
 */
import assert from 'node:assert/strict';
import { Flow, routeFlow, startWorker } from '../lib/mod.ts';
import { connect } from '../lib/ops.ts';
import { createTestDatabase } from './_helpers/db.ts';
import { FAST } from './_helpers/wait.ts';

const db = await createTestDatabase();
const client = connect(db.url);
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

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
