/**
 * Checkpoints for long handlers (issue 25; docs/design/worker.md#worker-states-and-parts,
 * "Checkpoints"), with real
 * workers on real PostgreSQL: a loop on a simulated wall clock hands its task over at each
 * instance's end and finishes in several instances with its attempt count unchanged; a
 * SIGKILLed worker's task resumes from its checkpoint on another worker; a checkpoint over the
 * limit fails the attempt naming the size and the limit; ctx.deadline counts down. Refunds are
 * for work handed back, and bounded: a handler's own error after the shutdown abort, or a hung
 * handler with no checkpoint, uses its attempt; the step timeout spans instances; at most
 * max_task_refunds() hand-overs of a task are refunded.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { type AnyFlow, Flow, startWorker } from '../../lib/mod.ts';
import { retryRun } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { type Resumed, summing } from '../fixtures/checkpoint_worker.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { spawnDeno } from '../_helpers/process.ts';
import { sectionText } from '../_helpers/docs.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const base = { connectionString: db.url, ...FAST, logger: SILENT };

const N = 5000;

async function compile(flow: Parameters<typeof toPlacement>[0]) {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
}
const SUM = (N * (N - 1)) / 2;

Deno.test('a checkpointed loop on a 3 s wall clock finishes in several instances, attempt count unchanged', async () => {
  const resumed: Resumed[] = [];
  const flow = summing('wallLoopV1', 25, (r) => resumed.push(r));
  await compile(flow);
  const runId = await client.startFlow('wallLoopV1', { n: N });
  let instances = 0;
  for (; instances < 12; instances++) {
    // 5000 numbers in chunks of 25, 25 ms each: at least 5 s of work; each instance stops
    // itself after 3000 - 1000 ms, a grace period before its wall clock ends.
    const worker = await startWorker(flow, { ...base, wallClockMs: 3000, shutdownGraceMs: 1000 });
    // Every instance ends by its wall clock, the last one too (after the run completed).
    await within(20_000, 'the instance to end by its wall clock', worker.done);
    await worker.stop();
    const [{ status }] = await db.sql`select status from switchyard.runs where run_id = ${runId}`;
    if (status === 'completed') break;
  }
  instances++;
  const [run] = await db.sql`select status, output from switchyard.runs where run_id = ${runId}`;
  assert.equal(run.status, 'completed');
  assert.deepEqual(run.output, { sum: { sum: SUM } });
  assert.ok(instances >= 3, `${instances} instances`);
  const [task] = await db.sql`select attempts_count from switchyard.step_tasks
                               where run_id = ${runId}`;
  assert.equal(task.attempts_count, 1, 'every hand-over refunded its attempt');
  assert.ok(resumed.every((r) => r.attempt === 1), JSON.stringify(resumed));
  assert.equal(resumed[0].from, 0);
  for (let k = 1; k < resumed.length; k++) {
    assert.ok(
      resumed[k].from > resumed[k - 1].from,
      `each instance went on: ${JSON.stringify(resumed)}`,
    );
  }
  assert.ok(resumed.length >= 3);
});

Deno.test('ctx.deadline counts down with a wall clock and is Infinity without one', async () => {
  const seen: number[] = [];
  const flow = new Flow<{ n: number }>({ slug: 'deadlineReadV1' })
    .step({ slug: 'look' }, async (_input, ctx) => {
      seen.push(ctx.deadline);
      await new Promise((r) => setTimeout(r, 100));
      seen.push(ctx.deadline);
      return null;
    });
  let worker = await startWorker(flow, { ...base, wallClockMs: 60_000 });
  try {
    await client.waitForRun(await client.startFlow('deadlineReadV1', { n: 1 }));
  } finally {
    await worker.stop();
  }
  assert.ok(seen[0] <= 60_000 && seen[0] > 50_000, String(seen));
  assert.ok(seen[1] < seen[0], 'it counts down');
  worker = await startWorker(flow, base);
  try {
    await client.waitForRun(await client.startFlow('deadlineReadV1', { n: 2 }));
  } finally {
    await worker.stop();
  }
  assert.equal(seen[2], Infinity);
});

Deno.test('a checkpoint over 256 KiB fails the attempt with its size and the limit', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'bigCheckpointV1', maxAttempts: 1 })
    .step({ slug: 'save' }, async (_input, ctx) => {
      await ctx.checkpoint({ blob: 'x'.repeat(300_000) });
      return 'unreachable';
    });
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('bigCheckpointV1', { n: 1 });
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'failed');
    assert.match(status.error ?? '', /300012 bytes of JSON, over the limit of 262144 bytes/);
    const [{ n }] = await db.sql`select count(*)::int as n from switchyard.task_checkpoints
                                  where run_id = ${runId}`;
    assert.equal(n, 0, 'nothing was saved');
  } finally {
    await worker.stop();
  }
});

Deno.test('a SIGKILLed worker: its task resumes from the last checkpoint on another worker', async () => {
  const child = spawnDeno(
    ['run', '-A', new URL('../fixtures/checkpoint_worker.ts', import.meta.url).pathname],
    { env: { DATABASE_URL: db.url, CHUNK_MS: '20' }, stdout: 'null', stderr: 'null' },
  );
  await compile(summing('killLoopV1', 1));
  const runId = await client.startFlow('killLoopV1', { n: N });
  let killed = false;
  try {
    const saved = await waitFor('a checkpoint past 1000', async () => {
      const [c] = await db.sql`select (state ->> 'i')::int as i from switchyard.task_checkpoints
                                where run_id = ${runId}`;
      return c && c.i >= 1000 ? c.i : null;
    }, { timeoutMs: 60_000 });
    await child.kill('SIGKILL');
    await child.status;
    killed = true;
    const [last] = await db.sql`select (state ->> 'i')::int as i, attempt
                                  from switchyard.task_checkpoints where run_id = ${runId}`;
    assert.ok(last.i >= saved);
    const resumed: Resumed[] = [];
    const worker = await startWorker(summing('killLoopV1', 1, (r) => resumed.push(r)), base);
    try {
      const status = await client.waitForRun(runId, { timeoutMs: 60_000 });
      assert.equal(status.status, 'completed');
      assert.deepEqual(status.output, { sum: { sum: SUM } });
    } finally {
      await worker.stop();
    }
    assert.deepEqual(resumed, [{ attempt: 2, from: last.i }], 'resumed where it was killed');
  } finally {
    if (!killed) await child.stop('SIGKILL');
  }
});

Deno.test("the long handlers guide's checkpoint example runs as written, across instances", async () => {
  const section = sectionText(
    'docs/guide/long-handlers.md',
    '# Long handlers: checkpoints and deadlines',
  );
  const start = section.indexOf('```ts\n') + 6;
  const code = section.slice(start, section.indexOf('\n```\n', start));
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-readme-' });
  try {
    const file = `${dir}/importer.ts`;
    await Deno.writeTextFile(
      file,
      code.replace("from 'switchyard'", `from '${new URL('../../lib/mod.ts', import.meta.url)}'`),
    );
    const { importer } = await import(`file://${file}`) as {
      importer: AnyFlow;
    };
    await compile(importer);
    const runId = await client.startFlow('importRowsV1', { rows: 2000 });
    for (let i = 0; i < 12; i++) {
      const worker = await startWorker(importer, {
        ...base,
        wallClockMs: 2000,
        shutdownGraceMs: 1000,
      });
      await within(20_000, 'the instance to end by its wall clock', worker.done);
      const [{ status }] = await db.sql`select status from switchyard.runs where run_id = ${runId}`;
      if (status === 'completed') break;
    }
    const [run] = await db.sql`select r.status, r.output, t.attempts_count from switchyard.runs r
                                join switchyard.step_tasks t using (run_id) where r.run_id = ${runId}`;
    assert.equal(run.status, 'completed');
    assert.deepEqual(run.output, { import: { done: 2000 } });
    assert.equal(run.attempts_count, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Starts instances of `flow` on a 2 s wall clock until `runId` ends; returns how many ran. */
async function instancesUntilEnded(flow: AnyFlow, runId: string, max: number, graceMs = 1000) {
  for (let i = 1; i <= max; i++) {
    const worker = await startWorker(flow, {
      ...base,
      wallClockMs: 2000,
      shutdownGraceMs: graceMs,
    });
    await within(20_000, 'the instance to end by its wall clock', worker.done);
    const [{ status }] = await db.sql`select status from switchyard.runs where run_id = ${runId}`;
    if (status !== 'started') return i;
  }
  return Infinity;
}

async function taskOf(runId: string) {
  const [t] = await db.sql`select status, attempts_count, refunds, error, last_failed_at, started_at
                             from switchyard.step_tasks where run_id = ${runId}`;
  return t;
}

Deno.test('after the shutdown abort, a handler that throws its own error uses its attempt; one that throws the abort reason gets it back', async () => {
  const flow = new Flow<{ honour: boolean }>({ slug: 'afterAbortV1', maxAttempts: 3, timeout: 600 })
    .step({ slug: 'work' }, async (input, ctx) => {
      await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
      if (input.honour) throw ctx.signal.reason;
      throw new Error('broke while stopping');
    });
  await compile(flow);
  const honoured = await client.startFlow('afterAbortV1', { honour: true });
  const broken = await client.startFlow('afterAbortV1', { honour: false });
  await waitFor('both runs to be claimed and handed back', async () => {
    const worker = await startWorker(flow, { ...base, wallClockMs: 2000, shutdownGraceMs: 1000 });
    await within(20_000, 'the instance to end by its wall clock', worker.done);
    const [h, b] = [await taskOf(honoured), await taskOf(broken)];
    return h.started_at !== null && b.started_at !== null;
  }, { timeoutMs: 60_000 });
  const h = await taskOf(honoured);
  assert.equal(h.status, 'queued');
  assert.equal(h.attempts_count, 0, 'the shutdown it honoured is refunded');
  assert.equal(h.refunds, 1);
  assert.equal(h.last_failed_at, null);
  const b = await taskOf(broken);
  assert.equal(b.attempts_count, 1, 'its own error after the abort counts');
  assert.equal(b.refunds, 0);
  assert.match(b.error, /broke while stopping/);
  assert.notEqual(b.last_failed_at, null);
});

Deno.test('a hung handler still running after the grace period, with no checkpoint, uses an attempt per instance until its run fails', async () => {
  let free!: () => void;
  const never = new Promise<void>((r) => (free = r));
  const flow = new Flow<{ n: number }>({
    slug: 'hungV1',
    maxAttempts: 2,
    baseDelay: 0,
    timeout: 600,
  })
    .step({ slug: 'hang' }, async () => {
      await never; // ignores ctx.signal
      return 'never';
    });
  await compile(flow);
  const runId = await client.startFlow('hungV1', { n: 1 });
  try {
    const instances = await instancesUntilEnded(flow, runId, 5, 300);
    assert.ok(instances <= 3, `the run ended after ${instances} instances`);
  } finally {
    free();
  }
  const [run] = await db.sql`select status, error from switchyard.runs where run_id = ${runId}`;
  assert.equal(run.status, 'failed');
  assert.match(
    run.error,
    /still running when the worker stopped .* with no checkpoint since its claim/,
  );
  const t = await taskOf(runId);
  assert.deepEqual([t.attempts_count, t.refunds], [2, 0]);
});

Deno.test('a step timeout longer than the wall clock fires across instances that checkpoint and hand over', async () => {
  // The guide's pattern, but the work never ends: each instance runs about 1 s of it.
  const flow = new Flow<{ n: number }>({ slug: 'spanTimeoutV1', maxAttempts: 1, timeout: 3 })
    .step({ slug: 'endless' }, async (_input, ctx) => {
      let i = (await ctx.resume<number>()) ?? 0;
      for (;;) {
        await ctx.checkpoint(++i);
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await new Promise((r) => setTimeout(r, 50));
      }
    });
  await compile(flow);
  const runId = await client.startFlow('spanTimeoutV1', { n: 1 });
  const instances = await instancesUntilEnded(flow, runId, 8);
  assert.ok(instances <= 5, `the run ended after ${instances} instances`);
  const [run] = await db.sql`select status, error from switchyard.runs where run_id = ${runId}`;
  assert.equal(run.status, 'failed');
  assert.match(run.error, /timed out/);
  const t = await taskOf(runId);
  assert.equal(t.attempts_count, 1);
  assert.ok(t.refunds >= 1 && t.refunds <= 3, `refunds ${t.refunds}`);
});

Deno.test('release_tasks refunds at most max_task_refunds() hand-overs of a task; past it the hand-over counts', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'refundCapV1', maxAttempts: 3, timeout: 600 })
    .step({ slug: 'one' }, () => 1);
  await compile(flow);
  const worker = crypto.randomUUID();
  await db.sql`select switchyard.register_worker(${worker}::uuid, 'refundcapv1',
                 'refundcapv1-worker', array['refundCapV1/one'], 15)`;
  const [{ max }] = await db.sql`select switchyard.max_task_refunds() as max`;
  assert.equal(max, 1000);
  const under = await client.startFlow('refundCapV1', { n: 1 });
  const at = await client.startFlow('refundCapV1', { n: 2 });
  await db.sql`update switchyard.step_tasks set refunds = ${max - 1} where run_id = ${under}`;
  await db.sql`update switchyard.step_tasks set refunds = ${max} where run_id = ${at}`;
  const ids = await db.sql`select message_id from switchyard.step_tasks
                            where run_id in (${under}::uuid, ${at}::uuid)`;
  const claimed = await db.sql`select 1 from switchyard.start_tasks('refundcapv1',
    ${ids.map((r) => r.message_id)}::bigint[], ${worker}::uuid) where disposition = 'claimed'`;
  assert.equal(claimed.length, 2);
  const named = [under, at].map((run_id) => ({ run_id, step_slug: 'one', task_index: 0 }));
  const [{ n }] = await db.sql`select switchyard.release_tasks(${worker}::uuid,
                                 ${db.sql.json(named as never)}::jsonb) as n`;
  assert.equal(n, 2, 'both are handed back');
  const u = await taskOf(under);
  assert.deepEqual([u.status, u.attempts_count, u.refunds], ['queued', 0, max]);
  const a = await taskOf(at);
  assert.deepEqual([a.status, a.attempts_count, a.refunds], ['queued', 1, max]);
  assert.match(a.error, /handed back at an instance's end 1000 times, .*max_task_refunds/);
  // Hostile arguments are refused with the rule.
  await assert.rejects(
    db.sql`select switchyard.release_tasks(${worker}::uuid, '{"run_id": 1}'::jsonb)`,
    (e: { code?: string; detail?: string }) =>
      e.code === '22023' && JSON.parse(e.detail!).rule === 'handed_back_not_array',
  );
});

Deno.test('a checkpoint survives failed attempts and a retry; ctx.clearCheckpoint() and retryRun({ resetCheckpoints }) start the task over', async () => {
  const seen: (number | undefined)[] = [];
  let mode: 'fail' | 'clear' | 'done' = 'fail';
  const flow = new Flow<{ n: number }>({
    slug: 'resetCheckpointV1',
    maxAttempts: 2,
    baseDelay: 0,
    timeout: 60,
  }).step({ slug: 'work' }, async (_input, ctx) => {
    const at = await ctx.resume<number>();
    seen.push(at);
    if (mode === 'done') return at ?? 0;
    if (mode === 'clear' && at !== undefined) {
      assert.equal(await ctx.clearCheckpoint(), true);
      assert.equal(await ctx.clearCheckpoint(), false, 'nothing left to clear');
      throw new Error('the saved state was bad');
    }
    await ctx.checkpoint((at ?? 0) + 1);
    throw new Error('fails after a checkpoint');
  });
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('resetCheckpointV1', { n: 1 });
    assert.equal((await client.waitForRun(runId)).status, 'failed');
    assert.deepEqual(seen, [undefined, 1], "the second attempt resumed the first one's state");
    mode = 'clear';
    await retryRun(client, runId);
    assert.equal((await client.waitForRun(runId)).status, 'failed');
    assert.deepEqual(seen.slice(2), [2, undefined], 'kept across the retry, then cleared');
    mode = 'done';
    await assert.rejects(
      retryRun(client, runId, { resetCheckpoints: 'yes' as never }),
      /retry: resetCheckpoints "yes" is invalid: pass true or false/,
    );
    const [{ n: saved }] = await db.sql`select count(*)::int as n from switchyard.task_checkpoints
                                         where run_id = ${runId}`;
    assert.equal(saved, 1, 'the fourth attempt saved one');
    await retryRun(client, runId, { resetCheckpoints: true });
    const done = await client.waitForRun(runId);
    assert.equal(done.status, 'completed');
    assert.deepEqual(seen.slice(4), [undefined], 'the retry started the task over');
    assert.deepEqual(done.output, { work: 0 });
    await assert.rejects(
      db.sql`select switchyard.reset_checkpoints(${crypto.randomUUID()}::uuid)`,
      (e: { code?: string; detail?: string }) =>
        e.code === '22023' && JSON.parse(e.detail!).rule === 'run_unknown',
    );
  } finally {
    await worker.stop();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
