/**
 * The durable engine end to end for plain flows: real PostgreSQL, real workers.
 */
import assert from 'node:assert/strict';
import { InvalidInputError, WorkerConfigError, WorkerShutdownError } from '../../lib/errors.ts';
import { EdgeWorker, Flow, startWorker } from '../../lib/mod.ts';
import { createMemoryPlatform } from '../../lib/platform/platform.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { spawnDeno } from '../_helpers/process.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

function diamond(slug: string) {
  return new Flow<{ n: number }>({ slug, maxAttempts: 3, baseDelay: 1 })
    .step({ slug: 'a' }, (input) => ({ v: input.n }))
    .step({ slug: 'b', dependsOn: ['a'] }, (input) => ({ b: input.a.v * 2 }))
    .step({ slug: 'c', dependsOn: ['a'] }, (input) => ({ c: input.a.v + 1 }))
    .step({ slug: 'd', dependsOn: ['b', 'c'] }, (input, ctx) => ({
      seen: input,
      sum: input.b.b + input.c.c,
      run: ctx.runId,
    }));
}

Deno.test('a diamond flow completes 200 runs with 2 concurrent workers, each task once', async () => {
  const flow = diamond('diamond');
  const options = { connectionString: db.url, maxConcurrent: 8, ...FAST };
  const w1 = await startWorker(flow, options);
  const w2 = await startWorker(flow, options);
  try {
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push(await client.startFlow('diamond', { n: i }));
    await waitFor('200 completed runs', async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.runs where flow_slug = 'diamond' and status = 'completed'`;
      return n === 200;
    }, { timeoutMs: 60_000 });
    const status = await client.runStatus(ids[7]);
    assert.equal(status?.status, 'completed');
    const d = (status!.output as { d: { seen: unknown; sum: number } }).d;
    assert.deepEqual(d.seen, { b: { b: 14 }, c: { c: 8 } });
    assert.equal(d.sum, 22);
    const [tasks] = await db.sql<{ total: number; once: number; workers: number }[]>`
      select count(*)::int as total, count(*) filter (where attempts_count = 1)::int as once,
             count(distinct worker_id)::int as workers
        from switchyard.step_tasks where flow_slug = 'diamond' and status = 'completed'`;
    assert.equal(tasks.total, 800);
    assert.equal(tasks.once, 800, 'with no failures every task ran exactly once');
    assert.equal(tasks.workers, 2, 'both workers took tasks');
    const [{ left }] = await db.sql<
      { left: number }[]
    >`select count(*)::int as left from pgmq.q_diamond`;
    assert.equal(left, 0, 'every message was archived');
  } finally {
    await Promise.all([w1.stop(), w2.stop()]);
  }
});

Deno.test('a failing step is retried with growing delays up to maxAttempts, then its run fails', async () => {
  const attempts: number[] = [];
  const flow = new Flow<{ fail: boolean }>({ slug: 'flaky', maxAttempts: 3, baseDelay: 1 })
    .step({ slug: 'work' }, (input, ctx) => {
      if (input.fail) {
        attempts.push(Date.now());
        throw new Error(`boom on attempt ${ctx.attempt}`);
      }
      return 'fine';
    });
  const worker = await startWorker(flow, { connectionString: db.url, ...FAST });
  try {
    const bad = await client.startFlow('flaky', { fail: true });
    const good = await client.startFlow('flaky', { fail: false });
    assert.equal((await client.waitForRun(good)).status, 'completed', 'other runs continue');
    const failed = await client.waitForRun(bad, { timeoutMs: 20_000 });
    assert.equal(failed.status, 'failed');
    assert.match(failed.error ?? '', /boom on attempt 3/);
    assert.equal(attempts.length, 3);
    const d1 = attempts[1] - attempts[0], d2 = attempts[2] - attempts[1];
    assert.ok(d1 >= 900, `first retry waited ${d1} ms (baseDelay 1 s)`);
    assert.ok(d2 >= 1900, `second retry waited ${d2} ms (2 x baseDelay)`);
    const [task] = await db
      .sql`select status, attempts_count from switchyard.step_tasks where run_id = ${bad}`;
    assert.deepEqual({ ...task }, { status: 'failed', attempts_count: 3 });
  } finally {
    await worker.stop();
  }
});

Deno.test('a worker process killed mid-task: the task is recovered and completed by another worker', async () => {
  // The child runs a worker whose step blocks until it is killed.
  const child = spawnDeno(
    ['run', '-A', new URL('../fixtures/slow_worker.ts', import.meta.url).pathname],
    { env: { DATABASE_URL: db.url, SLOW_STEP_MS: '600000' }, stdout: 'null', stderr: 'inherit' },
  );
  let killed = false;
  try {
    // The flow is compiled by the child; wait for it, then start a run.
    await waitFor('the child worker to register', async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.workers where queue_name = 'slowpoke' and stopped_at is null`;
      return n === 1;
    });
    const runId = await client.startFlow('slowpoke', { label: 'x' });
    await waitFor('the child to start the task', async () => {
      const [t] = await db
        .sql`select status from switchyard.step_tasks where run_id = ${runId} and step_slug = 'slow'`;
      return t?.status === 'started';
    });
    await child.kill('SIGKILL');
    killed = true;
    await child.status;

    const { slowpoke } = await import('../fixtures/slow_worker.ts');
    const rescuer = await startWorker(slowpoke(0), { connectionString: db.url, ...FAST });
    try {
      const status = await client.waitForRun(runId, { timeoutMs: 30_000 });
      assert.equal(status.status, 'completed');
      assert.deepEqual(status.output, { slow: { done: 'x' } });
      const [task] = await db.sql`
        select attempts_count, status from switchyard.step_tasks where run_id = ${runId} and step_slug = 'slow'`;
      assert.deepEqual({ ...task }, { attempts_count: 2, status: 'completed' });
      const [{ completions }] = await db.sql<{ completions: number }[]>`
        select count(*)::int as completions from switchyard.runs where run_id = ${runId} and status = 'completed'`;
      assert.equal(completions, 1);
    } finally {
      await rescuer.stop();
    }
  } finally {
    if (!killed) await child.stop('SIGKILL');
  }
});

Deno.test('bad input: unknown flow, SQL NULL and non-JSON input give clear errors', async () => {
  await assert.rejects(client.startFlow('noSuchFlow', {}), /unknown flow or alias "noSuchFlow"/);
  await assert.rejects(
    db.sql`select switchyard.start_flow('diamond', null)`,
    /input must be a JSON value, got SQL NULL/,
  );
  await assert.rejects(client.startFlow('diamond', { f: () => 1 }), InvalidInputError);
  await assert.rejects(client.startFlow('diamond', undefined), InvalidInputError);
  await assert.rejects(client.startFlow('diamond', { n: 10n }), InvalidInputError);
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.runs where flow_slug = 'noSuchFlow'`;
  assert.equal(n, 0);
});

Deno.test('a handler output that is not JSON fails the attempt with the rule', async () => {
  const flow = new Flow({ slug: 'badOutput', maxAttempts: 1 })
    .step({ slug: 'x' }, () => ({ when: new Date() }) as unknown as string);
  const worker = await startWorker(flow, { connectionString: db.url, ...FAST });
  try {
    const run = await client.startFlow('badOutput', {});
    const status = await client.waitForRun(run);
    assert.equal(status.status, 'failed');
    assert.match(status.error ?? '', /output of badOutput\/x/);
  } finally {
    await worker.stop();
  }
});

Deno.test('a worker stops by itself when its row is deprecated; done resolves', async () => {
  const flow = new Flow({ slug: 'deprecated' }).step({ slug: 'x' }, () => 1);
  const worker = await startWorker(flow, { connectionString: db.url, ...FAST });
  await db.sql`select switchyard.deprecate_workers(${worker.functionName})`;
  await within(30_000, 'the deprecated worker to stop (worker.done)', worker.done);
  const [row] = await db
    .sql`select stopped_at from switchyard.workers where worker_id = ${worker.workerId}`;
  assert.ok(row.stopped_at, 'the stop is recorded');
});

Deno.test('a step retried past attempt 64 fails at its last attempt with its error (no delay overflow)', async () => {
  let executions = 0;
  const flow = new Flow({ slug: 'manyRetries', maxAttempts: 70, baseDelay: 0 })
    .step({ slug: 'work' }, (_input, ctx) => {
      executions++;
      throw new Error(`attempt ${ctx.attempt} failed`);
    });
  const worker = await startWorker(flow, { connectionString: db.url, ...FAST, logger: SILENT });
  try {
    const run = await client.startFlow('manyRetries', {});
    const status = await client.waitForRun(run, { timeoutMs: 60_000 });
    assert.equal(status.status, 'failed');
    assert.match(
      status.error ?? '',
      /failed after 70 attempt\(s\): Error: attempt 70 failed\n {4}at /,
    );
    assert.equal(executions, 70);
  } finally {
    await worker.stop();
  }
});

Deno.test('a heartbeat window shorter than three heartbeat intervals is refused at start with the rule', async () => {
  const flow = new Flow({ slug: 'hbRule' }).step({ slug: 'x' }, () => 1);
  const err = await startWorker(flow, {
    connectionString: db.url,
    heartbeatIntervalMs: 20_000,
    heartbeatWindowSeconds: 2,
  }).then(() => null, (e) => e);
  assert.ok(err instanceof WorkerConfigError, String(err));
  assert.match(
    err.message,
    /heartbeatWindowSeconds 2 is invalid with heartbeatIntervalMs 20000: the window must be at least 3 heartbeat intervals \(60 s\)/,
  );
  const rows = await db.sql`select 1 from switchyard.workers where queue_name = 'hbrule'`;
  assert.equal(rows.length, 0, 'no worker registered');
});

Deno.test("a worker's stall sweep never requeues a healthy task of a worker with a longer window", async () => {
  const executions: number[] = [];
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const flow = new Flow({ slug: 'windows', maxAttempts: 3 })
    .step({ slug: 'work' }, async (_input, ctx) => {
      executions.push(ctx.attempt);
      if (ctx.attempt === 1) await released;
      return 'done';
    });
  // A heart-beats every 20 s with a 60 s window; B sweeps the queue with a 2 s window of its own.
  const a = await startWorker(flow, {
    connectionString: db.url,
    ...FAST,
    heartbeatIntervalMs: 20_000,
    heartbeatWindowSeconds: 60,
  });
  let b: Awaited<ReturnType<typeof startWorker>> | undefined;
  try {
    const run = await client.startFlow('windows', {});
    await waitFor('A to start the first attempt', () => executions.length > 0);
    b = await startWorker(flow, { connectionString: db.url, ...FAST, heartbeatWindowSeconds: 2 });
    const bStarted = Date.now();
    // Until A has been silent for longer than B's window for several of B's sweeps (every
    // 300 ms, and B has been sweeping for 2 s).
    await waitFor("A silent past B's window while B sweeps", async () => {
      const [w] = await db.sql<{ silent: number }[]>`
        select extract(epoch from now() - last_heartbeat_at)::float as silent
          from switchyard.workers where worker_id = ${a.workerId}`;
      return w.silent > 4 && Date.now() - bStarted > 2000;
    }, { timeoutMs: 15_000 });
    release();
    const status = await client.waitForRun(run);
    assert.equal(status.status, 'completed');
    assert.deepEqual(executions, [1], 'ran once, by A');
    const [task] = await db.sql`select attempts_count, worker_id from switchyard.step_tasks
                                 where run_id = ${run}`;
    assert.deepEqual({ ...task }, { attempts_count: 1, worker_id: a.workerId });
  } finally {
    release();
    await Promise.all([a.stop(), b?.stop()]);
  }
});

Deno.test('heartbeats have their own connection: statements blocked in the database never starve them', async () => {
  const flow = new Flow({ slug: 'hbConn' }).step({ slug: 'x' }, () => 1);
  // maxConcurrent 1: a pool of 4 connections.
  const worker = await startWorker(flow, {
    connectionString: db.url,
    ...FAST,
    maxConcurrent: 1,
    heartbeatWindowSeconds: 2,
  });
  const beat = async () =>
    (await db.sql<{ at: string }[]>`select last_heartbeat_at::text as at from switchyard.workers
                                      where worker_id = ${worker.workerId}`)[0].at;
  try {
    await waitFor(
      'the heartbeat session of its own',
      async () =>
        (await db.sql`select 1 from pg_stat_activity
        where application_name = ${`switchyard heartbeat ${worker.workerId}`}`).length === 1,
    );
    await db.sql.begin(async (tx) => {
      // Every stall sweep now waits for this lock, tick after tick.
      await tx`lock table switchyard.step_tasks in exclusive mode`;
      await waitFor(
        'a stall sweep waiting for the lock',
        async () =>
          (await db.sql`select 1 from pg_stat_activity
          where wait_event_type = 'Lock' and query like '%recover_stalled%'`).length > 0,
      );
      const seen = new Set([await beat()]);
      await waitFor('five more heartbeats while the sweep is blocked', async () => {
        seen.add(await beat());
        return seen.size > 5;
      }, { timeoutMs: 10_000 });
      const [{ blocked }] = await db.sql<{ blocked: number }[]>`
        select count(*)::int as blocked from pg_stat_activity
         where wait_event_type = 'Lock' and query like '%recover_stalled%'`;
      assert.equal(blocked, 1, 'a blocked sweep holds one connection, not one per tick');
    });
    assert.equal(worker.state, 'running');
  } finally {
    await worker.stop();
  }
  const [gone] = await db.sql`select 1 from pg_stat_activity
    where application_name = ${`switchyard heartbeat ${worker.workerId}`}`;
  assert.equal(gone, undefined, 'the heartbeat connection is closed with the worker');
});

Deno.test('a run whose queued message was deleted with pgmq.delete completes: the sweep sends it again', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'lostMessage' })
    .step({ slug: 'a' }, (input) => input.n + 1)
    .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a * 2);
  // Compile the flow, then run nothing until the message is gone.
  await (await startWorker(flow, { connectionString: db.url, ...FAST })).stop();
  const run = await client.startFlow('lostMessage', { n: 1 });
  const [task] = await db.sql<{ message_id: string }[]>`
    select message_id::text from switchyard.step_tasks where run_id = ${run} and step_slug = 'a'`;
  const [{ deleted }] = await db.sql`select pgmq.delete('lostmessage', ${task.message_id}::bigint)
                                       as deleted`;
  assert.equal(deleted, true);
  // As if the grace period had passed since the task was queued and the queue last checked.
  await db.sql`update switchyard.step_tasks set queued_at = now() - interval '1 hour'
                where run_id = ${run}`;
  await db
    .sql`update switchyard.queues set lost_checked_at = null where queue_name = 'lostmessage'`;
  const worker = await startWorker(flow, { connectionString: db.url, ...FAST });
  try {
    const status = await client.waitForRun(run, { timeoutMs: 20_000 });
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { b: 4 });
    const [after] = await db.sql<{ message_id: string; attempts_count: number }[]>`
      select message_id::text, attempts_count from switchyard.step_tasks
       where run_id = ${run} and step_slug = 'a'`;
    assert.notEqual(after.message_id, task.message_id, 'sent again under a new id');
    assert.equal(after.attempts_count, 1);
  } finally {
    await worker.stop();
  }
});

Deno.test('stop aborts ctx.signal; tasks done within the grace period complete, a handler that honours it is released with its attempt refunded, one that ignores it uses its attempt', async () => {
  const signals = new Map<string, AbortSignal>();
  let firstWorker = true;
  let unblock!: () => void;
  const blocked = new Promise<void>((r) => (unblock = r));
  const aborted = (signal: AbortSignal) =>
    new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
  const flow = new Flow<{ kind: string }>({ slug: 'shutdown', maxAttempts: 1, timeout: 600 })
    .step({ slug: 'work' }, async (input, ctx) => {
      if (!firstWorker) return { kind: input.kind, attempt: ctx.attempt, second: true };
      signals.set(input.kind, ctx.signal);
      if (input.kind === 'cooperative') {
        await aborted(ctx.signal); // stops its I/O and returns what it has
        return { kind: input.kind, partial: true };
      }
      if (input.kind === 'throwsOnAbort') {
        await aborted(ctx.signal);
        throw ctx.signal.reason;
      }
      await blocked; // ignores the signal
      return { kind: input.kind, late: true };
    });
  const worker = await startWorker(flow, {
    connectionString: db.url,
    ...FAST,
    maxConcurrent: 3,
    shutdownGraceMs: 300,
    logger: SILENT,
  });
  const kinds = ['cooperative', 'throwsOnAbort', 'ignores'];
  const runs = new Map<string, string>();
  try {
    for (const kind of kinds) runs.set(kind, await client.startFlow('shutdown', { kind }));
    await waitFor('three handlers running', () => signals.size === 3);
    await within(15_000, 'stop() to settle', worker.stop());
    for (const kind of kinds) {
      const signal = signals.get(kind)!;
      assert.equal(signal.aborted, true, `${kind}: signal aborted by the stop`);
      assert.ok(signal.reason instanceof WorkerShutdownError, `${kind}: ${signal.reason}`);
    }
    const task = async (kind: string) =>
      (await db.sql`select t.status, t.attempts_count, t.worker_id, t.error,
                           q.vt <= now() as visible
                      from switchyard.step_tasks t
                      left join pgmq.q_shutdown q on q.msg_id = t.message_id
                     where t.run_id = ${runs.get(kind)!}`)[0];
    const done = await client.runStatus(runs.get('cooperative')!);
    assert.equal(done?.status, 'completed', 'finished within the grace period');
    assert.deepEqual(done?.output, { work: { kind: 'cooperative', partial: true } });
    assert.deepEqual(
      { ...(await task('throwsOnAbort')) },
      { status: 'queued', attempts_count: 0, worker_id: null, error: null, visible: true },
      'throwsOnAbort: released at once, its attempt refunded, not failed',
    );
    // Still running after the grace period, with no checkpoint: its attempt (the only one) counts.
    const ignored = await task('ignores');
    assert.equal(ignored.status, 'failed', 'ignores: its attempt counted');
    assert.equal(ignored.attempts_count, 1);
    assert.match(ignored.error, /still running when the worker stopped/);
    assert.equal((await client.runStatus(runs.get('ignores')!))?.status, 'failed');
    const [row] = await db.sql`select stopped_at, deprecated_at from switchyard.workers
                                where worker_id = ${worker.workerId}`;
    assert.ok(row.stopped_at && row.deprecated_at);
  } finally {
    unblock();
    await worker.stop();
  }
  // The refunded task runs again from attempt 1 (maxAttempts 1: the shutdown used none).
  firstWorker = false;
  const second = await startWorker(flow, { connectionString: db.url, ...FAST, logger: SILENT });
  try {
    for (const kind of ['throwsOnAbort']) {
      const status = await client.waitForRun(runs.get(kind)!);
      assert.equal(status.status, 'completed', kind);
      assert.deepEqual(status.output, { work: { kind, attempt: 1, second: true } });
    }
  } finally {
    await second.stop();
  }
});

Deno.test('a message read after a stop request is made visible again at once, its task left queued', async () => {
  let ran = 0;
  const flow = new Flow({ slug: 'lateRead', maxAttempts: 1 }).step({ slug: 'work' }, () => ran++);
  const url = new URL(db.url);
  url.searchParams.set('application_name', 'late_read_worker');
  // A long poll and a long visibility timeout: a read message not handed back stays hidden
  // for 10 minutes, which nothing below waits for.
  const worker = await startWorker(flow, {
    ...FAST,
    connectionString: url.toString(),
    maxPollSeconds: 30,
    visibilityTimeout: 600,
    logger: SILENT,
  });
  let stopping: Promise<void> | undefined;
  try {
    // The poller is inside read_with_poll; the stop request comes now, the message after it,
    // so the poll returns it to a stopping worker.
    await waitFor(
      'the poller to wait in read_with_poll',
      async () =>
        (await db.sql`select 1 from pg_stat_activity
                     where application_name = 'late_read_worker' and state = 'active'
                       and query like '%read_with_poll%'`).length > 0,
    );
    stopping = worker.stop();
    const runId = await client.startFlow('lateRead', {});
    await within(30_000, 'the stopping worker to finish (stop())', stopping);
    const [task] = await db.sql`
      select t.status, t.attempts_count, t.worker_id, q.read_ct, q.vt <= clock_timestamp() as visible
        from switchyard.step_tasks t join pgmq.q_lateread q on q.msg_id = t.message_id
       where t.run_id = ${runId}`;
    assert.deepEqual(
      { ...task },
      { status: 'queued', attempts_count: 0, worker_id: null, read_ct: 1, visible: true },
      'read once by the stopping poller, not claimed, visible again at once',
    );
    assert.equal(ran, 0, 'no handler ran');
  } finally {
    await worker.stop();
  }
});

Deno.test('beforeunload aborts the signal of a running handler and releases its task', async () => {
  let signal: AbortSignal | undefined;
  const flow = new Flow<{ n: number }>({ slug: 'unloading', maxAttempts: 2, timeout: 600 })
    .step({ slug: 'work' }, async (_input, ctx) => {
      signal = ctx.signal;
      await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
      throw ctx.signal.reason; // honours the shutdown: the attempt is refunded
    });
  const platform = createMemoryPlatform({
    DATABASE_URL: db.url,
    SWITCHYARD_MAX_POLL_SECONDS: '1',
    SWITCHYARD_POLL_INTERVAL_MS: '20',
    SWITCHYARD_SHUTDOWN_GRACE_MS: '200',
  });
  const secret = 'unload-test-secret-0123456789';
  const handle = EdgeWorker.start(flow, { platform, auth: { secrets: [secret] } });
  const response = await platform.fetch('http://function/', {
    headers: { Authorization: `Bearer ${secret}` },
  });
  assert.equal(response.status, 200, await response.text());
  const run = await client.startFlow('unloading', { n: 1 });
  await waitFor('the handler to run', () => signal !== undefined);
  await within(15_000, 'the unload to settle', platform.unload());
  assert.equal(signal!.aborted, true);
  assert.ok(signal!.reason instanceof WorkerShutdownError);
  const [t] = await db.sql`select status, attempts_count from switchyard.step_tasks
                            where run_id = ${run}`;
  assert.deepEqual({ ...t }, { status: 'queued', attempts_count: 0 });
  await handle.stop();
});

Deno.test('handlers get their input and the flow input from a claim that carries it once', async () => {
  const seen: Record<string, { input: unknown; flowInput: unknown }> = {};
  const flow = new Flow<unknown>({ slug: 'inputsOnce' })
    .step({ slug: 'r1' }, (input, ctx) => {
      seen[`${ctx.runId}/r1`] = { input, flowInput: ctx.flowInput };
      return 'one';
    })
    .step({ slug: 'r2' }, (input, ctx) => {
      seen[`${ctx.runId}/r2`] = { input, flowInput: ctx.flowInput };
      return 'two';
    })
    .step({ slug: 'd', dependsOn: ['r1', 'r2'] }, (input, ctx) => {
      seen[`${ctx.runId}/d`] = { input, flowInput: ctx.flowInput };
      return 'three';
    });
  await (await startWorker(flow, { connectionString: db.url, ...FAST })).stop();
  // Queued before the worker starts, so tasks of one run arrive in one batch.
  const inputs: unknown[] = [null, { big: 'y'.repeat(50_000) }, [1, 'two'], 0, ''];
  const runs = [];
  for (const input of inputs) {
    // (The client sends JSON null as SQL NULL, which start_flow refuses; SQL takes it as is.)
    const [{ id }] = await db.sql`select switchyard.start_flow('inputsOnce',
      ${JSON.stringify(input)}::text::jsonb) as id`;
    runs.push(id);
  }
  const worker = await startWorker(flow, { connectionString: db.url, ...FAST, maxConcurrent: 20 });
  try {
    for (const [i, run] of runs.entries()) {
      assert.equal((await client.waitForRun(run)).status, 'completed');
      for (const root of ['r1', 'r2']) {
        assert.deepEqual(seen[`${run}/${root}`], { input: inputs[i], flowInput: inputs[i] });
      }
      assert.deepEqual(seen[`${run}/d`], { input: { r1: 'one', r2: 'two' }, flowInput: inputs[i] });
    }
  } finally {
    await worker.stop();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
