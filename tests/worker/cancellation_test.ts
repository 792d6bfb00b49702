/**
 * Cancellation reaches running handlers (docs/design/worker.md#worker-states-and-parts): when a run
 * is cancelled, or
 * failed by another of its tasks, the heartbeat (`switchyard.worker_heartbeat`) names it and the
 * worker aborts `ctx.signal` of every handler of that run with a `RunCancelledError`; what the
 * handler of a cancelled run answers afterwards is refused (its task is cancelled, never counted
 * as a completion or a failure), and nothing revives the run. Real workers, real PostgreSQL;
 * map elements on a shared queue included.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { RunCancelledError } from '../../lib/errors.ts';
import { Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { cancelRun } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const base = { connectionString: db.url, ...FAST, logger: SILENT };

/** A handler that runs until its signal aborts, then says why and returns `answer`. */
function untilAborted(seen: { started: number; reasons: unknown[] }, answer: () => unknown) {
  return (_input: unknown, ctx: { signal: AbortSignal }) => {
    seen.started++;
    return new Promise((resolve) => {
      ctx.signal.addEventListener('abort', () => {
        seen.reasons.push(ctx.signal.reason);
        resolve(answer());
      }, { once: true });
    });
  };
}

async function runRow(runId: string) {
  const [row] = await db.sql<{ status: string; output: unknown; error: string | null }[]>`
    select status, output, error from switchyard.runs where run_id = ${runId}::uuid`;
  return row;
}

Deno.test('cancel_run aborts the running handler with RunCancelledError; its late answer is refused, the task cancelled', async () => {
  const seen = { started: 0, reasons: [] as unknown[] };
  const flow = new Flow<{ n: number }>({ slug: 'cancelReachV1', timeout: 120 })
    .step({ slug: 'long' }, untilAborted(seen, () => 'late answer'))
    .step({ slug: 'after', dependsOn: ['long'] }, () => 'must not run');
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('cancelReachV1', { n: 1 });
    await waitFor('the handler to start', () => seen.started === 1);
    await cancelRun(client, runId, 'customer left');
    await waitFor('the handler to be aborted', () => seen.reasons.length === 1);
    const reason = seen.reasons[0] as RunCancelledError;
    assert.ok(reason instanceof RunCancelledError, String(reason));
    assert.equal(reason.runId, runId);
    assert.equal(reason.status, 'cancelled');
    assert.equal(reason.reason, 'cancelled: customer left', 'the error of the run');
    // The late answer reaches SQL, which refuses it: the task is cancelled, not completed.
    await waitFor('the late answer to be handled', async () => {
      const [t] = await db.sql<{ status: string }[]>`
        select status from switchyard.step_tasks where run_id = ${runId}::uuid and step_slug = 'long'`;
      return t.status !== 'started';
    });
    const [task] = await db.sql`select status, output, completed_at, worker_id
                                  from switchyard.step_tasks
                                 where run_id = ${runId}::uuid and step_slug = 'long'`;
    assert.deepEqual({ ...task }, {
      status: 'cancelled',
      output: null,
      completed_at: null,
      worker_id: null,
    }, 'no completion is recorded');
    const run = await runRow(runId);
    assert.equal(run.status, 'cancelled');
    assert.equal(run.output, null);
    const after = await db.sql`
      select 1 from switchyard.step_tasks where run_id = ${runId}::uuid and step_slug = 'after'`;
    assert.equal(after.length, 0, 'nothing after the cancelled step starts');
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test('complete_tasks refuses the answer of a cancelled run (ok false) and accepts the others of its batch', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'cancelBatchV1', timeout: 120 })
    .step({ slug: 'only' }, () => 1);
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
  const worker = crypto.randomUUID();
  await db.sql`select switchyard.register_worker(${worker}::uuid, 'cancelbatchv1',
                 'cancelbatchv1-worker', array['cancelBatchV1/only'], 15)`;
  const kept = await client.startFlow('cancelBatchV1', { n: 1 });
  const dropped = await client.startFlow('cancelBatchV1', { n: 2 });
  const ids = await db.sql`select message_id from switchyard.step_tasks
                            where run_id in (${kept}::uuid, ${dropped}::uuid)`;
  const claimed = await db.sql`select run_id from switchyard.start_tasks('cancelbatchv1',
    ${ids.map((r) => r.message_id)}::bigint[], ${worker}::uuid)
    where disposition = 'claimed'`;
  assert.equal(claimed.length, 2);
  await cancelRun(client, dropped, 'not needed');
  const answers = [kept, dropped].map((run_id) => ({
    run_id,
    step_slug: 'only',
    attempt: 1,
    output: { from: run_id },
  }));
  const oks = await db.sql`select ok from switchyard.complete_tasks(${
    db.sql.json(answers as never)
  }::jsonb)`;
  assert.deepEqual(oks.map((r) => r.ok), [true, false]);
  const tasks = await db.sql`select run_id, status, output from switchyard.step_tasks
                              where run_id in (${kept}::uuid, ${dropped}::uuid)`;
  const byRun = new Map(tasks.map((t) => [t.run_id, t]));
  assert.equal(byRun.get(kept)!.status, 'completed');
  assert.deepEqual(byRun.get(dropped)!.status, 'cancelled');
  assert.equal(byRun.get(dropped)!.output, null);
  assert.equal((await runRow(kept)).status, 'completed');
  // Repeated, the refused answer changes nothing.
  const [again] = await db.sql`select switchyard.complete_task(${dropped}::uuid, 'only', 1,
                                 '"again"'::jsonb) as ok`;
  assert.equal(again.ok, false);
});

Deno.test('a handler that fails because its run was cancelled is logged and recorded as cancelled, not as a failure', async () => {
  let gate!: () => void;
  const opened = new Promise<void>((r) => (gate = r));
  let started = 0;
  const flow = new Flow<{ n: number }>({ slug: 'cancelProgressV1', timeout: 120 })
    .step({ slug: 'report' }, async (_input, ctx) => {
      started++;
      await opened;
      await ctx.progress({ step: 1 }); // refused: the run is cancelled
      return 'unreachable';
    });
  const lines: { level: string; line: string }[] = [];
  const logger = {
    info: (line: string) => lines.push({ level: 'info', line }),
    warn: (line: string) => lines.push({ level: 'warn', line }),
    error: (line: string) => lines.push({ level: 'error', line }),
  };
  // A slow heartbeat: the handler hears of the cancel from its own refused call first.
  const worker = await startWorker(flow, {
    ...base,
    logger,
    heartbeatIntervalMs: 20_000,
    heartbeatWindowSeconds: 60,
  });
  try {
    const runId = await client.startFlow('cancelProgressV1', { n: 1 });
    await waitFor('the handler to start', () => started === 1);
    await cancelRun(client, runId, 'changed my mind');
    gate();
    await waitFor('the attempt to end', async () => {
      const [t] = await db.sql`select status from switchyard.step_tasks
                                where run_id = ${runId}::uuid`;
      return t.status !== 'started';
    });
    const [task] = await db.sql`select status, last_failed_at, attempts_count
                                  from switchyard.step_tasks where run_id = ${runId}::uuid`;
    assert.equal(task.status, 'cancelled');
    assert.equal(task.last_failed_at, null, 'no failed attempt is counted');
    await waitFor('the worker to log the attempt', () => lines.some((l) => l.line.includes(runId)));
    const about = lines.filter((l) => l.line.includes(runId));
    assert.ok(
      about.every((l) => l.level === 'info' && !/failed/.test(l.line)),
      JSON.stringify(about),
    );
    assert.match(about[0].line, /cancelled: the run is cancelled/);
    assert.equal((await runRow(runId)).status, 'cancelled');
  } finally {
    gate();
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test('every map element of a cancelled run is aborted, on a shared queue with another flow running on', async () => {
  const seen = { started: 0, reasons: [] as unknown[] };
  const other = { started: 0, reasons: [] as unknown[] };
  let otherDone = 0;
  const map = new Flow<number[]>({ slug: 'cancelMapV1', timeout: 120 })
    .map({ slug: 'each' }, untilAborted(seen, () => null));
  const bystander = new Flow<{ ms: number }>({ slug: 'cancelBystanderV1', timeout: 120 })
    .step({ slug: 'work' }, async (input, ctx) => {
      other.started++;
      ctx.signal.addEventListener('abort', () => other.reasons.push(ctx.signal.reason));
      await new Promise((r) => setTimeout(r, input.ms));
      otherDone++;
      return 'done';
    });
  const registry = [
    routeFlow(map, { queues: { each: 'cancel_shared' } }),
    routeFlow(bystander, { queues: { work: 'cancel_shared' } }),
  ] as const;
  const worker = await startWorker(registry, { ...base, queueName: 'cancel_shared' });
  try {
    const mapRun = await client.startFlow('cancelMapV1', [1, 2, 3]);
    const otherRun = await client.startFlow('cancelBystanderV1', { ms: 1500 });
    await waitFor(
      'three elements and the bystander to start',
      () => seen.started === 3 && other.started === 1,
    );
    await cancelRun(client, mapRun, 'not needed');
    await waitFor('all three elements to be aborted', () => seen.reasons.length === 3);
    for (const r of seen.reasons) {
      assert.ok(r instanceof RunCancelledError && r.runId === mapRun, String(r));
    }
    const status = await client.waitForRun(otherRun);
    assert.equal(status.status, 'completed', 'the other run on the queue goes on');
    assert.equal(otherDone, 1);
    assert.deepEqual(other.reasons, [], "the other run's handler was never aborted");
    assert.equal((await runRow(mapRun)).status, 'cancelled');
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test("a sibling's failure fails the run and aborts its running handler with status failed", async () => {
  const seen = { started: 0, reasons: [] as unknown[] };
  const flow = new Flow<{ n: number }>({ slug: 'cancelSiblingV1', timeout: 120, maxAttempts: 1 })
    .step({ slug: 'slow' }, untilAborted(seen, () => 'late'))
    .step({ slug: 'boom' }, async () => {
      await waitFor('the slow sibling to start', () => seen.started === 1);
      throw new Error('card declined');
    });
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('cancelSiblingV1', { n: 1 });
    await waitFor('the slow handler to be aborted', () => seen.reasons.length === 1);
    const reason = seen.reasons[0] as RunCancelledError;
    assert.ok(reason instanceof RunCancelledError, String(reason));
    assert.equal(reason.status, 'failed');
    assert.match(reason.reason ?? '', /card declined/);
    assert.match(reason.message, /is failed \(.*card declined/);
    const run = await runRow(runId);
    assert.equal(run.status, 'failed');
    assert.match(run.error ?? '', /card declined/);
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test('worker_heartbeat names only ended runs of the tasks this worker holds', async () => {
  const [{ answer }] = await db.sql<{ answer: { state: string; ended_runs: unknown[] } }[]>`
    select switchyard.worker_heartbeat(${crypto.randomUUID()}::uuid) as answer`;
  assert.deepEqual(answer, { state: 'deprecated', ended_runs: [] });
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
