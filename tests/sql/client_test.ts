/**
 * The client for applications (issue 14, docs/design/client.md) against real PostgreSQL
 * and real workers: typed start and output, waiting on notifications (queries counted, never
 * timed), a lost listener connection and a database restart mid-wait, events in order,
 * cancel and retry (SQL functions, client methods and `deno task cancel|retry`), idempotent
 * starts, and the README's "Starting flows from your app" as written.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker, type Worker } from '../../lib/mod.ts';
import { createClient, type SwitchyardClient } from '../../lib/client.ts';
import { RunFailedError, RunNotFoundError, RunTimeoutError } from '../../lib/errors.ts';
import { runEvents } from '../../lib/ops.ts';
import { migrate } from '../../lib/sql/migrate.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { startCluster } from '../../tools/_cluster.ts';
import { adminUrl, createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { deno, envWithout } from '../_helpers/process.ts';
import { sectionText } from '../_helpers/docs.ts';

const db = await createTestDatabase();
const ROOT = new URL('../../', import.meta.url).pathname;

type Row = Record<string, unknown>;
const count = async (q: Promise<Row[]>) => Number((await q)[0].n);

/** A promise that a test opens by hand: handlers wait on it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, wait: () => opened };
}

/** A postgres.js client on the test database that counts the client's reads of a run. */
function countingSql(url = db.url) {
  const counter = { reads: 0 };
  const sql = postgres(url, {
    max: 2,
    prepare: false,
    onnotice: () => {},
    connection: { application_name: 'sy_client_test' },
    debug: (_connection, query) => {
      if (/from switchyard\.runs r where r\.run_id/.test(query)) counter.reads++;
    },
  });
  return { sql, counter };
}

/** Events as compact strings: `run started`, `a completed`, ... */
const names = (events: { stepSlug: string | null; event: string }[]) =>
  events.map((e) => `${e.stepSlug ?? 'run'} ${e.event}`);

// ---------------------------------------------------------------------------
// Typed start and output through a worker; events in order

const chainV1 = new Flow<{ text: string }>({ slug: 'chainV1' })
  .step({ slug: 'fetch' }, (input) => ({ text: input.text.trim() }))
  .step({ slug: 'count', dependsOn: ['fetch'] }, (input) => input.fetch.text.length)
  .step({ slug: 'report', dependsOn: ['count'] }, (input) => ({ long: input.count > 3 }));
const chainRegistry = [
  defineDeployedFlow(
    routeFlow(chainV1, {
      queues: { fetch: 'client_chain', count: 'client_chain', report: 'client_chain' },
    }),
    { alias: 'chain' },
  ),
] as const;

Deno.test('typed start and output round trip through a worker; status lists the steps', async () => {
  const worker = await startWorker(chainRegistry, {
    connectionString: db.url,
    queueName: 'client_chain',
    ...FAST,
  });
  const client = createClient(chainRegistry, { connectionString: db.url });
  try {
    const run = await client.start('chain', { text: '  hello ' });
    const output = await run.output({ timeoutMs: 30_000 });
    const long: boolean = output.report.long;
    assert.deepEqual(output, { report: { long: true } });
    assert.equal(long, true);
    const status = await run.status();
    assert.equal(status?.status, 'completed');
    assert.equal(status?.flowSlug, 'chainV1');
    assert.equal(status?.startedAs, 'chain');
    assert.deepEqual(
      status?.steps.map((s) => [s.stepSlug, s.status, s.attempts]),
      [['fetch', 'completed', 1], ['count', 'completed', 1], ['report', 'completed', 1]],
    );
    // Behind a transaction pooler nothing is delivered: waiting says so instead of hanging.
    const pooled = createClient(chainRegistry, {
      connectionString: 'postgres://u:p@127.0.0.1:6543/postgres',
    });
    await assert.rejects(
      pooled.run(crypto.randomUUID()).output(),
      /names a transaction pooler \(port 6543\), which does not deliver notifications/,
    );
    await pooled.close();
    // A handle on an unknown run: output() and events() say so.
    const unknown = client.run(crypto.randomUUID());
    assert.equal(await unknown.status(), null);
    await assert.rejects(unknown.output(), RunNotFoundError);
    await assert.rejects(unknown.events().next(), RunNotFoundError);
  } finally {
    await client.close();
    await worker.stop();
  }
});

Deno.test('events of a 3-step run arrive in order; notifications carry the run id only', async () => {
  const payloads: string[] = [];
  const raw = await db.sql.listen('switchyard_run_events', (p) => payloads.push(p));
  const client = createClient(chainRegistry, { connectionString: db.url });
  let worker: Worker | undefined;
  try {
    const run = await client.start('chain', { text: 'abc' });
    const seen: string[] = [];
    const following = (async () => {
      for await (const e of run.events()) seen.push(`${e.stepSlug ?? 'run'} ${e.event}`);
    })();
    worker = await startWorker(chainRegistry, {
      connectionString: db.url,
      queueName: 'client_chain',
      ...FAST,
    });
    await following;
    const expected = [
      'run started',
      'fetch started',
      'fetch completed',
      'count started',
      'count completed',
      'report started',
      'report completed',
      'run completed',
    ];
    assert.deepEqual(seen, expected);
    // The table holds the same events in the same order; resuming after one skips it.
    const rows = await db.sql<{ event_id: string; step_slug: string | null; event: string }[]>`
      select e.event_id::text, e.step_slug, e.event from switchyard.run_events e
       where e.run_id = ${run.runId} order by e.event_id`;
    assert.deepEqual(rows.map((r) => `${r.step_slug ?? 'run'} ${r.event}`), expected);
    const resumed: string[] = [];
    for await (const e of run.events({ after: Number(rows[5].event_id) })) {
      resumed.push(`${e.stepSlug ?? 'run'} ${e.event}`);
    }
    assert.deepEqual(resumed, expected.slice(6));
    await waitFor('the completion notification', () => payloads.length >= 4);
    assert.ok(payloads.every((p) => p === run.runId), `payloads: ${payloads.join(', ')}`);
  } finally {
    await raw.unlisten();
    await client.close();
    await worker?.stop();
  }
});

// ---------------------------------------------------------------------------
// No polling: reads counted per notification

Deno.test('output() reads once, then once after the completion notification (counted, not timed)', async () => {
  const release = gate();
  const started = gate();
  const flow = new Flow<{ n: number }>({ slug: 'onceV1' })
    .step({ slug: 'work' }, async (input) => {
      started.open();
      await release.wait();
      return input.n * 2;
    });
  const registry = [defineDeployedFlow(flow, { alias: 'once' })] as const;
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'oncev1',
    ...FAST,
  });
  const { sql, counter } = countingSql();
  const client = createClient(registry, { sql });
  try {
    const run = await client.start('once', { n: 21 });
    // The claim changed no step: no notification.
    await within(30_000, 'the handler to start', started.wait());
    const output = run.output({ timeoutMs: 30_000 });
    await waitFor('the first read', () => counter.reads === 1);
    release.open();
    assert.deepEqual(await output, { work: 42 });
    assert.equal(counter.reads, 2, 'one read at the start, one after the notification');
    // A wait that times out read once and says where the run is.
    await worker.stop();
    const idle = await client.start('once', { n: 1 });
    await assert.rejects(idle.output({ timeoutMs: 200 }), RunTimeoutError);
    // A signal ends a wait with its reason; the run goes on.
    const controller = new AbortController();
    const aborted = idle.output({ signal: controller.signal });
    controller.abort('the request was cancelled');
    await assert.rejects(aborted, (e) => e === 'the request was cancelled');
  } finally {
    await client.close();
    await sql.end();
    await worker.stop();
  }
});

/** Compiles a one-step flow on `queue`, registers a worker row and returns a claimer. */
async function manualFlow(slug: string, alias: string, queue: string) {
  const flow = new Flow<{ n: number }>({ slug }).step({ slug: 'a' }, (i) => i.n);
  const shape = toPlacement(routeFlow(flow, { queues: { a: queue } })).shape;
  await db.sql`select switchyard.ensure_flow(${db.sql.json(shape as never)}::jsonb)`;
  await db.sql`select switchyard.sync_alias(${alias}, ${pgArray([slug])}::text[])`;
  const workerId = crypto.randomUUID();
  await db.sql`select switchyard.register_worker(${workerId}::uuid, ${queue}, ${`${queue}-fn`},
    ${pgArray([`${slug}/a`])}::text[])`;
  return {
    flow,
    /** Claims the run's task of step a (attempt 1). */
    async claim(runId: string) {
      const [{ message_id }] = await db.sql<{ message_id: string }[]>`
        select message_id::text from switchyard.step_tasks where run_id = ${runId}`;
      const [c] = await db.sql<{ disposition: string }[]>`select disposition
        from switchyard.start_tasks(${queue}, ${pgArray([message_id])}::bigint[],
          ${workerId}::uuid, ${pgArray([`${slug}/a`])}::text[])`;
      assert.equal(c.disposition, 'claimed');
    },
  };
}

Deno.test('a completion while the listener is disconnected is found by the re-read after reconnect', async () => {
  const manual = await manualFlow('gapV1', 'gap', 'client_gap');
  const registry = [defineDeployedFlow(manual.flow, { alias: 'gap' })] as const;
  const { sql, counter } = countingSql();
  const client = createClient(registry, { sql });
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
  const database = new URL(db.url).pathname.slice(1);
  try {
    const run = await client.start('gap', { n: 5 });
    await manual.claim(run.runId);
    const output = run.output({ timeoutMs: 60_000 });
    await waitFor('the first read', () => counter.reads === 1);
    // Cut the listener off and keep it off while the run completes.
    await admin.unsafe(`alter database "${database}" allow_connections false`);
    try {
      await admin`select pg_terminate_backend(pid) from pg_stat_activity
        where datname = ${database} and application_name = 'sy_client_test'
          and query like 'listen%'`;
      await waitFor(
        'the listener to be gone',
        async () =>
          (await count(admin`select count(*) as n from pg_stat_activity
          where datname = ${database} and application_name = 'sy_client_test'
            and query like 'listen%'`)) === 0,
      );
      // db.sql's connections are open already: the completion commits now, unheard.
      const [{ ok }] = await db.sql<{ ok: boolean }[]>`
        select switchyard.complete_task(${run.runId}::uuid, 'a', 1, '{"done": true}') as ok`;
      assert.equal(ok, true);
      assert.equal(counter.reads, 1, 'nothing woke the waiter yet');
    } finally {
      await admin.unsafe(`alter database "${database}" allow_connections true`);
    }
    assert.deepEqual(await output, { a: { done: true } });
    assert.equal(counter.reads, 2, 'the re-read after the new LISTEN found the completed run');
  } finally {
    await client.close();
    await sql.end();
    await admin.end();
  }
});

Deno.test({
  name: 'output() resolves after a PostgreSQL restart mid-wait (its own cluster)',
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const flow = new Flow<{ n: number }>({ slug: 'restartV1' })
      .step({ slug: 'a' }, (input) => input.n + 1);
    const registry = [defineDeployedFlow(flow, { alias: 'restart' })] as const;
    const cluster = await startCluster();
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    let worker: Worker | undefined;
    let client: SwitchyardClient<typeof registry> | undefined;
    let counted: ReturnType<typeof countingSql> | undefined;
    try {
      for (const role of ['anon', 'authenticated', 'service_role']) {
        await admin.unsafe(`create role ${role} nologin`);
      }
      await admin`create database switchyard_restart`;
      const url = cluster.url.replace(/\/postgres$/, '/switchyard_restart');
      await migrate(url);
      const shape = toPlacement(flow).shape;
      const setup = postgres(url, { max: 1, onnotice: () => {} });
      await setup`select switchyard.ensure_flow(${setup.json(shape as never)}::jsonb)`;
      await setup`select switchyard.sync_alias('restart', array['restartV1'])`;
      await setup.end();
      counted = countingSql(url);
      client = createClient(registry, { sql: counted.sql });
      const run = await client.start('restart', { n: 1 });
      const output = run.output({ timeoutMs: 60_000 });
      await waitFor('the first read', () => counted!.counter.reads === 1);
      await cluster.restart();
      await waitFor(
        'the re-read after the listener reconnected',
        () => counted!.counter.reads === 2,
        { timeoutMs: 60_000 },
      );
      worker = await startWorker(flow, { connectionString: url, ...FAST });
      assert.deepEqual(await output, { a: 2 });
      assert.equal(counted.counter.reads, 3, 'one more read, after the completion notification');
    } finally {
      await worker?.stop();
      await client?.close();
      await counted?.sql.end();
      await admin.end();
      await cluster.stop();
    }
  },
});

// ---------------------------------------------------------------------------
// Cancel

/** Rounds of 40 racing start-and-cancel pairs (`SWITCHYARD_RACE_ITERATIONS` for more). */
const RACE_ROUNDS = Number(Deno.env.get('SWITCHYARD_RACE_ITERATIONS') ?? '3');

Deno.test('cancel mid-flight: queued work archived, the running step finishes unheard, nothing starts', async () => {
  const release = gate();
  const started = gate();
  const executions: string[] = [];
  const flow = new Flow<{ n: number }>({ slug: 'cancelV1' })
    .step({ slug: 'slow' }, async (input) => {
      executions.push('slow');
      started.open();
      await release.wait();
      return input.n;
    })
    .step({ slug: 'side' }, () => {
      executions.push('side');
      return 'side';
    })
    .step({ slug: 'after', dependsOn: ['slow'] }, () => {
      executions.push('after');
      return 'after';
    });
  const registry = [
    defineDeployedFlow(
      routeFlow(flow, {
        queues: { slow: 'cancel_work', side: 'cancel_idle', after: 'cancel_work' },
      }),
      { alias: 'cancellable' },
    ),
  ] as const;
  // Only cancel_work has a worker: side's message waits, visible, on cancel_idle.
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'cancel_work',
    ...FAST,
  });
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('cancellable', { n: 1 });
    await within(30_000, 'the handler to start', started.wait());
    const ending = run.output({ timeoutMs: 30_000 });
    const result = await client.cancel(run.runId, 'the customer withdrew');
    assert.deepEqual(result, { runId: run.runId, changed: true });
    const failure = await ending.then(() => assert.fail('a cancelled run has no output'), (e) => e);
    assert.ok(failure instanceof RunFailedError);
    assert.equal(failure.status, 'cancelled');
    assert.equal(failure.error, 'cancelled: the customer withdrew');
    assert.equal(await count(db.sql`select count(*) as n from pgmq.q_cancel_idle`), 0);
    const [side] = await db.sql`select status from switchyard.step_tasks
      where run_id = ${run.runId} and step_slug = 'side'`;
    assert.equal(side.status, 'cancelled', 'the queued task is cancelled, not left queued');

    // The running step finishes; its late answer is refused (issue 36): the task ends
    // cancelled, keeping no output, and counts as no completion.
    release.open();
    await waitFor(
      'the slow task to end cancelled',
      async () =>
        (await count(db.sql`select count(*) as n from switchyard.step_tasks
        where run_id = ${run.runId} and step_slug = 'slow' and status = 'cancelled'
          and output is null`)) === 1,
    );
    const status = await run.status();
    assert.equal(status?.status, 'cancelled');
    assert.ok(status?.cancelledAt);
    assert.deepEqual(
      status?.steps.map((s) => [s.stepSlug, s.status]),
      [['slow', 'cancelled'], ['side', 'cancelled'], ['after', 'cancelled']],
    );
    assert.equal(
      await count(db.sql`select count(*) as n from switchyard.step_tasks
        where run_id = ${run.runId} and step_slug = 'after'`),
      0,
      'the successor never started',
    );
    assert.equal(await count(db.sql`select count(*) as n from pgmq.q_cancel_work`), 0);
    assert.equal(await count(db.sql`select count(*) as n from pgmq.q_cancel_idle`), 0);
    assert.deepEqual(executions, ['slow']);
    const events = names(await collect(run.events()));
    // One statement cancels the open steps (in no set order), then the run.
    assert.deepEqual(events.slice(-4, -1).sort(), [
      'after cancelled',
      'side cancelled',
      'slow cancelled',
    ]);
    assert.equal(events.at(-1), 'run cancelled');
    assert.ok(!events.includes('after started'));

    // Again: nothing changes and the first reason stays. A finished run is refused.
    assert.deepEqual(await run.cancel('second thoughts'), { runId: run.runId, changed: false });
    assert.equal((await run.status())?.error, 'cancelled: the customer withdrew');
    const done = await client.start('cancellable', { n: 2 });
    await client.cancel(done.runId, 'tidy up');
    await assert.rejects(client.cancel(crypto.randomUUID(), 'x'), (e: unknown) => {
      assert.ok(e instanceof OperationError);
      assert.equal(e.code, '22023');
      assert.equal(e.detail.rule, 'run_unknown');
      return true;
    });
    await assert.rejects(client.cancel(done.runId, '  '), (e: unknown) => {
      assert.ok(e instanceof OperationError);
      assert.equal(e.detail.rule, 'reason_missing');
      return true;
    });
    await assert.rejects(client.retry(done.runId), (e: unknown) => {
      assert.ok(e instanceof OperationError);
      assert.equal(e.code, '55000');
      assert.deepEqual(
        { rule: e.detail.rule, status: e.detail.status },
        { rule: 'run_not_failed', status: 'cancelled' },
      );
      return true;
    });
  } finally {
    release.open();
    await client.close();
    await worker.stop();
  }
});

Deno.test('a cancelled run whose worker died mid-task: stall recovery cancels the task, nothing is visible again', async () => {
  const manual = await manualFlow('deadCancelV1', 'deadCancel', 'client_dead_cancel');
  const registry = [defineDeployedFlow(manual.flow, { alias: 'deadCancel' })] as const;
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('deadCancel', { n: 1 });
    await manual.claim(run.runId);
    assert.equal((await client.cancel(run.runId, 'user left')).changed, true);
    // The worker that held the task dies: its row says it stopped without answering.
    await db.sql`update switchyard.workers set stopped_at = now()
      where queue_name = 'client_dead_cancel'`;
    const [{ n }] = await db.sql<{ n: number }[]>`
      select switchyard.recover_stalled('client_dead_cancel') as n`;
    assert.equal(n, 1, 'the stalled task was handled');
    const [task] = await db.sql<{ status: string; visible: number; archived: number }[]>`
      select t.status,
             (select count(*)::int from pgmq.q_client_dead_cancel q where q.msg_id = t.message_id)
               as visible,
             (select count(*)::int from pgmq.a_client_dead_cancel a where a.msg_id = t.message_id)
               as archived
        from switchyard.step_tasks t where t.run_id = ${run.runId}::uuid`;
    assert.deepEqual(task, { status: 'cancelled', visible: 0, archived: 1 });
    assert.equal((await run.status())?.status, 'cancelled');
  } finally {
    await client.close();
  }
});

Deno.test('prune removes a cancelled run with its events once it is old enough', async () => {
  const manual = await manualFlow('pruneCancelV1', 'pruneCancel', 'client_prune_cancel');
  const registry = [defineDeployedFlow(manual.flow, { alias: 'pruneCancel' })] as const;
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('pruneCancel', { n: 1 });
    await client.cancel(run.runId, 'not needed');
    const events = () =>
      count(db.sql`select count(*) as n from switchyard.run_events where run_id = ${run.runId}`);
    assert.ok(await events() >= 3, 'started, step started, cancelled (and the step cancelled)');
    const [fresh] = await db.sql<{ runs: string }[]>`select (switchyard.prune('1 hour')).runs`;
    assert.equal(Number(fresh.runs), 0, 'a run cancelled just now is kept');
    await db.sql`update switchyard.runs set started_at = now() - interval '3 hours',
      cancelled_at = now() - interval '2 hours' where run_id = ${run.runId}`;
    const [old] = await db.sql<{ runs: string }[]>`select (switchyard.prune('1 hour')).runs`;
    assert.equal(Number(old.runs), 1);
    assert.equal(await run.status(), null);
    assert.equal(await events(), 0, 'its events went with it');
  } finally {
    await client.close();
  }
});

Deno.test('cancels racing claims and completions: no deadlock, nothing of a cancelled run left visible', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'cancelRaceV1' })
    .step({ slug: 'a' }, (input) => input.n)
    .step({ slug: 'b' }, (input) => input.n)
    .step({ slug: 'c', dependsOn: ['a', 'b'] }, (input) => input.a + input.b);
  const registry = [defineDeployedFlow(flow, { alias: 'cancelRace' })] as const;
  const options = {
    connectionString: db.url,
    queueName: 'cancelracev1',
    maxConcurrent: 8,
    ...FAST,
  };
  const workers = [await startWorker(registry, options), await startWorker(registry, options)];
  const client = createClient(registry, { connectionString: db.url, max: 8 });
  try {
    const outcomes: { runId: string; cancelled: boolean }[] = [];
    for (let round = 0; round < RACE_ROUNDS; round++) {
      outcomes.push(
        ...await Promise.all(Array.from({ length: 40 }, async (_, n) => {
          const run = await client.start('cancelRace', { n });
          try {
            await client.cancel(run.runId, `race ${n}`);
            return { runId: run.runId, cancelled: true };
          } catch (e) {
            // Only a run that completed first may refuse; a deadlock would land here too.
            assert.ok(
              e instanceof OperationError && e.detail.rule === 'run_not_started',
              `${e} ${(e as { detail?: string }).detail} ${(e as { where?: string }).where}`,
            );
            return { runId: run.runId, cancelled: false };
          }
        })),
      );
    }
    const cancelled = outcomes.filter((o) => o.cancelled).map((o) => o.runId);
    assert.ok(cancelled.length > 0);
    await waitFor(
      'no started task of a cancelled run',
      async () =>
        (await count(db.sql`select count(*) as n from switchyard.step_tasks
        where run_id = any(${pgArray(cancelled)}::uuid[]) and status = 'started'`)) === 0,
    );
    const [left] = await db.sql<{ visible: number; statuses: string[] }[]>`
      select (select count(*)::int from pgmq.q_cancelracev1 q
                join switchyard.step_tasks t
                  on t.queue_name = 'cancelracev1' and t.message_id = q.msg_id
               where t.run_id = any(${pgArray(cancelled)}::uuid[])) as visible,
             (select coalesce(array_agg(distinct t.status order by t.status), '{}')
                from switchyard.step_tasks t
               where t.run_id = any(${pgArray(cancelled)}::uuid[])) as statuses`;
    assert.equal(left.visible, 0, 'no message of a cancelled run is left in its queue');
    assert.ok(
      left.statuses.every((st) => st === 'completed' || st === 'cancelled'),
      left.statuses.join(', '),
    );
    // Events are numbered in commit order per run: no step started after its run's cancel.
    assert.equal(
      await count(db.sql`select count(*) as n from switchyard.run_events s
        join switchyard.run_events c
          on c.run_id = s.run_id and c.step_slug is null and c.event = 'cancelled'
       where s.run_id = any(${pgArray(cancelled)}::uuid[]) and s.step_slug is not null
         and s.event = 'started' and s.event_id > c.event_id`),
      0,
      'no step of a cancelled run started after the cancel',
    );
  } finally {
    await client.close();
    await Promise.all(workers.map((w) => w.stop()));
  }
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

// ---------------------------------------------------------------------------
// Retry

Deno.test('retry of a failed run: failed and lost steps queued again, completed steps not re-run', async () => {
  let failing = true;
  const attempts: Record<string, number[]> = { first: [], flaky: [], other: [] };
  const flow = new Flow<{ n: number }>({ slug: 'retryV1', maxAttempts: 2, baseDelay: 0 })
    .step({ slug: 'first' }, (input, ctx) => {
      attempts.first.push(ctx.attempt);
      return input.n;
    })
    .step({ slug: 'flaky', dependsOn: ['first'] }, (input, ctx) => {
      attempts.flaky.push(ctx.attempt);
      if (failing) throw new Error(`flaky attempt ${ctx.attempt}`);
      return input.first * 10;
    })
    .step({ slug: 'other' }, (_input, ctx) => {
      attempts.other.push(ctx.attempt);
      return 'other';
    });
  const registry = [
    defineDeployedFlow(
      routeFlow(flow, {
        queues: { first: 'retry_work', flaky: 'retry_work', other: 'retry_late' },
      }),
      { alias: 'retryable' },
    ),
  ] as const;
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'retry_work',
    ...FAST,
  });
  let late: Worker | undefined;
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('retryable', { n: 4 });
    const failure = await run.output({ timeoutMs: 30_000 }).then(
      () => assert.fail('the run was to fail'),
      (e) => e,
    );
    assert.ok(failure instanceof RunFailedError);
    assert.equal(failure.status, 'failed');
    assert.match(
      String(failure.error),
      /step flaky failed after 2 attempt\(s\): .*flaky attempt 2/,
    );
    // `other` (no worker on its queue yet) lost its message with the failure.
    assert.equal(await count(db.sql`select count(*) as n from pgmq.q_retry_late`), 0);

    failing = false;
    assert.deepEqual(await client.retry(run.runId), { runId: run.runId, requeued: 2 });
    late = await startWorker(registry, {
      connectionString: db.url,
      queueName: 'retry_late',
      ...FAST,
    });
    assert.deepEqual(await run.output({ timeoutMs: 30_000 }), { flaky: 40, other: 'other' });
    assert.deepEqual(attempts, { first: [1], flaky: [1, 2, 3], other: [1] });
    const [task] = await db.sql<{ attempts_count: number; max_attempts: number }[]>`
      select attempts_count, max_attempts from switchyard.step_tasks
       where run_id = ${run.runId} and step_slug = 'flaky'`;
    assert.deepEqual({ ...task }, { attempts_count: 3, max_attempts: 4 }, 'a fresh budget of 2');
    // events() ends at the run's end: after a retry, the run's whole log is in the table.
    const events = names(await runEvents(client, run.runId));
    const tail = events.slice(events.indexOf('run failed'));
    assert.deepEqual(tail.slice(0, 3), ['run failed', 'run retried', 'flaky started']);
    // The two queues finish in either order; `other` stayed started (its task was lost).
    assert.deepEqual(tail.slice(3, 5).sort(), ['flaky completed', 'other completed']);
    assert.deepEqual(tail.slice(5), ['run completed']);
    assert.equal(events.filter((e) => e === 'first completed').length, 1);
    await assert.rejects(client.retry(run.runId), /only a failed run can be retried/);
    assert.equal(await count(db.sql`select count(*) as n from pgmq.q_retry_work`), 0);
  } finally {
    await client.close();
    await worker.stop();
    await late?.stop();
  }
});

Deno.test('retry of a run failed by a step without a task decides that step again', async () => {
  // A condition with whenUnmet 'fail' fails the run in SQL, before any task exists.
  const flow = new Flow<{ plan: 'free' | 'pro' }>({ slug: 'retryGateV2' })
    .step({ slug: 'gate', if: { plan: 'pro' }, whenUnmet: 'fail' }, () => 'pro');
  const registry = [defineDeployedFlow(flow, { alias: 'retryGate' })] as const;
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'retrygatev2',
    ...FAST,
  });
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('retryGate', { plan: 'free' });
    const first = await run.output({ timeoutMs: 30_000 }).then(() => null, (e) => e);
    assert.ok(first instanceof RunFailedError, String(first));
    assert.equal(
      await count(db.sql`select count(*) as n from switchyard.step_tasks
      where run_id = ${run.runId}`),
      0,
      'the step failed without a task',
    );
    // The input still does not meet the condition: the retry decides the step again and the
    // run fails again, with the same error and nothing queued.
    assert.deepEqual(await client.retry(run.runId), { runId: run.runId, requeued: 0 });
    const again = await run.output({ timeoutMs: 30_000 }).then(() => null, (e) => e);
    assert.ok(again instanceof RunFailedError, String(again));
    assert.equal(again.error, first.error);
    const events = names(await runEvents(client, run.runId));
    assert.deepEqual(events, [
      'run started',
      'gate started',
      'gate failed',
      'run failed',
      'run retried',
      'gate started',
      'gate failed',
      'run failed',
    ]);
    assert.equal(await count(db.sql`select count(*) as n from pgmq.q_retrygatev2`), 0);
  } finally {
    await client.close();
    await worker.stop();
  }
});

Deno.test('retry of a failed map step re-runs its unfinished elements; skipped steps have events', async () => {
  let failing = true;
  const runs: number[] = [];
  const flow = new Flow<{ plan: 'free' | 'pro'; items: number[] }>({
    slug: 'mapRetryV1',
    maxAttempts: 1,
  })
    .step({ slug: 'upsell', if: { plan: 'pro' } }, () => 'offer')
    .step({ slug: 'items' }, (input) => input.items)
    .map({ slug: 'work', array: 'items' }, (n) => {
      runs.push(n);
      if (n === 2 && failing) throw new Error('element 2 is broken');
      return n * 10;
    });
  const registry = [defineDeployedFlow(flow, { alias: 'mapRetry' })] as const;
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'mapretryv1',
    ...FAST,
  });
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('mapRetry', { plan: 'free', items: [1, 2, 3] });
    await assert.rejects(run.output(), /step work failed after 1 attempt\(s\)/);
    failing = false;
    const { requeued } = await client.retry(run.runId);
    assert.ok(requeued >= 1 && requeued <= 3, `${requeued} element(s) queued again`);
    const output = await run.output({ timeoutMs: 30_000 });
    // The skipped upsell is absent from the output; the map's elements are in order.
    assert.deepEqual(output, { work: [10, 20, 30] });
    assert.equal(runs.filter((n) => n === 2).length, 2, 'the failed element ran again');
    const events = names(await runEvents(client, run.runId));
    assert.ok(events.includes('upsell skipped'), events.join(', '));
    assert.deepEqual(events.slice(events.indexOf('run failed')), [
      'run failed',
      'run retried',
      'work started',
      'work completed',
      'run completed',
    ]);
  } finally {
    await client.close();
    await worker.stop();
  }
});

// ---------------------------------------------------------------------------
// Idempotent starts, owners

Deno.test('idempotent start through the client: one run per id; another input or owner is refused', async () => {
  const client = createClient(chainRegistry, { connectionString: db.url });
  try {
    const runId = crypto.randomUUID();
    const owner = crypto.randomUUID();
    const first = await client.start('chain', { text: 'once' }, { runId, owner });
    const again = await client.start('chain', { text: 'once' }, { runId, owner });
    assert.equal(first.runId, runId);
    assert.equal(again.runId, runId);
    assert.equal(
      await count(db.sql`select count(*) as n from switchyard.runs where run_id = ${runId}`),
      1,
    );
    assert.equal(
      await count(db.sql`select count(*) as n from switchyard.run_events where run_id = ${runId}
        and step_slug is null`),
      1,
      'the repeated start wrote no event',
    );
    assert.equal((await again.status())?.owner, owner);
    const refused = async (input: { text: string }, o: string | undefined, rule: string) =>
      await assert.rejects(client.start('chain', input, { runId, owner: o }), (e: unknown) => {
        assert.ok(e instanceof OperationError);
        assert.equal(e.code, '23505');
        assert.equal(e.detail.rule, rule);
        return true;
      });
    await refused({ text: 'other' }, owner, 'run_id_other_input');
    await refused({ text: 'once' }, crypto.randomUUID(), 'run_id_other_owner');
    await refused({ text: 'once' }, undefined, 'run_id_other_owner');
    await assert.rejects(
      client.start('chain', { text: 'x' }, { runId: 'request-7' }),
      /runId "request-7" is invalid: use a UUID/,
    );
    await assert.rejects(
      client.start('chain', { text: 'x' }, { owner: 'alice' }),
      /owner "alice" is invalid: use a UUID/,
    );
    await client.cancel(runId, 'test over');
  } finally {
    await client.close();
  }
});

// ---------------------------------------------------------------------------
// Operator commands

function task(name: string, args: string[]) {
  return deno(['task', '-q', name, ...args], {
    cwd: ROOT,
    clearEnv: true,
    env: { ...envWithout('SUPABASE_DB_URL'), NO_COLOR: '1', DATABASE_URL: db.url },
  });
}

Deno.test('deno task cancel and deno task retry', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'cliV1', maxAttempts: 1 })
    .step({ slug: 'a' }, (input) => {
      if (input.n < 0) throw new Error('negative');
      return input.n;
    });
  const registry = [defineDeployedFlow(flow, { alias: 'cli' })] as const;
  const client = createClient(registry, { connectionString: db.url });
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'cliv1',
    ...FAST,
  });
  try {
    await worker.stop(); // compiled; the runs below wait
    const waiting = await client.start('cli', { n: 1 });
    const cancelled = await task('cancel', [waiting.runId, '--reason', 'duplicate request']);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(cancelled.stdout.trim(), `cancelled run ${waiting.runId}: duplicate request`);
    assert.equal((await waiting.status())?.error, 'cancelled: duplicate request');
    const again = await task('cancel', [waiting.runId]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /was already cancelled/);

    const notFailed = await task('retry', [waiting.runId]);
    assert.equal(notFailed.code, 1);
    assert.match(notFailed.stderr, /^error: retry_run: run \S+ is cancelled; only a failed run/);
    const usage = await task('cancel', []);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^error: missing <run>: name the run id to cancel/);
    const bad = await task('retry', ['not-a-uuid']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /runId "not-a-uuid" is invalid/);

    const doomed = await client.start('cli', { n: -1 });
    const w2 = await startWorker(registry, {
      connectionString: db.url,
      queueName: 'cliv1',
      ...FAST,
    });
    try {
      await assert.rejects(doomed.output(), RunFailedError);
      const retried = await task('retry', [doomed.runId]);
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(retried.stdout.trim(), `retried run ${doomed.runId}: 1 task(s) queued again`);
      await assert.rejects(doomed.output(), /failed after 2 attempt\(s\): Error: negative/);
    } finally {
      await w2.stop();
    }
  } finally {
    await client.close();
    await worker.stop();
  }
});

// ---------------------------------------------------------------------------
// The client guide, as written

// The section's app runs as written in an installed project: tests/e2e/_readme.ts.

Deno.test("the client guide: the Deno example's catch prints a failed or cancelled run's reason once", () => {
  const section = sectionText('docs/guide/client.md', '## From Deno');
  const block = section.match(/\} catch \(e\) \{\n([\s\S]*?)\n\}/)?.[1];
  assert.ok(block, 'the example has a catch block');
  // The block as written, with `e` given and console.error captured.
  const printed: string[] = [];
  const run = new Function('e', 'RunFailedError', 'console', block);
  const runId = '00000000-0000-4000-8000-000000000001';
  for (
    const [e, once] of [
      [new RunFailedError(runId, 'cancelled', 'cancelled: changed my mind'), 'changed my mind'],
      [new RunFailedError(runId, 'failed', 'step a failed after 3 attempt(s): boom'), 'boom'],
    ] as const
  ) {
    run(e, RunFailedError, { error: (...args: unknown[]) => printed.push(args.join(' ')) });
    const line = printed.at(-1) ?? '';
    assert.equal(line.split(once).length, 2, `"${once}" once in: ${line}`);
    assert.ok(!/cancelled: cancelled/.test(line), line);
    assert.ok(line.includes(e.status), line);
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
