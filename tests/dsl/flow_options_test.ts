/**
 * Runtime options are not shape (docs/design/testing.md#upgrades-with-work-in-flight). A registry
 * that changes only a
 * flow's maxAttempts, baseDelay, maxDelay, timeout or startDelay keeps its slug: the change is
 * applied to tasks created afterwards (tasks keep the options they were created with) and
 * recorded (who, when, old, new), readable with `flowOptionHistory` and on the dashboard.
 * Structure (steps, dependencies, kinds, conditions, whenUnmet, whenExhausted, queues) stays
 * strict. Shapes compare with every option at its value: a key a release did not know compares
 * as its default.
 */
import assert from 'node:assert/strict';
import { createDashboard, flowOptionHistory } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { type AnyFlow, defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { freePort } from '../../cli/_util.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const { sql } = db;
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

function shapeOf(flow: AnyFlow, queue: string) {
  const queues = Object.fromEntries(flow.steps.map((s) => [s.slug, queue]));
  return toPlacement(routeFlow(flow as never, { queues } as never)).shape;
}

const ensure = async (shape: unknown) =>
  (await sql<{ r: string }[]>`select switchyard.ensure_flow(${
    sql.json(shape as never)
  }::jsonb) as r`)[0].r;

const refusal = async (shape: unknown) => {
  try {
    await ensure(shape);
  } catch (e) {
    return e as { code: string; message: string; detail: string };
  }
  throw new Error('ensure_flow accepted the shape');
};

function tuned(slug: string, o: { attempts?: number; timeout?: number; delay?: number } = {}) {
  return new Flow<{ n: number }>({ slug, maxAttempts: o.attempts ?? 3, baseDelay: 1 })
    .step({ slug: 'a', ...(o.timeout === undefined ? {} : { timeout: o.timeout }) }, (i) => i.n)
    .step({ slug: 'b', dependsOn: ['a'], startDelay: o.delay ?? 0 }, (i) => i.a + 1);
}

Deno.test('an options-only change is applied for new tasks, recorded once, and verified afterwards', async () => {
  assert.equal(await ensure(shapeOf(tuned('optsV1'), 'opts_q')), 'created');
  const [{ id: before }] = await sql<{ id: string }[]>`
    select switchyard.start_flow('optsV1', '{"n": 1}') as id`;

  const changed = shapeOf(tuned('optsV1', { attempts: 7, timeout: 120, delay: 5 }), 'opts_q');
  assert.equal(await ensure(changed), 'updated');
  assert.equal(await ensure(changed), 'verified', 'the same options again change nothing');

  const [flow] = await sql`select max_attempts from switchyard.flows where flow_slug = 'optsV1'`;
  assert.equal(flow.max_attempts, 7);
  const steps = await sql`select step_slug, timeout, start_delay from switchyard.steps
    where flow_slug = 'optsV1' order by step_index`;
  assert.deepEqual(steps.map((s) => [s.step_slug, s.timeout, s.start_delay]), [
    ['a', 120, 0],
    ['b', null, 5],
  ]);
  // The task created before the change keeps its options; one created after gets the new ones.
  const [{ id: after }] = await sql<{ id: string }[]>`
    select switchyard.start_flow('optsV1', '{"n": 2}') as id`;
  const tasks = await sql`select run_id::text, max_attempts, timeout from switchyard.step_tasks
    where run_id in (${before}::uuid, ${after}::uuid) and step_slug = 'a'`;
  const byRun = new Map(tasks.map((t) => [t.run_id, [t.max_attempts, t.timeout]]));
  assert.deepEqual(byRun.get(before), [3, 60]);
  assert.deepEqual(byRun.get(after), [7, 120]);

  const history = await flowOptionHistory(client, { flowSlug: 'optsV1' });
  assert.equal(history.length, 1);
  assert.deepEqual(history[0].differences, [
    'flow option maxAttempts 3 -> 7',
    'step "a" option timeout null -> 120',
    'step "b" option startDelay 0 -> 5',
  ]);
  assert.equal(history[0].oldOptions.flow.maxAttempts, 3);
  assert.equal(history[0].newOptions.flow.maxAttempts, 7);
  assert.equal(history[0].newOptions.steps.a.timeout, 120);
  assert.equal(history[0].changedBy, (await sql`select session_user as u`)[0].u);
  assert.ok(history[0].changedAt instanceof Date);
});

Deno.test('structure stays strict: whenExhausted, a dependency or a queue is SY004, options are not named', async () => {
  assert.equal(await ensure(shapeOf(tuned('strictV1'), 'strict_q')), 'created');
  const exhausted = new Flow<{ n: number }>({ slug: 'strictV1', maxAttempts: 9, baseDelay: 1 })
    .step({ slug: 'a', whenExhausted: 'skip' }, (i) => i.n)
    .step({ slug: 'b', dependsOn: ['a'] }, () => 1);
  const r = await refusal(shapeOf(exhausted, 'strict_q'));
  assert.equal(r.code, 'SY004');
  assert.deepEqual(JSON.parse(r.detail).differences, [
    'step "a" option whenExhausted "fail" -> "skip"',
  ]);
  assert.match(r.message, /runtime options may/);
  const moved = await refusal(shapeOf(tuned('strictV1'), 'strict_other_q'));
  assert.equal(moved.code, 'SY004');
  const [{ n }] = await sql`select count(*)::int as n from switchyard.flow_option_changes
    where flow_slug = 'strictV1'`;
  assert.equal(n, 0, 'a refused shape records nothing');
  const [flow] = await sql`select max_attempts from switchyard.flows where flow_slug = 'strictV1'`;
  assert.equal(flow.max_attempts, 3, 'and changes nothing');
});

Deno.test('an option out of range is refused with its rule and changes nothing', async () => {
  assert.equal(await ensure(shapeOf(tuned('rangeV1'), 'range_q')), 'created');
  const shape = structuredClone(shapeOf(tuned('rangeV1'), 'range_q')) as unknown as {
    steps: { options: Record<string, unknown> }[];
  };
  shape.steps[0].options.timeout = 0;
  const r = await refusal(shape);
  assert.equal(r.code, '22023');
  assert.match(r.message, /step "a" option timeout 0 is invalid: use an integer from 1 to 86400/);
  const [step] = await sql`select timeout from switchyard.steps
    where flow_slug = 'rangeV1' and step_slug = 'a'`;
  assert.equal(step.timeout, null);
  const [{ n }] = await sql`select count(*)::int as n from switchyard.flow_option_changes
    where flow_slug = 'rangeV1'`;
  assert.equal(n, 0);
});

Deno.test('a key a release did not know compares as its default, stored or sent', async () => {
  const current = shapeOf(tuned('oldKeysV1'), 'oldkeys_q');
  // What a 0.1.0 runtime sends: no step kind, conditions, whenUnmet or whenExhausted.
  const legacy = structuredClone(current) as unknown as {
    steps: Record<string, unknown>[];
  };
  for (const step of legacy.steps) {
    delete step.kind;
    const o = step.options as Record<string, unknown>;
    for (const k of ['if', 'ifNot', 'whenUnmet', 'whenExhausted']) delete o[k];
  }
  assert.equal(await ensure(legacy), 'created');
  const [stored] = await sql`select shape from switchyard.flows where flow_slug = 'oldKeysV1'`;
  assert.deepEqual(stored.shape, JSON.parse(JSON.stringify(current)), 'stored canonically');
  assert.equal(await ensure(current), 'verified');
  // A row stored by an older core, before the migration canonicalized it, verifies too.
  await sql`update switchyard.flows set shape = ${sql.json(legacy as never)}::jsonb
    where flow_slug = 'oldKeysV1'`;
  assert.equal(await ensure(current), 'verified');
  assert.equal(await ensure(legacy), 'verified');
  const [{ n }] = await sql`select count(*)::int as n from switchyard.flow_option_changes
    where flow_slug = 'oldKeysV1'`;
  assert.equal(n, 0);
});

Deno.test('a worker started with new options keeps the slug, logs the update, and its next tasks use them', async () => {
  const v1 = new Flow<{ n: number }>({ slug: 'tunedV1', maxAttempts: 2 })
    .step({ slug: 'a' }, (i) => i.n * 2);
  const deployed = (flow: typeof v1) =>
    [
      defineDeployedFlow(routeFlow(flow, { queues: { a: 'tuned_q' } }), { alias: 'tuned' }),
    ] as const;
  const first = await startWorker(deployed(v1), {
    queueName: 'tuned_q',
    connectionString: db.url,
    ...FAST,
    logger: SILENT,
  });
  await first.stop();
  const v1Tuned = new Flow<{ n: number }>({ slug: 'tunedV1', maxAttempts: 6, timeout: 90 })
    .step({ slug: 'a' }, (i) => i.n * 2);
  const lines: string[] = [];
  const second = await startWorker(deployed(v1Tuned), {
    queueName: 'tuned_q',
    connectionString: db.url,
    ...FAST,
    logger: { ...SILENT, info: (m: string) => lines.push(m) },
  });
  try {
    assert.ok(
      lines.some((l) => /flow "tunedV1": runtime options updated/.test(l)),
      lines.join('\n'),
    );
    const [{ id }] = await sql<{ id: string }[]>`
      select switchyard.start_flow('tuned', '{"n": 4}') as id`;
    await waitFor('the run to complete', async () => {
      const [r] = await sql`select status from switchyard.runs where run_id = ${id}::uuid`;
      return r.status === 'completed';
    });
    const [t] = await sql`select max_attempts, timeout from switchyard.step_tasks
      where run_id = ${id}::uuid`;
    assert.deepEqual([t.max_attempts, t.timeout], [6, 90]);
    const [change] = await flowOptionHistory(client, { flowSlug: 'tunedV1' });
    assert.deepEqual([...change.differences].sort(), [
      'flow option maxAttempts 2 -> 6',
      'flow option timeout 60 -> 90',
    ]);

    // The dashboard lists it.
    const dashboard = createDashboard({ source: client, env: () => undefined });
    const port = freePort();
    const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/overview`);
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      const listed = (body.optionChanges as { flowSlug: string; differences: string[] }[])
        .find((c) => c.flowSlug === 'tunedV1');
      assert.deepEqual(listed?.differences, change.differences);
    } finally {
      await server.shutdown();
    }
  } finally {
    await second.stop();
  }
});

Deno.test('flow_option_history refuses an odd row count with its rule', async () => {
  await assert.rejects(() => flowOptionHistory(client, { limit: 0 }), /max_rows 0 is invalid/);
});

Deno.test('teardown', async () => {
  await client.close();
  await db.close();
});
