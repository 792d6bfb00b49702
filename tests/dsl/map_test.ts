/**
 * Map steps (issue 12): one task per element with task identity (run, step, task index),
 * message identity (queue, message id) and a queue snapshot per task; outputs in element
 * order; empty arrays; non-arrays and the element limit; per-element retries; routing, drain
 * and the unsupported-batch rule — with real workers on real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { FunctionPausedError, UnsupportedWorkError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker, withStepQueues } from '../../lib/mod.ts';
import { drainStatus, resumeFunction } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const base = { connectionString: db.url, ...FAST };

async function compile(target: Parameters<typeof toPlacement>[0]) {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(target).shape as never)
  }::jsonb)`;
}

Deno.test('fan-out: 1,000 elements across two workers on a shared queue, each executed once', async () => {
  const executed = new Map<number, number>();
  const flow = new Flow<{ n: number }>({ slug: 'fanOut', maxAttempts: 3 })
    .step({ slug: 'list' }, (input) => Array.from({ length: input.n }, (_, i) => i))
    .map({ slug: 'square', array: 'list' }, (i, ctx) => {
      assert.equal(ctx.taskIndex, i, 'the element index is the task index');
      executed.set(i, (executed.get(i) ?? 0) + 1);
      return i * i;
    })
    .step({ slug: 'sum', dependsOn: ['square'] }, (input) => ({
      count: input.square.length,
      sum: input.square.reduce((a, b) => a + b, 0),
      ordered: input.square.every((v, i) => v === i * i),
    }));
  const routed = routeFlow(flow, {
    queues: { list: 'fan_out', square: 'fan_out', sum: 'fan_out' },
  });
  const options = { ...base, queueName: 'fan_out', maxConcurrent: 10 } as const;
  const w1 = await startWorker([routed], options);
  const w2 = await startWorker([routed], options);
  try {
    const run = await client.startFlow('fanOut', { n: 1000 });
    const status = await client.waitForRun(run, { timeoutMs: 120_000 });
    assert.equal(status.status, 'completed', status.error ?? '');
    assert.deepEqual(status.output, {
      sum: { count: 1000, sum: 332833500, ordered: true },
    });
    assert.equal(executed.size, 1000);
    assert.deepEqual([...new Set(executed.values())], [1], 'every element ran exactly once');
    const [tasks] = await db.sql`
      select count(*)::int as n, count(distinct task_index)::int as indexes,
             min(task_index) as lo, max(task_index) as hi,
             count(*) filter (where attempts_count = 1 and status = 'completed')::int as once,
             count(distinct worker_id)::int as workers,
             count(distinct (queue_name, message_id))::int as messages,
             bool_and(queue_name = 'fan_out') as snapshot
        from switchyard.step_tasks where run_id = ${run} and step_slug = 'square'`;
    assert.deepEqual({ ...tasks }, {
      n: 1000,
      indexes: 1000,
      lo: 0,
      hi: 999,
      once: 1000,
      workers: 2,
      messages: 1000,
      snapshot: true,
    });
    // One pgmq.send_batch: consecutive message ids in element order, each body naming its task.
    const [order] = await db.sql`
      select bool_and(t.message_id = f.first + t.task_index) as consecutive,
             bool_and((a.message ->> 'task_index')::int = t.task_index) as bodies
        from switchyard.step_tasks t
        join pgmq.a_fan_out a on a.msg_id = t.message_id
        cross join (select min(message_id) as first from switchyard.step_tasks
                     where run_id = ${run} and step_slug = 'square') f
       where t.run_id = ${run} and t.step_slug = 'square'`;
    assert.deepEqual({ ...order }, { consecutive: true, bodies: true });
    const [{ left }] = await db.sql`select count(*)::int as left from pgmq.q_fan_out`;
    assert.equal(left, 0, 'every message was archived');
    const step = (await client.runStatus(run))!.steps.find((s) => s.stepSlug === 'square');
    assert.deepEqual(
      { status: step?.status, tasks: step?.tasks, attempts: step?.attempts },
      { status: 'completed', tasks: 1000, attempts: 1 },
    );
  } finally {
    await Promise.all([w1.stop(), w2.stop()]);
  }
});

Deno.test('an empty array completes the map with [] and no tasks; a map of it too', async () => {
  const calls: string[] = [];
  const flow = new Flow<string[]>({ slug: 'emptyMap' })
    .map({ slug: 'upper' }, (s) => {
      calls.push(s);
      return s.toUpperCase();
    })
    .map({ slug: 'len', array: 'upper' }, (s) => s.length)
    .step({ slug: 'report', dependsOn: ['upper', 'len'] }, (input) => input);
  const worker = await startWorker(flow, base);
  try {
    const empty = await client.startFlow('emptyMap', []);
    const status = await client.waitForRun(empty);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { report: { upper: [], len: [] } });
    const [{ n }] = await db.sql`select count(*)::int as n from switchyard.step_tasks
      where run_id = ${empty} and step_slug in ('upper', 'len')`;
    assert.equal(n, 0, 'no task for an empty map');
    assert.deepEqual(calls, []);
    const full = await client.startFlow('emptyMap', ['a', 'bb']);
    assert.deepEqual((await client.waitForRun(full)).output, {
      report: { upper: ['A', 'BB'], len: [1, 2] },
    });
  } finally {
    await worker.stop();
  }
});

Deno.test('map after map: outputs stay in element order whatever order the tasks finish in', async () => {
  const reversed = new Flow<{ words: string[] }>({ slug: 'mapMapV1', timeout: 10 })
    .step({ slug: 'words' }, (input) => input.words)
    .map({ slug: 'tag', array: 'words' }, async (word, ctx) => {
      // Later elements finish first.
      await new Promise((r) => setTimeout(r, (10 - ctx.taskIndex) * 20));
      return { word, at: ctx.taskIndex };
    })
    .map({ slug: 'shout', array: 'tag' }, (tagged) => `${tagged.word.toUpperCase()}#${tagged.at}`)
    .step({ slug: 'join', dependsOn: ['shout'] }, (input) => input.shout.join(' '));
  const worker = await startWorker(reversed, { ...base, maxConcurrent: 10 });
  try {
    const words = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const run = await client.startFlow('mapMapV1', { words });
    assert.deepEqual((await client.waitForRun(run)).output, {
      join: 'A#0 B#1 C#2 D#3 E#4 F#5 G#6 H#7',
    });
  } finally {
    await worker.stop();
  }
});

Deno.test('failing elements retry on their own; the others are not run again', async () => {
  const attempts = new Map<number, number[]>();
  const flow = new Flow<number[]>({ slug: 'mapRetry', maxAttempts: 3, baseDelay: 0, timeout: 1 })
    .map({ slug: 'work' }, async (n, ctx) => {
      attempts.set(n, [...(attempts.get(n) ?? []), ctx.attempt]);
      if (n % 3 === 1 && ctx.attempt === 1) throw new Error(`element ${n} fails once`);
      if (n === 5 && ctx.attempt === 1) {
        // Overruns its 1 s timeout: the attempt fails and the element is retried.
        await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))
        );
      }
      return n * 10;
    });
  const worker = await startWorker(flow, { ...base, maxConcurrent: 8 });
  try {
    const run = await client.startFlow('mapRetry', [0, 1, 2, 3, 4, 5, 6, 7]);
    const status = await client.waitForRun(run);
    assert.equal(status.status, 'completed', status.error ?? '');
    assert.deepEqual(status.output, { work: [0, 10, 20, 30, 40, 50, 60, 70] });
    assert.deepEqual(
      [...attempts.entries()].sort(([a], [b]) => a - b).map(([n, a]) => [n, a]),
      [[0, [1]], [1, [1, 2]], [2, [1]], [3, [1]], [4, [1, 2]], [5, [1, 2]], [6, [1]], [7, [1, 2]]],
    );
    const rows = await db.sql`select task_index, attempts_count, status from switchyard.step_tasks
      where run_id = ${run} order by task_index`;
    assert.deepEqual(rows.map((r) => r.attempts_count), [1, 2, 1, 1, 2, 2, 1, 2]);
    assert.ok(rows.every((r) => r.status === 'completed'));
  } finally {
    await worker.stop();
  }
});

Deno.test('one element out of attempts fails the run as a step failure; with whenExhausted skip the map is skipped', async () => {
  const flow = new Flow<number[]>({ slug: 'mapExhaust', maxAttempts: 2, baseDelay: 0 })
    .map({ slug: 'work' }, (n) => {
      if (n === 2) throw new Error('element 2 is broken');
      return n;
    });
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const tolerant = new Flow<number[]>({ slug: 'mapSkip', maxAttempts: 2, baseDelay: 0 })
    .map({ slug: 'work', whenExhausted: 'skip' }, async (n) => {
      if (n === 2) throw new Error('element 2 is broken');
      // Elements 3 to 5 are still running when element 2 has used its attempts.
      if (n > 2) await released;
      return n;
    })
    .step({ slug: 'after', dependsOn: ['work'] }, (input) => input.work ?? 'map skipped');
  const w1 = await startWorker(flow, base);
  const w2 = await startWorker(tolerant, { ...base, maxConcurrent: 6 });
  try {
    const failed = await client.waitForRun(await client.startFlow('mapExhaust', [0, 1, 2, 3]));
    assert.equal(failed.status, 'failed');
    assert.match(
      failed.error ?? '',
      /^step work failed after 2 attempt\(s\): Error: element 2 is broken/,
    );

    const run = await client.startFlow('mapSkip', [0, 1, 2, 3, 4, 5]);
    const status = await client.waitForRun(run);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { after: 'map skipped' });
    const work = status.steps.find((s) => s.stepSlug === 'work');
    assert.equal(work?.status, 'skipped');
    assert.match(work?.skipReason ?? '', /whenExhausted skip: failed after 2 attempt\(s\)/);
    const rows = await db.sql`select task_index, status from switchyard.step_tasks
      where run_id = ${run} order by task_index`;
    const byIndex = Object.fromEntries(rows.map((r) => [r.task_index, r.status]));
    assert.equal(byIndex[2], 'failed');
    assert.deepEqual([byIndex[3], byIndex[4], byIndex[5]], ['skipped', 'skipped', 'skipped']);
    const [{ left }] = await db.sql`select count(*)::int as left from pgmq.q_mapskip`;
    assert.equal(left, 0, "the skipped elements' messages were archived");
    // The elements still running finish now; their answers are not accepted.
    release();
    await w2.stop();
    const after = await db.sql`select status from switchyard.step_tasks
      where run_id = ${run} and task_index > 2 order by task_index`;
    assert.deepEqual(after.map((r) => r.status), ['skipped', 'skipped', 'skipped']);
    assert.deepEqual((await client.runStatus(run))?.output, { after: 'map skipped' });
  } finally {
    release();
    await Promise.all([w1.stop(), w2.stop()]);
  }
});

Deno.test('a value that is not an array fails the run naming the step and its type', async () => {
  const root = new Flow<number[]>({ slug: 'mapNotArray' }).map({ slug: 'each' }, (n) => n);
  const dependent = new Flow<{ s: string }>({ slug: 'mapNotArray2' })
    .step({ slug: 'text' }, (input) => input.s as unknown as string[])
    .map({ slug: 'chars', array: 'text' }, (c) => c);
  await compile(root);
  const worker = await startWorker(dependent, base);
  try {
    const r1 = await client.startFlow('mapNotArray', { not: 'an array' });
    const s1 = await client.runStatus(r1);
    assert.equal(s1?.status, 'failed');
    assert.equal(s1?.error, 'map step "each" needs an array from the flow input, got object');
    const r2 = await client.startFlow('mapNotArray2', { s: 'abc' });
    const s2 = await client.waitForRun(r2);
    assert.equal(s2.status, 'failed');
    assert.equal(s2.error, 'map step "chars" needs an array from step "text", got string');
    assert.equal(s2.steps.find((s) => s.stepSlug === 'chars')?.status, 'failed');
  } finally {
    await worker.stop();
  }
});

Deno.test('more elements than the limit are refused with the count and the limit', async () => {
  const [{ limit }] = await db.sql<
    { limit: number }[]
  >`select switchyard.max_map_elements() as limit`;
  assert.equal(limit, 10000);
  const flow = new Flow<number[]>({ slug: 'mapLimit' }).map({ slug: 'each' }, (n) => n);
  await compile(flow);
  const run = await client.startFlow('mapLimit', Array.from({ length: limit + 1 }, (_, i) => i));
  const status = await client.runStatus(run);
  assert.equal(status?.status, 'failed');
  assert.equal(
    status?.error,
    'map step "each" refused 10001 elements from the flow input: at most 10000 elements per map',
  );
  const [{ n }] = await db
    .sql`select count(*)::int as n from switchyard.step_tasks where run_id = ${run}`;
  assert.equal(n, 0);
  const [{ m }] = await db.sql`select count(*)::int as m from pgmq.q_maplimit`;
  assert.equal(m, 0, 'no message was sent');
});

Deno.test('map steps are steps: shape, routing, step queues and immutability', async () => {
  const flow = new Flow<string[]>({ slug: 'mapShape' })
    .map({ slug: 'each', maxAttempts: 4 }, (s) => s.length)
    .map({ slug: 'double', array: 'each' }, (n) => n * 2);
  const shape = toPlacement(flow).shape;
  assert.deepEqual(shape.steps.map((s) => [s.slug, s.kind, [...s.dependsOn]]), [
    ['each', 'map', []],
    ['double', 'map', ['each']],
  ]);
  assert.deepEqual(withStepQueues(flow).queues, {
    each: 'mapshape__each',
    double: 'mapshape__double',
  });
  await compile(withStepQueues(flow));
  const [row] = await db.sql`select step_type, deps_count, queue_name from switchyard.steps
    where flow_slug = 'mapShape' and step_slug = 'double'`;
  assert.deepEqual({ ...row }, { step_type: 'map', deps_count: 1, queue_name: 'mapshape__double' });
  // The same slug with a map turned into an ordinary step is another shape.
  const changed = new Flow<string[]>({ slug: 'mapShape' })
    .map({ slug: 'each', maxAttempts: 4 }, (s) => s.length)
    .step({ slug: 'double', dependsOn: ['each'] }, (input) => input.each);
  const refused = await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(withStepQueues(changed)).shape as never)
  }::jsonb)`.then(() => assert.fail('accepted'), (e) => e);
  assert.equal(refused.code, 'SY004');
  assert.deepEqual(JSON.parse(refused.detail).differences, [
    'step "double" kind "map" -> "single"',
  ]);
  // SQL refuses a map with two dependencies.
  const two = JSON.parse(JSON.stringify(
    toPlacement(
      new Flow({ slug: 'mapTwo' }).step({ slug: 'a' }, () => [1]).step({ slug: 'b' }, () => [2])
        .step({ slug: 'c', dependsOn: ['a', 'b'] }, () => 3),
    ).shape,
  ));
  two.steps[2].kind = 'map';
  const bad = await db.sql`select switchyard.ensure_flow(${db.sql.json(two)}::jsonb)`.then(
    () => assert.fail('accepted'),
    (e) => e,
  );
  assert.equal(bad.code, '22023');
  assert.equal(JSON.parse(bad.detail).rule, 'map_dependencies');
  // Step-queued map steps run on their generated queues.
  const each = await startWorker(withStepQueues(flow), { ...base, stepSlug: 'each' });
  const double = await startWorker(withStepQueues(flow), { ...base, stepSlug: 'double' });
  try {
    const run = await client.startFlow('mapShape', ['a', 'bbb']);
    assert.deepEqual((await client.waitForRun(run)).output, { double: [2, 6] });
    const queues = await db.sql`select step_slug, array_agg(distinct queue_name) as q
      from switchyard.step_tasks where run_id = ${run} group by 1 order by 1`;
    assert.deepEqual(queues.map((r) => [r.step_slug, r.q]), [
      ['double', ['mapshape__double']],
      ['each', ['mapshape__each']],
    ]);
  } finally {
    await Promise.all([each.stop(), double.stop()]);
  }
});

/** Two versions of one alias on two shared queues; v2 adds a map step. */
function versions() {
  const v1 = new Flow<{ items: string[] }>({ slug: 'mapVerV1' })
    .step({ slug: 'fetch' }, (input) => ({ version: 1, count: input.items.length }))
    .step({ slug: 'store', dependsOn: ['fetch'] }, (input) => input.fetch);
  const v2 = new Flow<{ items: string[] }>({ slug: 'mapVerV2' })
    .step({ slug: 'fetch' }, (input) => input.items)
    .map({ slug: 'enrich', array: 'fetch' }, (item) => `${item}!`)
    .step(
      { slug: 'store', dependsOn: ['enrich'] },
      (input) => ({ version: 2, items: input.enrich }),
    );
  return {
    v1: defineDeployedFlow(
      routeFlow(v1, { queues: { fetch: 'map_ver_io', store: 'map_ver_db' } }),
      { alias: 'mapVer' },
    ),
    v2: defineDeployedFlow(
      routeFlow(v2, { queues: { fetch: 'map_ver_io', enrich: 'map_ver_io', store: 'map_ver_db' } }),
      { alias: 'mapVer' },
    ),
  };
}

Deno.test('a v2 that adds a map step while v1 runs drain on the same queues', async () => {
  const { v1, v2 } = versions();
  await compile(v1);
  await db.sql`select switchyard.sync_alias('mapVer', array['mapVerV1'])`;
  // v1 runs wait in their queues: no worker yet.
  const old = await Promise.all(
    [1, 2, 3].map((n) => client.startFlow('mapVer', { items: Array(n).fill('x') })),
  );
  const registry = [v1, v2] as const;
  const io = await startWorker(registry, { ...base, queueName: 'map_ver_io', maxConcurrent: 6 });
  const store = await startWorker(registry, { ...base, queueName: 'map_ver_db' });
  try {
    const [alias] = await db.sql`select flow_slug from switchyard.aliases where alias = 'mapVer'`;
    assert.equal(alias.flow_slug, 'mapVerV2', 'the first new worker moved the alias');
    const fresh = await client.startFlow('mapVer', { items: ['a', 'b', 'c'] });
    for (const [i, id] of old.entries()) {
      const s = await client.waitForRun(id);
      assert.equal(s.flowSlug, 'mapVerV1');
      assert.deepEqual(s.output, { store: { version: 1, count: i + 1 } });
    }
    const s = await client.waitForRun(fresh);
    assert.equal(s.flowSlug, 'mapVerV2');
    assert.deepEqual(s.output, { store: { version: 2, items: ['a!', 'b!', 'c!'] } });
    await waitFor('v1 to be drained on both queues', async () => {
      const rows = await drainStatus(client);
      const v1Rows = rows.filter((r) => r.flowSlug === 'mapVerV1');
      return v1Rows.length === 2 && v1Rows.every((r) => r.state === 'drained');
    });
  } finally {
    await Promise.all([io.stop(), store.stop()]);
  }
});

Deno.test('an unsupported map task is refused whole, as today: nothing claimed, the function paused', async () => {
  const v1 = new Flow<{ items: string[] }>({ slug: 'mapOldV1' })
    .step({ slug: 'fetch' }, (input) => input.items.length);
  const newer = new Flow<string[]>({ slug: 'mapOldV2' }).map({ slug: 'each' }, (s) => s);
  const oldRegistry = [routeFlow(v1, { queues: { fetch: 'map_old' } })] as const;
  // An old worker starts before v2 exists: coverage is satisfied.
  const worker = await startWorker(oldRegistry, {
    ...base,
    queueName: 'map_old',
    functionName: 'map-old-worker',
  });
  // Then v2 is compiled elsewhere and its map tasks land on the same queue.
  await compile(routeFlow(newer, { queues: { each: 'map_old' } }));
  const run = await client.startFlow('mapOldV2', ['a', 'b', 'c']);
  const error = await within(
    30_000,
    'the worker to stop on the unsupported map tasks (worker.done)',
    worker.done.then(() => assert.fail('the worker kept going'), (e) => e),
  );
  assert.ok(error instanceof UnsupportedWorkError, String(error));
  assert.deepEqual(error.unsupportedPairs, ['mapOldV2/each']);
  const tasks = await db.sql`select task_index, status, attempts_count from switchyard.step_tasks
    where run_id = ${run} order by task_index`;
  assert.deepEqual(tasks.map((t) => [t.task_index, t.status, t.attempts_count]), [
    [0, 'queued', 0],
    [1, 'queued', 0],
    [2, 'queued', 0],
  ]);
  const [q] = await db.sql`select count(*)::int as n,
      count(*) filter (where vt <= clock_timestamp())::int as visible from pgmq.q_map_old`;
  assert.deepEqual({ ...q }, { n: 3, visible: 3 }, 'the whole batch is visible again at once');
  const [fn] = await db.sql`select pause_reason from switchyard.worker_functions
    where function_name = 'map-old-worker'`;
  assert.match(fn.pause_reason, /unsupported flow\/step pairs \[mapOldV2\/each\]/);
  await assert.rejects(
    startWorker(oldRegistry, { ...base, queueName: 'map_old', functionName: 'map-old-worker' }),
    FunctionPausedError,
  );
  // A registry that knows v2, resumed, runs every element.
  await resumeFunction(client, 'map-old-worker');
  const fixed = await startWorker(
    [...oldRegistry, routeFlow(newer, { queues: { each: 'map_old' } })],
    { ...base, queueName: 'map_old', functionName: 'map-old-worker' },
  );
  try {
    assert.deepEqual((await client.waitForRun(run)).output, { each: ['a', 'b', 'c'] });
  } finally {
    await fixed.stop();
  }
});

Deno.test('the claim classifies each map task by its message, as any task: claimed, duplicate, stale', async () => {
  const flow = new Flow<string[]>({ slug: 'mapClaim', timeout: 30 }).map(
    { slug: 'each' },
    (s) => s,
  );
  await compile(routeFlow(flow, { queues: { each: 'map_claim' } }));
  const run = await client.startFlow('mapClaim', ['a', 'b', 'c']);
  const workerId = crypto.randomUUID();
  await db.sql`select switchyard.register_worker(${workerId}::uuid, 'map_claim', 'map-claim-worker',
    array['mapClaim/each'])`;
  const claim = async (ids: bigint[]) =>
    (await db.sql`select disposition, task_index, input, flow_input
      from switchyard.start_tasks('map_claim', ${`{${ids.join(',')}}`}::bigint[], ${workerId}::uuid)
      order by message_id`).map((r) => ({ ...r }));
  const ids = (await db.sql`select message_id from switchyard.step_tasks
    where run_id = ${run} order by task_index`).map((r) => BigInt(r.message_id));
  // Each message is claimed as its own task, with its element as input (the run's input
  // travels once per batch, on the run's first row).
  assert.deepEqual(await claim(ids.slice(0, 2)), [
    { disposition: 'claimed', task_index: 0, input: 'a', flow_input: ['a', 'b', 'c'] },
    { disposition: 'claimed', task_index: 1, input: 'b', flow_input: null },
  ]);
  // Claiming them again while they run: benign duplicates, no attempt used.
  assert.deepEqual((await claim(ids.slice(0, 2))).map((r) => [r.disposition, r.task_index]), [
    ['duplicate', 0],
    ['duplicate', 1],
  ]);
  // Element 0 completes (by task index); the step waits for the others.
  const [{ ok }] = await db.sql`select switchyard.complete_task(${run}::uuid, 'each', 1,
    '"A"'::jsonb, 0) as ok`;
  assert.equal(ok, true);
  const [state] = await db.sql`select status, remaining_tasks from switchyard.step_states
    where run_id = ${run} and step_slug = 'each'`;
  assert.deepEqual({ ...state }, { status: 'started', remaining_tasks: 2 });
  // Element 1 fails for good: the run fails, element 2's message is archived and a late read
  // of element 0's message (completed) would be stale.
  await db.sql`update switchyard.step_tasks set max_attempts = 1
    where run_id = ${run} and task_index = 1`;
  const [{ result }] = await db.sql`select switchyard.fail_task(${run}::uuid, 'each', 1,
    'broken', 1) as result`;
  assert.equal(result, 'failed');
  assert.deepEqual(await claim([ids[0], ids[2]]), [
    { disposition: 'stale', task_index: null, input: null, flow_input: null },
    { disposition: 'stale', task_index: null, input: null, flow_input: null },
  ]);
  const tasks = await db.sql`select task_index, status, attempts_count from switchyard.step_tasks
    where run_id = ${run} order by task_index`;
  assert.deepEqual(tasks.map((t) => [t.task_index, t.status, t.attempts_count]), [
    [0, 'completed', 1],
    [1, 'failed', 1],
    [2, 'queued', 0],
  ]);
  assert.match(
    (await client.runStatus(run))?.error ?? '',
    /^step each failed after 1 attempt\(s\): broken/,
  );
});

Deno.test('a claim gives each map element its own input, for arrays of 1 to 2,000 and batches in any order', async () => {
  // The claim's returned rows reach each task by its whole key (20261202001200_map_claim.sql):
  // batches mixing runs, maps of the flow input and of a step's output, and elements from
  // anywhere in the array, each claimed once with exactly its element.
  const rootMap = new Flow<string[]>({ slug: 'mapSizesRoot' }).map({ slug: 'each' }, (s) => s);
  const stepMap = new Flow<{ n: number }>({ slug: 'mapSizesStep' })
    .step({ slug: 'list' }, (input) => Array.from({ length: input.n }, (_, i) => ({ i })))
    .map({ slug: 'each', array: 'list' }, (e) => e);
  const queue = 'map_sizes';
  await compile(routeFlow(rootMap, { queues: { each: queue } }));
  await compile(routeFlow(stepMap, { queues: { list: queue, each: queue } }));
  const workerId = crypto.randomUUID();
  await db.sql`select switchyard.register_worker(${workerId}::uuid, ${queue}, 'map-sizes-worker',
    array['mapSizesRoot/each', 'mapSizesStep/list', 'mapSizesStep/each'])`;
  type Row = {
    disposition: string;
    message_id: string;
    run_id: string | null;
    step_slug: string | null;
    task_index: number | null;
    input: string | null;
    flow_input: string | null;
  };
  const claim = async (ids: readonly string[]) =>
    await db.sql<Row[]>`select disposition, message_id::text as message_id, run_id::text as run_id,
        step_slug, task_index, input::text as input, flow_input::text as flow_input
      from switchyard.start_tasks(${queue}, ${`{${ids.join(',')}}`}::bigint[], ${workerId}::uuid)`;
  const messages = async (run: string, step: string) =>
    (await db.sql<{ id: string }[]>`select message_id::text as id from switchyard.step_tasks
      where run_id = ${run}::uuid and step_slug = ${step} order by task_index`).map((r) => r.id);

  const expected = new Map<string, unknown>(); // message id -> its element
  const inputs = new Map<string, unknown>(); // run id -> its flow input
  for (const n of [1, 2, 200, 2000]) {
    const strings = Array.from({ length: n }, (_, i) => `e${i}`);
    const root = await client.startFlow('mapSizesRoot', strings);
    inputs.set(root, strings);
    (await messages(root, 'each')).forEach((id, i) => expected.set(id, strings[i]));
    const step = await client.startFlow('mapSizesStep', { n });
    inputs.set(step, { n });
    const [list] = await claim(await messages(step, 'list'));
    assert.equal(list.disposition, 'claimed');
    const objects = Array.from({ length: n }, (_, i) => ({ i, pad: 'x'.repeat(20) }));
    const [{ ok }] = await db.sql`select switchyard.complete_task(${step}::uuid, 'list', 1,
      ${db.sql.json(objects as never)}::jsonb, 0) as ok`;
    assert.equal(ok, true);
    (await messages(step, 'each')).forEach((id, i) => expected.set(id, objects[i]));
  }
  assert.equal(expected.size, 2 * (1 + 2 + 200 + 2000));

  // Batches of 37 taken from a fixed shuffle of every map message of the 8 runs.
  const order = [...expected.keys()];
  let seed = 12345;
  for (let i = order.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const j = seed % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const claimed = new Set<string>();
  for (let b = 0; b < order.length; b += 37) {
    const batch = order.slice(b, b + 37);
    const rows = await claim(batch);
    assert.equal(rows.length, batch.length);
    const firstOfRun = new Map<string, string>(); // run -> the message carrying its input
    for (const r of rows) {
      assert.equal(r.disposition, 'claimed', JSON.stringify(r));
      assert.equal(r.step_slug, 'each');
      assert.equal(claimed.has(r.message_id), false, `message ${r.message_id} claimed twice`);
      claimed.add(r.message_id);
      assert.deepEqual(JSON.parse(r.input!), expected.get(r.message_id), `message ${r.message_id}`);
      if (r.flow_input !== null) {
        assert.equal(firstOfRun.has(r.run_id!), false, 'the flow input once per run per batch');
        firstOfRun.set(r.run_id!, r.message_id);
        assert.deepEqual(JSON.parse(r.flow_input), inputs.get(r.run_id!));
      }
    }
    for (const run of new Set(rows.map((r) => r.run_id!))) {
      const first = rows.filter((r) => r.run_id === run)
        .map((r) => BigInt(r.message_id)).reduce((a, v) => v < a ? v : a);
      assert.equal(firstOfRun.get(run), String(first), "on the run's first row by message id");
    }
    // Claimed again while they run: duplicates, each with its own task index.
    const again = await claim(batch.slice(0, 5));
    const indexes = await db.sql<{ id: string; task_index: number }[]>`
      select message_id::text as id, task_index from switchyard.step_tasks
       where queue_name = ${queue} and message_id = any (${`{${
      batch.slice(0, 5).join(',')
    }}`}::bigint[])`;
    assert.deepEqual(
      again.map((r) => [r.disposition, r.message_id, r.task_index]).sort(),
      indexes.map((r) => ['duplicate', r.id, r.task_index]).sort(),
    );
  }
  assert.equal(claimed.size, expected.size);
});

Deno.test('a stopping worker hands its map elements back; another worker finishes them, each once', async () => {
  let hold = true;
  let entered = 0;
  let open!: () => void;
  const gate = new Promise<void>((r) => open = r);
  const done = new Map<number, number>();
  const flow = new Flow<number[]>({ slug: 'mapRelease', maxAttempts: 3 })
    .map({ slug: 'each' }, async (n, ctx) => {
      if (hold) {
        entered++;
        // Ignores the shutdown abort: still running when the grace period ends, so released,
        // and its attempt counts (a refund is for work handed back, issue 36).
        await gate;
        return -1;
      }
      void ctx;
      done.set(n, (done.get(n) ?? 0) + 1);
      return n;
    });
  const first = await startWorker(flow, { ...base, maxConcurrent: 4, shutdownGraceMs: 100 });
  const run = await client.startFlow('mapRelease', [0, 1, 2, 3, 4, 5]);
  await waitFor('four elements to run on the first worker', () => entered === 4);
  await first.stop();
  const held = await db.sql`select task_index, status, attempts_count from switchyard.step_tasks
    where run_id = ${run} order by task_index`;
  // The four running elements used an attempt; the two never claimed used none.
  assert.ok(held.every((t) => t.status === 'queued'), JSON.stringify(held));
  assert.deepEqual(
    held.map((t) => t.attempts_count).sort(),
    [0, 0, 1, 1, 1, 1],
    JSON.stringify(held),
  );
  hold = false;
  const second = await startWorker(flow, base);
  try {
    assert.deepEqual((await client.waitForRun(run)).output, { each: [0, 1, 2, 3, 4, 5] });
    assert.deepEqual([...done.values()], [1, 1, 1, 1, 1, 1]);
  } finally {
    open(); // the released handlers end; their outcomes are dropped
    await second.stop();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
