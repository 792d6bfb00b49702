/**
 * Explicit shared queues with multi-flow dispatch (issue 4): routing, aliases,
 * the claim classification, the pause flag, coverage, drain and adoption —
 * against real PostgreSQL with real workers.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import {
  CoverageError,
  FunctionPausedError,
  InvalidQueueNameError,
  RouteError,
  UnsupportedWorkError,
  WorkerConfigError,
} from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker, withStepQueues } from '../../lib/mod.ts';
import { drainStatus, pauseFunction, resumeFunction } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const base = { connectionString: db.url, ...FAST };

type Row = Record<string, unknown>;
const one = async (q: Promise<Row[]>) => (await q)[0];
const count = async (q: Promise<Row[]>) => Number((await q)[0].n);

/** A two-step thread flow of one version, routed onto two shared queues. */
function threads(slug: string, classifyQueue: string, deliverQueue: string, tag: string) {
  const flow = new Flow<{ text: string }>({ slug, maxAttempts: 3, baseDelay: 1 })
    .step({ slug: 'classify' }, (input) => ({ label: `${tag}:${input.text}` }))
    .step(
      { slug: 'deliver', dependsOn: ['classify'] },
      (input) => ({ sent: input.classify.label }),
    );
  return routeFlow(flow, { queues: { classify: classifyQueue, deliver: deliverQueue } });
}

async function compile(...targets: Parameters<typeof toPlacement>[0][]) {
  for (const t of targets) {
    await db.sql`select switchyard.ensure_flow(${
      db.sql.json(toPlacement(t).shape as never)
    }::jsonb)`;
  }
}

Deno.test('grouped steps: several steps of one flow share one queue', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'grouped' })
    .step({ slug: 'fetch' }, (i) => i.n)
    .step({ slug: 'enrich', dependsOn: ['fetch'] }, (i) => i.fetch + 1)
    .step({ slug: 'store', dependsOn: ['enrich'] }, (i) => i.enrich * 10);
  const routed = routeFlow(flow, {
    queues: { fetch: 'grouped_io', enrich: 'grouped_cpu', store: 'grouped_io' },
  });
  const io = await startWorker([routed], { ...base, queueName: 'grouped_io' });
  const cpu = await startWorker([routed], { ...base, queueName: 'grouped_cpu' });
  try {
    const runs = await Promise.all([1, 2, 3].map((n) => client.startFlow('grouped', { n })));
    for (const [i, id] of runs.entries()) {
      const s = await client.waitForRun(id);
      assert.equal(s.status, 'completed');
      assert.deepEqual(s.output, { store: (i + 2) * 10 });
    }
    const placed = await db.sql`select step_slug, queue_name from switchyard.step_tasks
      where flow_slug = 'grouped' group by 1, 2 order by 1`;
    assert.deepEqual(placed.map((r) => [r.step_slug, r.queue_name]), [
      ['enrich', 'grouped_cpu'],
      ['fetch', 'grouped_io'],
      ['store', 'grouped_io'],
    ]);
    const [q] = await db
      .sql`select ownership, owner_flow from switchyard.queues where queue_name = 'grouped_io'`;
    assert.deepEqual({ ...q }, { ownership: 'shared', owner_flow: null });
  } finally {
    await Promise.all([io.stop(), cpu.stop()]);
  }
});

Deno.test('shared flows: two flows on one queue are dispatched by one worker', async () => {
  const a = new Flow<{ x: number }>({ slug: 'sharedA' }).step({ slug: 'go' }, (i) => ({ a: i.x }));
  const b = new Flow<{ y: string }>({ slug: 'sharedB' }).step({ slug: 'go' }, (i) => ({ b: i.y }));
  const registry = [
    routeFlow(a, { queues: { go: 'two_flows' } }),
    routeFlow(b, { queues: { go: 'two_flows' } }),
  ] as const;
  const worker = await startWorker(registry, { ...base, queueName: 'two_flows', maxConcurrent: 4 });
  try {
    const ra = await client.startFlow('sharedA', { x: 1 });
    const rb = await client.startFlow('sharedB', { y: 'z' });
    assert.deepEqual((await client.waitForRun(ra)).output, { go: { a: 1 } });
    assert.deepEqual((await client.waitForRun(rb)).output, { go: { b: 'z' } });
    const [w] = await db.sql`select count(distinct worker_id)::int as n from switchyard.step_tasks
      where flow_slug in ('sharedA', 'sharedB')`;
    assert.equal(w.n, 1, 'one worker ran both flows');
  } finally {
    await worker.stop();
  }
});

Deno.test('shared versions: v1 and v2 of one alias on one queue; runs keep the concrete slug', async () => {
  const v1 = defineDeployedFlow(threads('verThreadsV1', 'ver_classify', 'ver_deliver', 'v1'), {
    alias: 'verThreads',
  });
  const v2 = defineDeployedFlow(threads('verThreadsV2', 'ver_classify', 'ver_deliver', 'v2'), {
    alias: 'verThreads',
  });
  // Only v1 first: the alias starts at v1, and v1 runs are left queued.
  await compile(v1);
  await db.sql`select switchyard.sync_alias('verThreads', array['verThreadsV1'])`;
  const oldRun = await client.startFlow('verThreads', { text: 'old' });
  const registry = [v1, v2] as const;
  const wc = await startWorker(registry, { ...base, queueName: 'ver_classify' });
  const wd = await startWorker(registry, { ...base, queueName: 'ver_deliver' });
  try {
    const [alias] = await db
      .sql`select flow_slug from switchyard.aliases where alias = 'verThreads'`;
    assert.equal(alias.flow_slug, 'verThreadsV2', 'the last listed version became the target');
    const newRun = await client.startFlow('verThreads', { text: 'new' });
    const o = await client.waitForRun(oldRun);
    const n = await client.waitForRun(newRun);
    assert.equal(o.flowSlug, 'verThreadsV1');
    assert.deepEqual(o.output, { deliver: { sent: 'v1:old' } });
    assert.equal(n.flowSlug, 'verThreadsV2');
    assert.equal(n.startedAs, 'verThreads');
    assert.deepEqual(n.output, { deliver: { sent: 'v2:new' } });
    const activations = await db.sql`select flow_slug, previous_flow_slug, source
      from switchyard.alias_activations where alias = 'verThreads' order by activation_id`;
    assert.deepEqual(activations.map((r) => [r.flow_slug, r.previous_flow_slug, r.source]), [
      ['verThreadsV1', null, 'worker'],
      ['verThreadsV2', 'verThreadsV1', 'worker'],
    ]);
  } finally {
    await Promise.all([wc.stop(), wd.stop()]);
  }
});

Deno.test('aliases never move backwards, and a target the registry lacks refuses start-up', async () => {
  const v1 = defineDeployedFlow(threads('backThreadsV1', 'back_q', 'back_q', 'v1'), {
    alias: 'backThreads',
  });
  const v2 = defineDeployedFlow(threads('backThreadsV2', 'back_q', 'back_q', 'v2'), {
    alias: 'backThreads',
  });
  const v3 = defineDeployedFlow(threads('backThreadsV3', 'back_q', 'back_q', 'v3'), {
    alias: 'backThreads',
  });
  const w = await startWorker([v1, v2], { ...base, queueName: 'back_q' });
  await w.stop();
  // An old registry listing only v1 must not move the alias back to v1 — and it lacks v2.
  const refused = await startWorker([v1], { ...base, queueName: 'back_q' }).then(
    () => null,
    (e) => e,
  );
  assert.ok(refused instanceof CoverageError, String(refused));
  assert.deepEqual(refused.missingPairs, ['backThreadsV2/classify', 'backThreadsV2/deliver']);
  assert.match(refused.message, /active target of alias backThreads/);
  const [alias] = await db
    .sql`select flow_slug from switchyard.aliases where alias = 'backThreads'`;
  assert.equal(alias.flow_slug, 'backThreadsV2');

  // An operator moves the alias to v3 (compiled elsewhere): a [v1, v2] worker is not covered.
  await compile(v3);
  await client.activateAlias('backThreads', 'backThreadsV3');
  await assert.rejects(startWorker([v1, v2], { ...base, queueName: 'back_q' }), (e: unknown) => {
    assert.ok(e instanceof CoverageError);
    assert.deepEqual(e.missingPairs, ['backThreadsV3/classify', 'backThreadsV3/deliver']);
    return true;
  });
  const [after] = await db
    .sql`select flow_slug from switchyard.aliases where alias = 'backThreads'`;
  assert.equal(after.flow_slug, 'backThreadsV3', 'a worker never moves an alias it does not own');
  await assert.rejects(
    client.activateAlias('backThreads', 'notCompiled'),
    /flow "notCompiled" is not compiled/,
  );
  const [{ n }] = await db.sql`select count(*)::int as n from switchyard.alias_activations
    where alias = 'backThreads' and source = 'operator'`;
  assert.equal(n, 1);
  const ws = await db.sql`select count(*)::int as n from switchyard.workers
    where queue_name = 'back_q' and stopped_at is null`;
  assert.equal(ws[0].n, 0, 'refused workers never registered');
});

Deno.test('unsupported batch: nothing claimed, no attempt used, batch visible again, function paused once, worker stopped', async () => {
  const v1 = defineDeployedFlow(threads('unsThreadsV1', 'uns_q', 'uns_q', 'v1'), {
    alias: 'unsThreads',
  });
  const v2 = defineDeployedFlow(threads('unsThreadsV2', 'uns_q', 'uns_q', 'v2'), {
    alias: 'unsThreads',
  });
  const old = await startWorker([v1], { ...base, queueName: 'uns_q', functionName: 'uns-old' });
  try {
    // v2 is deployed elsewhere and the alias moves: v2 work reaches a v1-only worker.
    await compile(v2);
    await client.activateAlias('unsThreads', 'unsThreadsV2');
    const run = await client.startFlow('unsThreads', { text: 'x' });
    const err = await within(
      30_000,
      'the v1-only worker to stop on v2 work (worker.done)',
      old.done.then(() => null, (e) => e),
    );
    assert.ok(err instanceof UnsupportedWorkError, String(err));
    assert.equal(err.queueName, 'uns_q');
    assert.deepEqual(err.unsupportedPairs, ['unsThreadsV2/classify']);
    const [task] = await db
      .sql`select status, attempts_count, message_id from switchyard.step_tasks where run_id = ${run}`;
    assert.deepEqual(err.messageIds, [BigInt(task.message_id as string)]);
    assert.equal(task.status, 'queued');
    assert.equal(task.attempts_count, 0, 'no attempt consumed');
    const [msg] = await db
      .sql`select vt <= now() as visible from pgmq.q_uns_q where msg_id = ${task.message_id}`;
    assert.equal(msg.visible, true, 'the message is visible again');
    assert.equal(
      await count(db.sql`select count(*) as n from pgmq.a_uns_q`),
      0,
      'nothing archived',
    );
    const [fn] = await db
      .sql`select paused_at, pause_reason from switchyard.worker_functions where function_name = 'uns-old'`;
    assert.ok(fn.paused_at);
    assert.match(fn.pause_reason as string, /unsupported work on queue uns_q/);
    assert.match(fn.pause_reason as string, /unsThreadsV2\/classify/);
    assert.doesNotMatch(fn.pause_reason as string, /"text"/, 'never the message body');
    const [w] = await db
      .sql`select stopped_at from switchyard.workers where worker_id = ${old.workerId}`;
    assert.ok(w.stopped_at, 'the worker stopped');

    // Paused: the function refuses to start, even with a fixed registry, until resumed.
    await assert.rejects(
      startWorker([v1, v2], { ...base, queueName: 'uns_q', functionName: 'uns-old' }),
      FunctionPausedError,
    );
    // A second refusal does not overwrite the first reason (paused exactly once).
    const [again] = await db
      .sql`select pause_reason from switchyard.worker_functions where function_name = 'uns-old'`;
    assert.equal(again.pause_reason, fn.pause_reason);
    assert.equal((await resumeFunction(client, 'uns-old')).changed, true);
    const fixed = await startWorker([v1, v2], {
      ...base,
      queueName: 'uns_q',
      functionName: 'uns-old',
    });
    try {
      const s = await client.waitForRun(run);
      assert.equal(s.status, 'completed', 'no run lost');
      const [t] = await db
        .sql`select attempts_count from switchyard.step_tasks where run_id = ${run} and step_slug = 'classify'`;
      assert.equal(t.attempts_count, 1);
    } finally {
      await fixed.stop();
    }
  } finally {
    await old.stop();
  }
});

Deno.test('a batch mixing an unsupported message and a still-started duplicate is refused whole; the duplicate keeps its attempt', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const v1flow = new Flow<{ n: number }>({ slug: 'mixV1', timeout: 600 })
    .step({ slug: 'hold' }, async (i) => {
      await gate;
      return i.n;
    });
  const v1 = defineDeployedFlow(routeFlow(v1flow, { queues: { hold: 'mix_q' } }), { alias: 'mix' });
  const v2flow = new Flow<{ n: number }>({ slug: 'mixV2' })
    .step({ slug: 'hold', startDelay: 2 }, (i) => i.n);
  const v2 = defineDeployedFlow(routeFlow(v2flow, { queues: { hold: 'mix_q' } }), { alias: 'mix' });
  const healthy = await startWorker([v1], { ...base, queueName: 'mix_q', functionName: 'mix-a' });
  try {
    const r1 = await client.startFlow('mix', { n: 1 });
    await waitFor(
      'v1 task started',
      async () =>
        (await one(db.sql`select status from switchyard.step_tasks where run_id = ${r1}`))
          ?.status === 'started',
    );
    const [t1] = await db.sql`select message_id from switchyard.step_tasks where run_id = ${r1}`;
    // Make the started task's message visible again: a benign duplicate for any reader.
    await db.sql`select pgmq.set_vt('mix_q', ${t1.message_id}::bigint, 0)`;
    // Healthy workers keep running through benign duplicates.
    const other = await startWorker([v1], { ...base, queueName: 'mix_q', functionName: 'mix-b' });
    await waitFor(
      'the duplicate to be read',
      async () =>
        Number(
          (await one(db.sql`select read_ct from pgmq.q_mix_q where msg_id = ${t1.message_id}`))
            .read_ct,
        ) >= 2,
    );
    const [fb] = await db
      .sql`select paused_at from switchyard.worker_functions where function_name = 'mix-b'`;
    assert.equal(fb.paused_at, null, 'a duplicate alone pauses nothing');
    await other.stop();

    // Now one batch holds the duplicate and a v2 message: a v1-only worker is
    // running when v2 work appears (start-up coverage cannot see it coming).
    const probe = await startWorker([v1], {
      ...base,
      queueName: 'mix_q',
      functionName: 'mix-c',
      batchSize: 10,
    });
    await compile(v2);
    await client.activateAlias('mix', 'mixV2');
    const r2 = await client.startFlow('mix', { n: 2 });
    // Both messages become visible at the same instant (v2's step has a start delay).
    await db.sql`update pgmq.q_mix_q set vt = (select t.vt from pgmq.q_mix_q t
      join switchyard.step_tasks s on s.message_id = t.msg_id and s.run_id = ${r2})
      where msg_id = ${t1.message_id}`;
    const err = await within(
      30_000,
      'the probe worker to stop on the mixed batch (worker.done)',
      probe.done.then(() => null, (e) => e),
    );
    assert.ok(err instanceof UnsupportedWorkError);
    assert.deepEqual(err.unsupportedPairs, ['mixV2/hold']);
    assert.equal(err.messageIds.length, 1, 'only the unsupported message is reported');
    const tasks = await db.sql`select run_id, status, attempts_count from switchyard.step_tasks
      where run_id in (${r1}, ${r2}) order by run_id = ${r1} desc`;
    assert.deepEqual(tasks.map((t) => [t.status, t.attempts_count]), [['started', 1], [
      'queued',
      0,
    ]]);
    release();
    assert.equal(
      (await client.waitForRun(r1)).status,
      'completed',
      'the healthy worker finished its task',
    );
  } finally {
    release();
    await healthy.stop();
  }
});

Deno.test('version drain: old handlers are required while v1 work remains, drained afterwards', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const f1 = new Flow<{ n: number }>({ slug: 'drainV1' })
    .step({ slug: 'first' }, (i) => i.n)
    .step({ slug: 'second', dependsOn: ['first'] }, async (i) => {
      await gate;
      return i.first;
    });
  const f2 = new Flow<{ n: number }>({ slug: 'drainV2' })
    .step({ slug: 'first' }, (i) => i.n)
    .step({ slug: 'second', dependsOn: ['first'] }, (i) => i.first);
  const q = { first: 'drain_a', second: 'drain_b' } as const;
  const v1 = defineDeployedFlow(routeFlow(f1, { queues: q }), { alias: 'drainer' });
  const v2 = defineDeployedFlow(routeFlow(f2, { queues: q }), { alias: 'drainer' });
  const wa = await startWorker([v1], { ...base, queueName: 'drain_a' });
  const wb = await startWorker([v1], { ...base, queueName: 'drain_b' });
  const run = await client.startFlow('drainer', { n: 5 });
  await waitFor(
    'v1 second step started',
    async () =>
      (await one(
        db.sql`select status from switchyard.step_tasks where run_id = ${run} and step_slug = 'second'`,
      ))
        ?.status === 'started',
  );
  await wa.stop();
  // Roll forward on drain_a: v2 becomes the target; v1 is still draining on drain_b.
  const wa2 = await startWorker([v1, v2], { ...base, queueName: 'drain_a' });
  const states = await drainStatus(client);
  const state = (queue: string, flow: string) =>
    states.find((s) => s.queueName === queue && s.flowSlug === flow)?.state;
  assert.equal(state('drain_a', 'drainV2'), 'active');
  assert.equal(state('drain_b', 'drainV2'), 'active');
  assert.equal(state('drain_a', 'drainV1'), 'drained', 'no v1 run can reach drain_a any more');
  assert.equal(state('drain_b', 'drainV1'), 'draining');
  const row = states.find((s) => s.queueName === 'drain_b' && s.flowSlug === 'drainV1')!;
  assert.equal(row.startedRuns, 1);
  assert.equal(row.startedTasks, 1);
  // A drain_b worker without v1 handlers is refused while v1 work remains.
  await assert.rejects(
    startWorker([v2], { ...base, queueName: 'drain_b', functionName: 'drain-b-new' }),
    (e: unknown) => {
      assert.ok(e instanceof CoverageError);
      assert.deepEqual(e.missingPairs, ['drainV1/second']);
      assert.match(e.message, /started run may reach the queue/);
      return true;
    },
  );
  release();
  assert.equal((await client.waitForRun(run)).status, 'completed');
  await wb.stop();
  const after = await drainStatus(client, 'drain_b');
  assert.equal(after.find((s) => s.flowSlug === 'drainV1')?.state, 'drained');
  // Drained: v1 handlers may leave the registry.
  const wb2 = await startWorker([v2], {
    ...base,
    queueName: 'drain_b',
    functionName: 'drain-b-new',
  });
  const r2 = await client.startFlow('drainer', { n: 7 });
  assert.deepEqual((await client.waitForRun(r2)).output, { second: 7 });
  await Promise.all([wa2.stop(), wb2.stop()]);
});

Deno.test('collisions: case, generated names, private vs shared, owners, re-routing', async () => {
  const flow = new Flow({ slug: 'collide' }).step({ slug: 'one' }, () => 1).step(
    { slug: 'two' },
    () => 2,
  );
  // Runtime checks (the type checks live in tests/unit/worker/worker_types_test.ts).
  assert.throws(
    () => routeFlow(flow, { queues: { one: 'Shared_Q' as 'shared_q', two: 'shared_q' } }),
    InvalidQueueNameError,
  );
  assert.throws(
    () => routeFlow(flow, { queues: { one: 'collide__one' as 'x', two: 'x' } }),
    /must not contain "__"/,
  );
  assert.throws(() => routeFlow(flow, { queues: { one: 'q' } } as never), RouteError);
  assert.throws(
    () => routeFlow(flow, { queues: { one: 'q', two: 'q', three: 'q' } } as never),
    RouteError,
  );

  // SQL re-validates: a shape with a bad explicit name never creates anything.
  const shape = (queues: Record<string, string>) => ({
    ...toPlacement(routeFlow(flow, { queues: { one: 'coll_a', two: 'coll_b' } })).shape,
    steps: toPlacement(routeFlow(flow, { queues: { one: 'coll_a', two: 'coll_b' } })).shape.steps
      .map((s) => ({
        ...s,
        queue: queues[s.slug],
      })),
  });
  await assert.rejects(
    db.sql`select switchyard.ensure_flow(${
      db.sql.json(shape({ one: 'Coll_A', two: 'coll_b' }) as never)
    }::jsonb)`,
    /queue name "Coll_A" is invalid/,
  );
  await assert.rejects(
    db.sql`select switchyard.ensure_flow(${
      db.sql.json(shape({ one: 'collide__one', two: 'coll_b' }) as never)
    }::jsonb)`,
    /must not contain "__"/,
  );
  assert.equal(
    await count(db.sql`select count(*) as n from switchyard.flows where flow_slug = 'collide'`),
    0,
  );
  assert.equal(
    await count(db.sql`select count(*) as n from pgmq.meta where queue_name ilike 'coll%'`),
    0,
  );

  // An existing PGMQ queue of another spelling is one queue: never adopted implicitly.
  await db.sql`select pgmq.create('Coll_Pre')`;
  await assert.rejects(
    startWorker([routeFlow(flow, { queues: { one: 'coll_pre', two: 'coll_b' } })], {
      ...base,
      queueName: 'coll_b',
    }),
    /already exists in PGMQ \(as Coll_Pre\) but is not in the switchyard registry/,
  );

  // A private queue can never be claimed as shared, and vice versa.
  const plain = new Flow({ slug: 'privq' }).step({ slug: 's' }, () => 1);
  const pw = await startWorker(plain, base);
  await pw.stop();
  const thief = new Flow({ slug: 'thief' }).step({ slug: 's' }, () => 1);
  await assert.rejects(
    startWorker([routeFlow(thief, { queues: { s: 'privq' } })], { ...base, queueName: 'privq' }),
    /queue "privq" is the private queue of flow "privq"; it cannot be used as a shared queue/,
  );
  const sharedOwner = new Flow({ slug: 'owner1' }).step({ slug: 's' }, () => 1);
  const so = await startWorker([routeFlow(sharedOwner, { queues: { s: 'owned_shared' } })], {
    ...base,
    queueName: 'owned_shared',
  });
  await so.stop();
  await assert.rejects(
    db.sql`select switchyard._ensure_private_queue('owned_shared', 'owner1')`,
    /queue "owned_shared" is shared; flow "owner1" cannot use it as its private queue/,
  );
  // Two flows can never own one private queue.
  await assert.rejects(
    db.sql`select switchyard._ensure_private_queue('privq', 'otherFlow')`,
    /queue "privq" is the private queue of flow "privq"; flow "otherFlow" cannot own it too/,
  );
  // Slugs are unique case-insensitively.
  await assert.rejects(
    startWorker(new Flow({ slug: 'PrivQ' }).step({ slug: 's' }, () => 1), base),
    /collides with compiled flow "privq"/,
  );

  // Re-routing an existing concrete slug is a mismatch, not a recompile.
  const r1 = routeFlow(flow, { queues: { one: 'coll_x', two: 'coll_x' } });
  const w1 = await startWorker([r1], { ...base, queueName: 'coll_x' });
  await w1.stop();
  const r2 = routeFlow(flow, { queues: { one: 'coll_x', two: 'coll_y' } });
  await assert.rejects(
    startWorker([r2], { ...base, queueName: 'coll_y' }),
    /flow "collide" is already compiled with a different shape \(step "two" queue "coll_x" -> "coll_y"\)/,
  );
  const [steps] = await db
    .sql`select string_agg(queue_name, ',' order by step_index) as q from switchyard.steps where flow_slug = 'collide'`;
  assert.equal(steps.q, 'coll_x,coll_x', 'the compiled routing is unchanged');
});

Deno.test('startup validation: duplicates, selectors, unknown queues, paused functions', async () => {
  const f = new Flow({ slug: 'selectors' }).step({ slug: 'a' }, () => 1).step(
    { slug: 'b' },
    () => 2,
  );
  const routed = routeFlow(f, { queues: { a: 'sel_a', b: 'sel_b' } });
  await assert.rejects(
    startWorker([routed, routed], { ...base, queueName: 'sel_a' }),
    /more than once/,
  );
  await assert.rejects(
    startWorker([routed], { ...base, queueName: 'sel_c' as 'sel_a' }),
    /queueName "sel_c" is unknown/,
  );
  await assert.rejects(startWorker([routed], { ...base } as never), WorkerConfigError);
  await assert.rejects(
    startWorker(f, { ...base, queueName: 'x' } as never),
    /plain flow's worker takes no queueName/,
  );
  await assert.rejects(startWorker(withStepQueues(f), { ...base } as never), /needs stepSlug/);
  await assert.rejects(
    startWorker(withStepQueues(f), { ...base, stepSlug: 'zz' as 'a' }),
    /stepSlug "zz" is not a step/,
  );
  await assert.rejects(
    startWorker([routed], { ...base, queueName: 'sel_a', maxConcurrent: 0 }),
    /maxConcurrent 0 is invalid/,
  );
  // A function paused by an operator refuses to start and compiles nothing. (Registered as the
  // scaffold's migration does: the shared queue first.)
  await db.sql`select switchyard.ensure_shared_queue('sel_a')`;
  await db.sql`select switchyard.register_function('sel-a-worker', 'sel_a')`;
  await pauseFunction(client, 'sel-a-worker', 'maintenance window');
  await assert.rejects(startWorker([routed], { ...base, queueName: 'sel_a' }), (e: unknown) => {
    assert.ok(e instanceof FunctionPausedError);
    assert.equal(e.reason, 'maintenance window');
    return true;
  });
  assert.equal(
    await count(db.sql`select count(*) as n from switchyard.flows where flow_slug = 'selectors'`),
    0,
  );
});

Deno.test('adoption: empty queue, fully tracked queue, queue with a foreign message refused', async () => {
  await db.sql`select pgmq.create('Adopt_Empty')`;
  assert.equal((await one(db.sql`select switchyard.adopt_queue('Adopt_Empty') as r`)).r, 'adopted');
  const [q] = await db
    .sql`select pgmq_name, ownership, adopted_at is not null as adopted from switchyard.queues where queue_name = 'adopt_empty'`;
  assert.deepEqual({ ...q }, { pgmq_name: 'Adopt_Empty', ownership: 'shared', adopted: true });
  assert.equal(
    (await one(db.sql`select switchyard.adopt_queue('adopt_empty') as r`)).r,
    'already registered',
  );
  // Now routed flows may use it, and work through it.
  const f = new Flow({ slug: 'adopter' }).step({ slug: 's' }, () => 'ok');
  const w = await startWorker([routeFlow(f, { queues: { s: 'adopt_empty' } })], {
    ...base,
    queueName: 'adopt_empty',
  });
  try {
    assert.equal(
      (await client.waitForRun(await client.startFlow('adopter', {}))).status,
      'completed',
    );
  } finally {
    await w.stop();
  }

  await db.sql`select pgmq.create('adopt_foreign')`;
  const [m] = await db.sql`select * from pgmq.send('adopt_foreign', '{"hello": "world"}'::jsonb)`;
  await assert.rejects(
    db.sql`select switchyard.adopt_queue('adopt_foreign')`,
    new RegExp(`1 message\\(s\\) do not belong to any tracked task \\(message ids ${m.send}\\)`),
  );
  assert.equal(
    await count(
      db.sql`select count(*) as n from switchyard.queues where queue_name = 'adopt_foreign'`,
    ),
    0,
  );
  await assert.rejects(
    db.sql`select switchyard.adopt_queue('nope_nothing')`,
    /PGMQ has no such queue/,
  );
  await assert.rejects(
    db.sql`select switchyard.adopt_queue('Bad-Name')`,
    /queue name "bad-name" is invalid/,
  );

  // Fully tracked: the registry row was lost (e.g. a partial restore) while tracked tasks remain.
  const g = new Flow({ slug: 'tracked' }).step({ slug: 's' }, () => 1);
  const placed = routeFlow(g, { queues: { s: 'adopt_tracked' } });
  await compile(placed);
  await client.startFlow('tracked', {});
  await client.startFlow('tracked', {});
  await db.sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`;
    await tx`delete from switchyard.queues where queue_name = 'adopt_tracked'`;
  });
  assert.equal(
    (await one(db.sql`select switchyard.adopt_queue('adopt_tracked') as r`)).r,
    'adopted',
  );
  assert.equal(
    await count(db.sql`select count(*) as n from pgmq.q_adopt_tracked`),
    2,
    'messages kept',
  );
});

Deno.test('backward compatibility: plain flows and withStepQueues keep their worker contracts', async () => {
  const flow = new Flow<{ s: string }>({ slug: 'compatFlow' })
    .step({ slug: 'upper' }, (i) => i.s.toUpperCase())
    .step({ slug: 'exclaim', dependsOn: ['upper'] }, (i) => `${i.upper}!`);
  const plain = await startWorker(flow, base);
  try {
    const run = await client.startFlow('compatFlow', { s: 'hi' });
    assert.deepEqual((await client.waitForRun(run)).output, { exclaim: 'HI!' });
  } finally {
    await plain.stop();
  }
  const stepFlow = new Flow<{ s: string }>({ slug: 'compatSteps' })
    .step({ slug: 'upper' }, (i) => i.s.toUpperCase())
    .step({ slug: 'exclaim', dependsOn: ['upper'] }, (i) => `${i.upper}!`);
  const sq = withStepQueues(stepFlow);
  const w1 = await startWorker(sq, { ...base, stepSlug: 'upper' });
  const w2 = await startWorker(sq, { ...base, stepSlug: 'exclaim' });
  try {
    assert.equal(w1.queueName, 'compatsteps__upper');
    assert.equal(w2.functionName, 'compatsteps--exclaim-worker');
    const run = await client.startFlow('compatSteps', { s: 'yo' });
    assert.deepEqual((await client.waitForRun(run)).output, { exclaim: 'YO!' });
    const qs = await db.sql`select queue_name, ownership, owner_flow from switchyard.queues
      where owner_flow = 'compatSteps' order by 1`;
    assert.deepEqual(qs.map((r) => [r.queue_name, r.ownership]), [
      ['compatsteps__exclaim', 'private'],
      ['compatsteps__upper', 'private'],
    ]);
  } finally {
    await Promise.all([w1.stop(), w2.stop()]);
  }
});

Deno.test("delete_flow archives only that flow's messages, keeps shared queues, drops private ones", async () => {
  const keep = new Flow({ slug: 'delKeep' }).step({ slug: 's' }, () => 1);
  const gone = new Flow({ slug: 'delGone' }).step({ slug: 's' }, () => 1);
  const priv = new Flow({ slug: 'delPriv' }).step({ slug: 's' }, () => 1);
  await compile(
    routeFlow(keep, { queues: { s: 'del_shared' } }),
    routeFlow(gone, { queues: { s: 'del_shared' } }),
    priv,
  );
  const k = await client.startFlow('delKeep', {});
  await client.startFlow('delGone', {});
  await client.startFlow('delPriv', {});
  await db.sql`select switchyard.delete_flow('delGone')`;
  await db.sql`select switchyard.delete_flow('delPriv')`;
  const left = await db.sql`select message->>'run_id' as run from pgmq.q_del_shared`;
  assert.deepEqual(left.map((r) => r.run), [k], "only the deleted flow's message left the queue");
  assert.equal(await count(db.sql`select count(*) as n from pgmq.a_del_shared`), 1);
  assert.equal(
    await count(
      db.sql`select count(*) as n from switchyard.queues where queue_name = 'del_shared'`,
    ),
    1,
  );
  assert.equal(
    await count(db.sql`select count(*) as n from pgmq.meta where queue_name = 'delpriv'`),
    0,
  );
  assert.equal(
    await count(db.sql`select count(*) as n from switchyard.queues where queue_name = 'delpriv'`),
    0,
  );
  await assert.rejects(db.sql`select switchyard.delete_flow('delGone')`, /is not compiled/);
});

Deno.test('privileges: nothing in switchyard is reachable by anon or authenticated', async () => {
  const rows = await db.sql`
    select r.rolname, has_schema_privilege(r.rolname, 'switchyard', 'usage') as usage,
           (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
             where n.nspname = 'switchyard' and has_function_privilege(r.rolname, p.oid, 'execute')) as fns
      from pg_roles r where r.rolname in ('anon', 'authenticated') order by 1`;
  assert.deepEqual(rows.map((r) => [r.rolname, r.usage, r.fns]), [
    ['anon', false, 0],
    ['authenticated', false, 0],
  ]);
  const unpinned = await db.sql`
    select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'switchyard' and p.prosecdef
       and not exists (select 1 from unnest(p.proconfig) c where c like 'search_path=%')`;
  assert.deepEqual([...unpinned], [], 'every definer-rights function pins its search_path');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
