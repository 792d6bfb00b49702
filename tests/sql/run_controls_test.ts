/**
 * Rerun, fork, move, pause and bulk actions (issue 41, docs/design/rerun.md), on real
 * PostgreSQL with real workers: what each keeps and runs again, what SQL proves before a run
 * changes version, the refusals (each changes nothing), and the races: a late answer of an old
 * attempt against a rerun, a fork against a cancel, a bulk rerun from two connections, a running
 * task's answer against its run's move (a worker per version); a move inside a rollout fence;
 * issue 41's "Done when" sequence, its counts printed.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow, startWorker, type Worker } from '../../lib/mod.ts';
import { toPlacement } from '../../lib/dsl/placement.ts';
import {
  bulkRunAction,
  createDashboard,
  fenceBegin,
  fenceEnd,
  fenceStatus,
  moveRun,
  waitForFence,
} from '../../lib/ops.ts';
import { FunctionDisabledError } from '../../lib/errors.ts';
import { createClient } from '../../lib/client.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { deno, envWithout } from '../_helpers/process.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const { sql } = db;
const client = untypedClient(db.url);
const quiet = { info() {}, warn() {}, error() {} };

/** Calls of each step, by run: what ran again and what was kept. */
const calls = new Map<string, number>();
const count = (runId: string, step: string) => {
  const key = `${runId}/${step}`;
  calls.set(key, (calls.get(key) ?? 0) + 1);
};
const called = (runId: string, step: string) => calls.get(`${runId}/${step}`) ?? 0;

/** Steps that fail while their run's id is listed here. */
const failing = new Set<string>();
/**
 * Steps that fail while their run's input `n` is listed here: listed before the start, so a
 * worker that reaches b before the start call returns cannot miss the bug.
 */
const failingN = new Set<number>();

// a -> b -> c, and d beside them (depends on a only).
const chain = new Flow<{ n: number; tag?: string }>({
  slug: 'rcChain',
  maxAttempts: 2,
  baseDelay: 1,
})
  .step({ slug: 'a' }, (input, ctx) => {
    count(ctx.runId, 'a');
    return input.n + 1;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input, ctx) => {
    count(ctx.runId, 'b');
    if (failing.has(ctx.runId) || failingN.has(ctx.flowInput.n)) throw new Error('b is broken');
    return input.a * 10;
  })
  .step({ slug: 'c', dependsOn: ['b'] }, (input, ctx) => {
    count(ctx.runId, 'c');
    return { c: input.b, tag: ctx.flowInput.tag ?? null };
  })
  .step({ slug: 'd', dependsOn: ['a'] }, (input, ctx) => {
    count(ctx.runId, 'd');
    return `d${input.a}`;
  });

async function events(runId: string) {
  return await sql<{ event: string; step_slug: string | null; data: Record<string, unknown> }[]>`
    select event, step_slug, data from switchyard.run_events where run_id = ${runId}
     order by event_id`;
}

async function snapshot(runId: string) {
  const [run] = await sql`select status, input, output, error, remaining_steps, attempt_floor,
                                 paused_at from switchyard.runs where run_id = ${runId}`;
  const steps = await sql`select step_slug, status, output, remaining_deps
                            from switchyard.step_states where run_id = ${runId} order by step_slug`;
  const tasks = await sql`select step_slug, task_index, status, attempts_count, message_id
                            from switchyard.step_tasks where run_id = ${runId}
                           order by step_slug, task_index`;
  const [{ n }] = await sql`select count(*)::int as n from switchyard.run_events
                             where run_id = ${runId}`;
  return { run, steps, tasks, events: n };
}

const refusal = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    const err = e as { code: string; detail: string; message: string };
    return { code: err.code, detail: JSON.parse(err.detail), message: err.message };
  }
  throw new Error('expected a refusal');
};

let worker: Worker;
Deno.test.beforeAll(async () => {
  worker = await startWorker(chain, {
    connectionString: db.url,
    logger: quiet,
    maxConcurrent: 8,
    ...FAST,
  });
});

Deno.test('rerun of a completed run from a middle step runs it and its dependents again, keeps the rest', async () => {
  const run = await client.startFlow('rcChain', { n: 1 });
  assert.equal((await client.waitForRun(run)).status, 'completed');
  const before = await sql`select step_slug, output from switchyard.step_states
                            where run_id = ${run} order by step_slug`;
  const [{ rerun }] = await sql`select switchyard.rerun_run(${run}::uuid, 'b',
                                  ${sql.json({ tag: 'patched' })}::jsonb, 'alice') as rerun`;
  assert.equal(rerun, 2, 'b and c run again');
  const done = await client.waitForRun(run);
  assert.equal(done.status, 'completed');
  assert.equal(called(run, 'a'), 1, 'a kept');
  assert.equal(called(run, 'd'), 1, 'd kept');
  assert.equal(called(run, 'b'), 2);
  assert.equal(called(run, 'c'), 2);
  const after = await sql`select step_slug, output from switchyard.step_states
                           where run_id = ${run} order by step_slug`;
  assert.deepEqual(after.find((s) => s.step_slug === 'a'), before.find((s) => s.step_slug === 'a'));
  assert.deepEqual(after.find((s) => s.step_slug === 'c')?.output, { c: 20, tag: 'patched' });
  const [row] = await sql`select input, remaining_steps from switchyard.runs where run_id = ${run}`;
  assert.deepEqual(row.input, { n: 1, tag: 'patched' });
  assert.equal(row.remaining_steps, 0);
  const log = await events(run);
  const note = log.find((e) => e.event === 'rerun');
  assert.ok(note, 'a rerun event');
  assert.deepEqual(note.data, {
    by: 'alice',
    from_step: 'b',
    steps: ['b', 'c'],
    input_patch: { tag: 'patched' },
    previous_status: 'completed',
  });
  // The run completed twice: completed, rerun, started, ..., completed.
  assert.deepEqual(log.filter((e) => e.step_slug === null).map((e) => e.event), [
    'started',
    'completed',
    'rerun',
    'started',
    'completed',
  ]);
});

Deno.test('rerun of a failed run from the failing step: fresh attempts counting on, the run completes', async () => {
  failingN.add(2);
  const run = await client.startFlow('rcChain', { n: 2 });
  failing.add(run);
  failingN.delete(2);
  await waitFor('the run to start b', () => called(run, 'a') === 1);
  assert.equal((await client.waitForRun(run)).status, 'failed');
  const [{ used }] = await sql`select max(attempts_count)::int as used from switchyard.step_tasks
                                where run_id = ${run} and step_slug = 'b'`;
  assert.equal(used, 2);
  failing.delete(run); // the bug is fixed and deployed
  await sql`select switchyard.rerun_run(${run}::uuid, 'b')`;
  assert.equal((await client.waitForRun(run)).status, 'completed');
  const [b] = await sql`select attempts_count, max_attempts from switchyard.step_tasks
                         where run_id = ${run} and step_slug = 'b'`;
  assert.deepEqual({ ...b }, { attempts_count: 3, max_attempts: 4 }, 'attempts count on');
  assert.equal(called(run, 'a'), 1);
  assert.equal(called(run, 'd'), 1, 'd completed before b failed, and is kept');
  const log = await events(run);
  assert.deepEqual(log.filter((e) => e.step_slug === null).map((e) => e.event), [
    'started',
    'failed',
    'rerun',
    'retried',
    'completed',
  ]);
});

Deno.test('rerun is refused with the rule and changes nothing: unknown run, started run, unknown step, bad patch', async () => {
  const done = await client.startFlow('rcChain', { n: 3 });
  assert.equal((await client.waitForRun(done)).status, 'completed');
  const was = await snapshot(done);
  let r = await refusal(sql`select switchyard.rerun_run(${crypto.randomUUID()}::uuid, 'a')`);
  assert.equal(r.code, '22023');
  assert.equal(r.detail.rule, 'run_unknown');
  r = await refusal(sql`select switchyard.rerun_run(${done}::uuid, 'work')`);
  assert.equal(r.code, '22023');
  assert.equal(r.detail.rule, 'step_unknown');
  assert.deepEqual(r.detail.steps, ['a', 'b', 'c', 'd']);
  assert.match(r.message, /has no step "work"; its steps: a, b, c, d/);
  r = await refusal(sql`select switchyard.rerun_run(${done}::uuid, 'b', '[1]'::jsonb)`);
  assert.equal(r.detail.rule, 'input_patch_not_object');
  assert.deepEqual(await snapshot(done), was, 'nothing changed');

  // A started run: b waits on a gate-less queue position (the run is paused, so nothing runs).
  const started = await client.startFlow('rcChain', { n: 4 }, {
    startAt: new Date(Date.now() + 3_600_000),
  });
  const wasStarted = await snapshot(started);
  r = await refusal(sql`select switchyard.rerun_run(${started}::uuid, 'a')`);
  assert.equal(r.code, '55000');
  assert.equal(r.detail.rule, 'run_not_ended');
  assert.deepEqual(await snapshot(started), wasStarted);
  await sql`select switchyard.cancel_run(${started}::uuid, 'test over')`;
});

Deno.test('a late answer of an attempt from before the rerun is ignored, whichever commits first', async () => {
  // `slow` holds its first attempt open on a gate; the run is cancelled meanwhile, then rerun
  // while the old attempt answers at the same moment.
  const gates = new Map<string, () => void>();
  const attemptsSeen = new Map<string, number[]>();
  const slowFlow = new Flow<{ id: number }>({ slug: 'rcSlow', maxAttempts: 3, timeout: 60 })
    .step({ slug: 'slow' }, async (_input, ctx) => {
      attemptsSeen.set(ctx.runId, [...(attemptsSeen.get(ctx.runId) ?? []), ctx.attempt]);
      if (!gates.has(ctx.runId)) {
        await new Promise<void>((r) => gates.set(ctx.runId, r));
        return `old attempt ${ctx.attempt}`;
      }
      return `new attempt ${ctx.attempt}`;
    });
  const w = await startWorker(slowFlow, {
    connectionString: db.url,
    logger: quiet,
    maxConcurrent: 20,
    ...FAST,
  });
  try {
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => client.startFlow('rcSlow', { id: i })),
    );
    await waitFor('every first attempt to hold its gate', () => runs.every((r) => gates.has(r)));
    for (const run of runs) await sql`select switchyard.cancel_run(${run}::uuid, 'to rerun')`;
    // Each rerun and each late answer race on their own connection.
    const other = postgres(db.url, { max: 8, onnotice: () => {}, prepare: false });
    try {
      await Promise.all(runs.flatMap((run) => [
        other`select switchyard.rerun_run(${run}::uuid, 'slow')`,
        Promise.resolve().then(() => gates.get(run)!()),
      ]));
    } finally {
      await other.end();
    }
    for (const run of runs) {
      const status = await client.waitForRun(run);
      assert.equal(status.status, 'completed', `${run} completes`);
      const [s] = await sql`select output from switchyard.step_states
                             where run_id = ${run} and step_slug = 'slow'`;
      assert.match(s.output, /^new attempt [2-9]$/, "the output is the new attempt's");
      const [t] = await sql`select attempts_count from switchyard.step_tasks
                             where run_id = ${run} and step_slug = 'slow'`;
      assert.ok(t.attempts_count >= 2, 'the new attempt counts on from the old one');
      const seen = attemptsSeen.get(run)!;
      assert.equal(seen[0], 1, 'the old attempt was attempt 1');
      assert.equal(seen.at(-1), t.attempts_count, "the output is the last attempt's");
    }
  } finally {
    for (const open of gates.values()) open();
    await w.stop();
  }
});

Deno.test('fork copies the outputs not downstream of the step, runs the rest, with lineage; the original is untouched', async () => {
  const run = await client.startFlow('rcChain', { n: 5 });
  assert.equal((await client.waitForRun(run)).status, 'completed');
  const was = await snapshot(run);
  const [{ fork }] = await sql`select switchyard.fork_run(${run}::uuid, 'b',
                                 ${sql.json({ n: 5, tag: 'fork' })}::jsonb) as fork`;
  assert.equal((await client.waitForRun(fork)).status, 'completed');
  const [row] = await sql`select forked_from::text, from_step, flow_slug from switchyard.runs
                           where run_id = ${fork}`;
  assert.deepEqual({ ...row }, { forked_from: run, from_step: 'b', flow_slug: 'rcChain' });
  assert.equal(called(fork, 'a'), 0, 'a copied');
  assert.equal(called(fork, 'd'), 0, 'd copied');
  assert.equal(called(fork, 'b'), 1);
  assert.equal(called(fork, 'c'), 1);
  const [c] =
    await sql`select output from switchyard.step_states where run_id = ${fork} and step_slug = 'c'`;
  assert.deepEqual(c.output, { c: 60, tag: 'fork' });
  assert.deepEqual(await snapshot(run), was, 'the original is untouched');
  const note = (await events(fork)).find((e) => e.event === 'forked');
  assert.equal(note?.data.forked_from, run);
  assert.deepEqual(note?.data.kept, ['a', 'd']);
  // The client's run record shows the lineage.
  const status = await client.runStatus(fork);
  assert.equal(status?.forkedFrom, run);
  assert.equal(status?.fromStep, 'b');
});

Deno.test('fork while the original is cancelled: both happen, the fork copies only completed steps', async () => {
  const gate: { open?: () => void } = {};
  const held = new Flow<{ id: number }>({ slug: 'rcHeld', maxAttempts: 1 })
    .step({ slug: 'first' }, (_input, ctx) => {
      count(ctx.runId, 'first');
      return 'first';
    })
    .step({ slug: 'second', dependsOn: ['first'] }, async () => {
      // Only the original's attempt waits; the fork's runs through.
      if (!gate.open) await new Promise<void>((r) => (gate.open = r));
      return 'second';
    })
    .step({ slug: 'third', dependsOn: ['second'] }, () => 'third');
  const w = await startWorker(held, { connectionString: db.url, logger: quiet, ...FAST });
  try {
    const run = await client.startFlow('rcHeld', { id: 1 });
    await waitFor('second to run', () => gate.open);
    const other = postgres(db.url, { max: 2, onnotice: () => {}, prepare: false });
    let fork: string;
    try {
      const [forked] = await Promise.all([
        other`select switchyard.fork_run(${run}::uuid, 'third') as id`,
        sql`select switchyard.cancel_run(${run}::uuid, 'cancelled during a fork')`,
      ]);
      fork = forked[0].id;
    } finally {
      await other.end();
    }
    gate.open!();
    assert.equal((await client.waitForRun(run)).status, 'cancelled');
    // What the fork kept, as it recorded it: first, never second (running when it forked).
    const note = (await events(fork)).find((e) => e.event === 'forked');
    assert.deepEqual(note?.data.kept, ['first']);
    assert.equal(called(fork, 'first'), 0, 'first copied, not run');
    const status = await client.waitForRun(fork);
    assert.equal(status.status, 'completed');
  } finally {
    gate.open?.();
    await w.stop();
  }
});

// Versions of alias rcFlow on one shared queue: V2 fixes b and adds a step; V3 makes a depend on
// a new step and has no b.
const gateA: { open?: () => void } = {};
const v1 = new Flow<{ n: number }>({ slug: 'rcFlowV1', maxAttempts: 1, timeout: 60 })
  .step({ slug: 'a' }, async (input) => {
    // A negative n holds a's attempt open until the test lets it go.
    if (input.n < 0) await new Promise<void>((r) => (gateA.open = r));
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => {
    throw new Error(`V1 b is broken (${input.a})`);
  });
const v2 = new Flow<{ n: number }>({ slug: 'rcFlowV2', maxAttempts: 1 })
  .step({ slug: 'a' }, (input) => input.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a * 100)
  .step({ slug: 'audit', dependsOn: ['b'] }, (input) => `audited ${input.b}`);
const v3 = new Flow<{ n: number }>({ slug: 'rcFlowV3', maxAttempts: 1 })
  .step({ slug: 'z' }, () => 1)
  .step({ slug: 'a', dependsOn: ['z'] }, (input) => input.z)
  .step({ slug: 'c', dependsOn: ['a'] }, (input) => input.a);
const deployed = [
  defineDeployedFlow(routeFlow(v1, { queues: { a: 'rc_flow', b: 'rc_flow' } }), {
    alias: 'rcFlow',
  }),
  defineDeployedFlow(routeFlow(v2, { queues: { a: 'rc_flow', b: 'rc_flow', audit: 'rc_flow' } }), {
    alias: 'rcFlow',
  }),
  defineDeployedFlow(routeFlow(v3, { queues: { z: 'rc_flow', a: 'rc_flow', c: 'rc_flow' } }), {
    alias: 'rcFlow',
  }),
] as const;

let compiled = false;
async function compileVersions() {
  if (compiled) return;
  compiled = true;
  for (const d of deployed) {
    await sql`select switchyard.ensure_flow(${sql.json(toPlacement(d).shape as never)}::jsonb)`;
  }
  await sql`select switchyard.declare_alias('rcFlow', array['rcFlowV1', 'rcFlowV2', 'rcFlowV3'])`;
  await sql`select switchyard.activate_alias('rcFlow', 'rcFlowV1')`;
}

Deno.test('fork onto another version only when SQL proves it, naming each incompatibility', async () => {
  await compileVersions();
  const w = await startWorker(deployed, {
    connectionString: db.url,
    queueName: 'rc_flow',
    logger: quiet,
    ...FAST,
  });
  try {
    const run = await client.startFlow('rcFlowV1', { n: 7 });
    assert.equal((await client.waitForRun(run)).status, 'failed');
    const [{ before }] = await sql`select count(*)::int as before from switchyard.runs`;
    const r = await refusal(sql`select switchyard.fork_run(${run}::uuid, 'b', null, 'rcFlowV3')`);
    assert.equal(r.code, '22023');
    assert.equal(r.detail.rule, 'version_incompatible');
    assert.deepEqual(r.detail.problems, [
      'step "a" depends on [] in "rcFlowV1" but on [z] in "rcFlowV3"',
      'step "b" must run but "rcFlowV3" has no step "b"',
    ]);
    assert.match(r.message, /cannot go onto "rcFlowV3" from step "b": step "a" depends on/);
    const [{ after }] = await sql`select count(*)::int as after from switchyard.runs`;
    assert.equal(after, before, 'no run created');
    const other = await refusal(
      sql`select switchyard.fork_run(${run}::uuid, 'b', null, 'rcChain')`,
    );
    assert.equal(other.detail.rule, 'flow_other_alias');
    // Onto V2 (same a and b, plus audit): a is copied, b and audit run on V2.
    const [{ fork }] =
      await sql`select switchyard.fork_run(${run}::uuid, 'b', null, 'rcFlowV2') as fork`;
    const done = await client.waitForRun(fork);
    assert.equal(done.status, 'completed');
    const outs = await sql`select step_slug, output from switchyard.step_states
                            where run_id = ${fork} order by step_slug`;
    assert.deepEqual(outs.map((o) => [o.step_slug, o.output]), [
      ['a', 7],
      ['audit', 'audited 700'],
      ['b', 700],
    ]);
  } finally {
    await w.stop();
  }
});

Deno.test('move a started run onto a newer version: proven, kept steps kept, the rest on the new shape, drain counts move', async () => {
  await compileVersions();
  // No worker on rc_flow: a's task stays queued.
  const run = await client.startFlow('rcFlowV1', { n: 3 });
  const drain = async (flow: string) =>
    Number(
      (await sql`select coalesce(sum(started_runs), 0)::int as n from switchyard.drain_status('rc_flow')
                  where flow_slug = ${flow}`)[0].n,
    );
  const onV1 = await drain('rcFlowV1');
  assert.ok(onV1 >= 1);
  const was = await snapshot(run);
  const r = await refusal(sql`select switchyard.move_run(${run}::uuid, 'rcFlowV3')`);
  assert.equal(r.detail.rule, 'version_incompatible');
  assert.deepEqual(r.detail.problems, [
    'step "a" depends on [] in "rcFlowV1" but on [z] in "rcFlowV3"',
  ]);
  assert.deepEqual(await snapshot(run), was, 'nothing changed');
  const [{ moved }] =
    await sql`select switchyard.move_run(${run}::uuid, 'rcFlowV2', 'ops') as moved`;
  assert.equal(moved, true);
  const [{ again }] = await sql`select switchyard.move_run(${run}::uuid, 'rcFlowV2') as again`;
  assert.equal(again, false, 'a repeat changes nothing');
  assert.equal(await drain('rcFlowV1'), onV1 - 1, 'V1 counts one run less');
  assert.ok((await drain('rcFlowV2')) >= 1, 'V2 counts it');
  const [row] =
    await sql`select flow_slug, remaining_steps from switchyard.runs where run_id = ${run}`;
  assert.deepEqual({ ...row }, { flow_slug: 'rcFlowV2', remaining_steps: 3 });
  const note = (await events(run)).find((e) => e.event === 'moved');
  assert.deepEqual(note?.data, {
    by: 'ops',
    from_flow: 'rcFlowV1',
    to_flow: 'rcFlowV2',
    running: 0,
  });
  const w = await startWorker(deployed, {
    connectionString: db.url,
    queueName: 'rc_flow',
    logger: quiet,
    ...FAST,
  });
  try {
    const done = await client.waitForRun(run);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.output, { audit: 'audited 300' });

    // Pause, let the running task finish, move, resume: still a way (the move no longer needs
    // it: see the next test).
    const held = await client.startFlow('rcFlowV1', { n: -1 });
    await waitFor('a to run', () => gateA.open);
    await sql`select switchyard.pause_run(${held}::uuid, 'moving it')`;
    gateA.open!();
    await waitFor(
      'a to finish',
      async () =>
        (await sql`select 1 from switchyard.step_states where run_id = ${held}
                  and step_slug = 'a' and status = 'completed'`).length > 0,
    );
    // b (broken on V1) is queued while the run is paused: moved before any worker claims it.
    await sql`select switchyard.move_run(${held}::uuid, 'rcFlowV2')`;
    await sql`select switchyard.resume_run(${held}::uuid)`;
    const ok = await client.waitForRun(held);
    assert.equal(ok.status, 'completed');
    assert.deepEqual(ok.output, { audit: 'audited -100' });
  } finally {
    await w.stop();
  }
  const ended = await refusal(sql`select switchyard.move_run(${run}::uuid, 'rcFlowV1')`);
  assert.equal(ended.detail.rule, 'run_not_started');
});

// Versions of alias rcMove on queues of their own, each with its own worker: a task V1's worker
// runs when its run moves finishes there; what has not started runs on V2.
const moveGates = new Map<string, () => void>();
const moveCalls = new Map<string, string[]>();
const moveCall = (run: string, what: string) =>
  moveCalls.set(run, [...(moveCalls.get(run) ?? []), what]);
const mv1 = new Flow<{ n: number; fail?: boolean }>({
  slug: 'rcMoveV1',
  maxAttempts: 2,
  baseDelay: 1,
  timeout: 60,
})
  .step({ slug: 'a' }, async (input, ctx) => {
    moveCall(ctx.runId, `V1 a#${ctx.attempt}`);
    await new Promise<void>((r) => moveGates.set(ctx.runId, r));
    if (input.fail) throw new Error('V1 a failed after the move');
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input, ctx) => {
    moveCall(ctx.runId, 'V1 b');
    return input.a * 10;
  });
const mv2 = new Flow<{ n: number; fail?: boolean }>({
  slug: 'rcMoveV2',
  maxAttempts: 2,
  baseDelay: 1,
})
  .step({ slug: 'a' }, (input, ctx) => {
    moveCall(ctx.runId, `V2 a#${ctx.attempt}`);
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input, ctx) => {
    moveCall(ctx.runId, 'V2 b');
    return input.a * 100;
  })
  .step({ slug: 'audit', dependsOn: ['b'] }, (input) => `audited ${input.b}`);
const moveV1 = defineDeployedFlow(
  routeFlow(mv1, { queues: { a: 'rc_move_v1', b: 'rc_move_v1' } }),
  {
    alias: 'rcMove',
  },
);
const moveV2 = defineDeployedFlow(
  routeFlow(mv2, { queues: { a: 'rc_move_v2', b: 'rc_move_v2', audit: 'rc_move_v2' } }),
  { alias: 'rcMove' },
);

Deno.test('move a run whose task is running: it finishes on its old worker, its completion counts, the rest runs on the new version', async () => {
  for (const d of [moveV1, moveV2]) {
    await sql`select switchyard.ensure_flow(${sql.json(toPlacement(d).shape as never)}::jsonb)`;
  }
  await sql`select switchyard.declare_alias('rcMove', array['rcMoveV1', 'rcMoveV2'])`;
  await sql`select switchyard.activate_alias('rcMove', 'rcMoveV1')`;
  const drainV1 = async () => {
    const [row] = await sql`select state, started_runs::int, queued_tasks::int, started_tasks::int
                              from switchyard.drain_status('rc_move_v1')
                             where flow_slug = 'rcMoveV1'`;
    return { ...row };
  };
  const oldWorker = await startWorker([moveV1], {
    connectionString: db.url,
    queueName: 'rc_move_v1',
    logger: quiet,
    maxConcurrent: 16,
    ...FAST,
  });
  let newWorker: Worker | undefined;
  try {
    // Six runs whose a's answer races their move, three whose a fails after their move.
    const racing = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((n) => client.startFlow('rcMove', { n })),
    );
    const failingRuns = await Promise.all(
      [7, 8, 9].map((n) => client.startFlow('rcMove', { n, fail: true })),
    );
    const all = [...racing, ...failingRuns];
    await waitFor('every a to run on V1', () => all.every((r) => moveGates.has(r)));
    // The fix is deployed: V2 is the alias' target, its worker polls its own queue.
    await sql`select switchyard.activate_alias('rcMove', 'rcMoveV2')`;
    newWorker = await startWorker([moveV2], {
      connectionString: db.url,
      queueName: 'rc_move_v2',
      logger: quiet,
      maxConcurrent: 16,
      ...FAST,
    });

    // Moved while a runs: accepted; a stays V1's, running, until it ends.
    for (const run of failingRuns) {
      const [{ moved }] =
        await sql`select switchyard.move_run(${run}::uuid, 'rcMoveV2', 'ops') as moved`;
      assert.equal(moved, true);
      const note = (await events(run)).find((e) => e.event === 'moved');
      assert.deepEqual(note?.data, {
        by: 'ops',
        from_flow: 'rcMoveV1',
        to_flow: 'rcMoveV2',
        running: 1,
      });
      const [t] = await sql`select flow_slug, queue_name, status from switchyard.step_tasks
                             where run_id = ${run} and step_slug = 'a'`;
      assert.deepEqual({ ...t }, {
        flow_slug: 'rcMoveV1',
        queue_name: 'rc_move_v1',
        status: 'started',
      });
    }
    assert.deepEqual(await drainV1(), {
      state: 'draining',
      started_runs: 6,
      queued_tasks: 0,
      started_tasks: 9,
    }, "V1 still runs the three moved runs' tasks, and the six others");
    // Their a fails on V1 after the move: the retry is V2's, on V2's queue.
    for (const run of failingRuns) moveGates.get(run)!();
    for (const run of failingRuns) {
      const done = await client.waitForRun(run);
      assert.equal(done.status, 'completed', `${run} completes`);
      const n = [7, 8, 9][failingRuns.indexOf(run)];
      assert.deepEqual(done.output, { audit: `audited ${n * 100}` });
      assert.deepEqual(moveCalls.get(run), ['V1 a#1', 'V2 a#2', 'V2 b']);
      const [t] = await sql`select flow_slug, queue_name, attempts_count from switchyard.step_tasks
                             where run_id = ${run} and step_slug = 'a'`;
      assert.deepEqual({ ...t }, {
        flow_slug: 'rcMoveV2',
        queue_name: 'rc_move_v2',
        attempts_count: 2,
      });
    }

    // The six others: each move races the completion of its running a, on its own connection.
    // A run whose a and b both finished on V1 before its move is completed: its move is refused
    // (run_not_started), changing nothing. That is an outcome of the race too.
    const other = postgres(db.url, { max: 6, onnotice: () => {}, prepare: false });
    const moved = new Map<string, boolean>();
    try {
      await Promise.all(racing.flatMap((run) => [
        other`select switchyard.move_run(${run}::uuid, 'rcMoveV2', 'ops')`.then(
          () => moved.set(run, true),
          (e) => {
            if (JSON.parse(e.detail).rule !== 'run_not_started') throw e;
            moved.set(run, false);
          },
        ),
        Promise.resolve().then(() => moveGates.get(run)!()),
      ]));
    } finally {
      await other.end();
    }
    let bOnV1 = 0;
    let endedFirst = 0;
    for (const [i, run] of racing.entries()) {
      const done = await client.waitForRun(run);
      assert.equal(done.status, 'completed', `${run} completes`);
      const seen = moveCalls.get(run)!;
      // a ran once, on V1, and its answer counted: no V2 a, no second attempt.
      assert.deepEqual(seen.filter((c) => c.includes(' a#')), ['V1 a#1']);
      const bs = seen.filter((c) => c.endsWith(' b'));
      assert.equal(bs.length, 1, 'b ran once');
      // b ran on V1 only when a's completion committed and V1's worker claimed b before the move.
      if (bs[0] === 'V1 b') bOnV1++;
      const n = i + 1;
      const log = await events(run);
      assert.equal(log.filter((e) => e.event === 'completed' && e.step_slug === 'a').length, 1);
      if (moved.get(run)) {
        assert.deepEqual(done.output, {
          audit: `audited ${bs[0] === 'V1 b' ? n * 10 : n * 100}`,
        });
        assert.equal(log.filter((e) => e.event === 'moved').length, 1);
      } else {
        endedFirst++;
        assert.deepEqual(done.output, { b: n * 10 }, 'ended on V1 before the move');
        assert.equal(bs[0], 'V1 b');
        assert.equal(log.filter((e) => e.event === 'moved').length, 0);
      }
      const [t] = await sql`select status, attempts_count from switchyard.step_tasks
                             where run_id = ${run} and step_slug = 'a'`;
      assert.deepEqual({ ...t }, { status: 'completed', attempts_count: 1 });
    }
    console.log(
      `move raced a's completion 6 times: b ran on V1 ${bOnV1} time(s), on V2 ${6 - bOnV1}; ` +
        `${endedFirst} run(s) ended before their move`,
    );
    // V1 drained when its last running task ended.
    assert.deepEqual(await drainV1(), {
      state: 'drained',
      started_runs: 0,
      queued_tasks: 0,
      started_tasks: 0,
    });
  } finally {
    for (const open of moveGates.values()) open();
    await newWorker?.stop();
    await oldWorker.stop();
  }
});

Deno.test('pause while a task runs: it finishes, nothing more is claimed; resume goes on', async () => {
  const gate: { open?: () => void } = {};
  const paused = new Flow<{ id: number }>({ slug: 'rcPause', maxAttempts: 1 })
    .step({ slug: 'first' }, async () => {
      await new Promise<void>((r) => (gate.open = r));
      return 1;
    })
    .step({ slug: 'second', dependsOn: ['first'] }, (input) => input.first + 1);
  const w = await startWorker(paused, { connectionString: db.url, logger: quiet, ...FAST });
  try {
    const run = await client.startFlow('rcPause', { id: 1 });
    await waitFor('first to run', () => gate.open);
    assert.equal(
      (await sql`select switchyard.pause_run(${run}::uuid, 'look at it', 'bob') as p`)[0].p,
      true,
    );
    assert.equal((await sql`select switchyard.pause_run(${run}::uuid) as p`)[0].p, false);
    gate.open!();
    // The worker reads second's message and the claim hides it again: never started.
    // The worker reads second's message and the claim hides it again for the pause.
    await waitFor("the claim to hide second's message", async () => {
      const [task] = await sql`select queue_name, message_id::text from switchyard.step_tasks
                                where run_id = ${run} and step_slug = 'second'`;
      if (!task) return false;
      const [m] = await sql.unsafe(
        `select read_ct, vt > now() + interval '30 minutes' as hidden
           from pgmq.q_${task.queue_name} where msg_id = $1`,
        [task.message_id],
      );
      return m?.read_ct > 0 && m.hidden;
    });
    const [t] = await sql`select status, attempts_count from switchyard.step_tasks
                           where run_id = ${run} and step_slug = 'second'`;
    assert.deepEqual({ ...t }, { status: 'queued', attempts_count: 0 }, 'no attempt used');
    assert.equal((await client.runStatus(run))?.pauseReason, 'look at it');
    await sql`select switchyard.resume_run(${run}::uuid, 'bob')`;
    const done = await client.waitForRun(run);
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      (await events(run)).filter((e) => e.event === 'paused' || e.event === 'resumed').map((
        e,
      ) => [e.event, e.data]),
      [['paused', { reason: 'look at it', by: 'bob' }], ['resumed', { by: 'bob', requeued: 0 }]],
    );
  } finally {
    gate.open?.();
    await w.stop();
  }
});

Deno.test('whenExhausted pause: the run pauses instead of failing; resume retries the step', async () => {
  let broken = true;
  const flow = new Flow<{ id: number }>({ slug: 'rcExhaust', maxAttempts: 2, baseDelay: 1 })
    .step({ slug: 'fetch', whenExhausted: 'pause' }, () => {
      if (broken) throw new Error('upstream down');
      return 'fetched';
    })
    .step({ slug: 'use', dependsOn: ['fetch'] }, (input) => `used ${input.fetch}`);
  const w = await startWorker(flow, { connectionString: db.url, logger: quiet, ...FAST });
  try {
    const run = await client.startFlow('rcExhaust', { id: 1 });
    await waitFor('the run to pause', async () => (await client.runStatus(run))?.pausedAt);
    const status = await client.runStatus(run);
    assert.equal(status?.status, 'started', 'paused, not failed');
    assert.match(
      status!.pauseReason!,
      /whenExhausted pause: step "fetch" failed after 2 attempt\(s\): .*upstream down/,
    );
    const [t] = await sql`select status, attempts_count from switchyard.step_tasks
                           where run_id = ${run} and step_slug = 'fetch'`;
    assert.deepEqual({ ...t }, { status: 'failed', attempts_count: 2 });
    broken = false;
    const [{ n }] = await sql`select switchyard.resume_run(${run}::uuid) as n`;
    assert.equal(n, 1, 'fetch queued again');
    const done = await client.waitForRun(run);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.output, { use: 'used fetched' });
    const [again] = await sql`select attempts_count, max_attempts from switchyard.step_tasks
                               where run_id = ${run} and step_slug = 'fetch'`;
    assert.deepEqual({ ...again }, { attempts_count: 3, max_attempts: 4 });
  } finally {
    await w.stop();
  }
});

Deno.test('bulk rerun of 1,000 failed runs from two connections: dry run counts, each run once, a repeat changes nothing', async () => {
  const flow = new Flow<{ i: number }>({ slug: 'rcBulk', maxAttempts: 1 })
    .step({ slug: 'only' }, () => {
      throw new Error('bulk bug 42');
    });
  const w = await startWorker(
    flow,
    { connectionString: db.url, logger: quiet, maxConcurrent: 50, batchSize: 50, ...FAST } as never,
  );
  try {
    await sql`select switchyard.start_flow('rcBulk', jsonb_build_object('i', g)) from generate_series(1, 1000) g`;
    await waitFor(
      '1,000 failed runs',
      async () =>
        (await sql`select count(*)::int as n from switchyard.runs where flow_slug = 'rcBulk'
                  and status = 'failed'`)[0].n === 1000,
      { timeoutMs: 120_000 },
    );
  } finally {
    await w.stop();
  }
  const filter = { flow: 'rcBulk', status: 'failed', error: 'BUG 42' };
  const dry = await sql`select outcome from switchyard.bulk_run_action('rerun', ${filter.flow},
                          ${filter.status}, null, null, ${filter.error}, 'only', max_runs => 10000)`;
  assert.equal(dry.length, 1000);
  assert.ok(dry.every((r) => r.outcome === 'would rerun'));
  const [{ failed }] = await sql`select count(*)::int as failed from switchyard.runs
                                  where flow_slug = 'rcBulk' and status = 'failed'`;
  assert.equal(failed, 1000, 'the dry run changed nothing');
  // Two connections, each in pages of 300 resumed by the last run id.
  const bulk = async (conn: postgres.Sql) => {
    const acted: string[] = [];
    let after: string | null = null;
    for (;;) {
      const rows: { run_id: string; outcome: string }[] = await conn`
        select run_id::text, outcome from switchyard.bulk_run_action('rerun', ${filter.flow},
          ${filter.status}, null, null, ${filter.error}, 'only', dry_run => false,
          max_runs => 300, after_run => ${after}::uuid, actor => 'bulk')`;
      if (rows.length === 0) return acted;
      acted.push(...rows.filter((r) => r.outcome === 'rerun').map((r) => r.run_id));
      after = rows[rows.length - 1].run_id;
    }
  };
  const one = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  const two = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  try {
    let [a, b] = await Promise.all([bulk(one), bulk(two)]);
    // A run answered 'busy' by one connection was rerun by the other (both committed).
    const all = [...a, ...b];
    assert.equal(new Set(all).size, all.length, 'no run rerun twice');
    const [{ n }] = await sql`select count(*)::int as n from switchyard.run_events e
                               join switchyard.runs r on r.run_id = e.run_id
                              where r.flow_slug = 'rcBulk' and e.event = 'rerun'`;
    assert.equal(n, 1000, 'one rerun event per run');
    assert.equal(all.length, 1000, 'every run rerun once');
    [a, b] = await Promise.all([bulk(one), bulk(two)]);
    assert.equal(a.length + b.length, 0, 'a repeat matches nothing');
  } finally {
    await one.end();
    await two.end();
  }
  const bad = await refusal(sql`select * from switchyard.bulk_run_action('delete')`);
  assert.equal(bad.detail.rule, 'action_unknown');
  const big = await refusal(
    sql`select * from switchyard.bulk_run_action('rerun', from_step => 'only', max_runs => 20000)`,
  );
  assert.equal(big.detail.rule, 'integer_range');
});

function task(name: string, args: string[]) {
  return deno(['task', '-q', name, ...args], {
    cwd: new URL('../..', import.meta.url).pathname,
    clearEnv: true,
    env: { ...envWithout('SUPABASE_DB_URL'), NO_COLOR: '1', DATABASE_URL: db.url },
  });
}

Deno.test('the typed client bulk-reruns: a dry run by default, as ops does; then applied, each once', async () => {
  const typed = createClient({ connectionString: db.url });
  try {
    const since = new Date(Date.now() - 1000);
    for (const n of [31, 32]) failingN.add(n);
    const runs = await Promise.all([31, 32].map((n) => client.startFlow('rcChain', { n })));
    for (const run of runs) assert.equal((await client.waitForRun(run)).status, 'failed');
    for (const n of [31, 32]) failingN.delete(n);
    const filter = {
      flowOrAlias: 'rcChain',
      status: 'failed',
      startedFrom: since,
      errorContains: 'B IS BROKEN',
      fromStep: 'b',
    } as const;
    const before = await Promise.all(runs.map(snapshot));
    const dry = await typed.bulk('rerun', filter);
    assert.deepEqual(
      dry.map((o) => o.outcome).sort(),
      ['would rerun', 'would rerun'],
    );
    assert.deepEqual(new Set(dry.map((o) => o.runId)), new Set(runs));
    assert.deepEqual(await bulkRunAction(client.sql, 'rerun', filter), dry, 'ops answers the same');
    assert.deepEqual(await Promise.all(runs.map(snapshot)), before, 'a dry run changes nothing');
    const bad = await typed.bulk('rerun', { ...filter, fromStep: 'nope' });
    assert.deepEqual(bad.map((o) => o.outcome), ['refused', 'refused']);
    assert.match(String(bad[0].detail), /has no step .*nope/);
    const applied = await typed.bulk('rerun', { ...filter, apply: true });
    assert.deepEqual(applied.map((o) => o.outcome), ['rerun', 'rerun']);
    for (const run of runs) assert.equal((await client.waitForRun(run)).status, 'completed');
    assert.deepEqual(
      await typed.bulk('rerun', { ...filter, apply: true }),
      [],
      'a repeat matches none',
    );
    await assert.rejects(
      typed.bulk('rerun', { ...filter, afterRun: 'not-a-run' }),
      /afterRun "not-a-run" is invalid/,
    );
  } finally {
    await typed.close();
  }
});

Deno.test("the operator's sequence from the CLI: rerun every run that failed on a bug from its step, move a waiting run onto the fixed version", async () => {
  await compileVersions();
  // Three runs fail on b's bug; the fix is deployed (same shape, fixed handler).
  for (const n of [11, 12, 13]) failingN.add(n);
  const runs = await Promise.all([11, 12, 13].map((n) => client.startFlow('rcChain', { n })));
  for (const run of runs) assert.equal((await client.waitForRun(run)).status, 'failed');
  for (const n of [11, 12, 13]) failingN.delete(n);
  const dry = await task('rerun', [
    '--flow',
    'rcChain',
    '--status',
    'failed',
    '--error',
    'B IS BROKEN',
    '--from',
    'b',
  ]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.stdout.trim(), 'dry run: 3 would rerun');
  const applied = await task('rerun', [
    '--flow',
    'rcChain',
    '--status',
    'failed',
    '--error',
    'b is broken',
    '--from',
    'b',
    '--apply',
  ]);
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(applied.stdout.trim(), '3 rerun');
  for (const run of runs) assert.equal((await client.waitForRun(run)).status, 'completed');
  const note = (await events(runs[0])).find((e) => e.event === 'rerun');
  assert.match(String(note?.data.by), /rerun/);
  const again = await task('rerun', [
    '--flow',
    'rcChain',
    '--status',
    'failed',
    '--error',
    'b is broken',
    '--from',
    'b',
    '--apply',
  ]);
  assert.equal(again.stdout.trim(), 'no run matched');

  // A run still waiting on V1 moves onto V2, where b is fixed.
  const waiting = await client.startFlow('rcFlowV1', { n: 4 });
  const moved = await task('move', [waiting, '--to', 'rcFlowV2']);
  assert.equal(moved.code, 0, moved.stderr);
  assert.equal(moved.stdout.trim(), `moved run ${waiting} onto rcFlowV2`);
  const refused = await task('move', [waiting, '--to', 'rcFlowV3']);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /^error: move_run: run \S+ cannot go onto "rcFlowV3": step "a" depends on/,
  );
  const usage = await task('fork', [waiting]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^error: missing --from STEP/);
  const w = await startWorker(deployed, {
    connectionString: db.url,
    queueName: 'rc_flow',
    logger: quiet,
    ...FAST,
  });
  try {
    assert.deepEqual((await client.waitForRun(waiting)).output, { audit: 'audited 400' });
  } finally {
    await w.stop();
  }
  const forked = await task('fork', [waiting, '--from', 'b', '--input', '{"n": 5}']);
  assert.equal(forked.code, 0, forked.stderr);
  assert.match(forked.stdout, new RegExp(`^forked run ${waiting} from b as [0-9a-f-]{36}`));

  // One run paused and resumed by its id (a function's name pauses the function).
  const later = await client.startFlow('rcChain', { n: 6 }, {
    startAt: new Date(Date.now() + 3_600_000),
  });
  const paused = await task('pause', [later, '--reason', 'vendor down']);
  assert.equal(paused.code, 0, paused.stderr);
  assert.equal(paused.stdout.trim(), `paused run ${later}: vendor down`);
  const [p] =
    await sql`select paused_at, pause_reason from switchyard.runs where run_id = ${later}`;
  assert.ok(p.paused_at);
  assert.equal(p.pause_reason, 'vendor down');
  const note2 = (await events(later)).find((e) => e.event === 'paused');
  assert.match(String(note2?.data.by), /pause/);
  const twice = await task('pause', [later]);
  assert.equal(twice.stdout.trim(), `run ${later} was already paused (the first reason is kept)`);
  const resumed = await task('resume', [later.toUpperCase()]);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(resumed.stdout.trim(), `resumed run ${later}`);
  assert.equal(
    (await sql`select paused_at from switchyard.runs where run_id = ${later}`)[0]
      .paused_at,
    null,
  );
  const ended = await task('pause', [runs[0]]);
  assert.equal(ended.code, 1);
  assert.match(ended.stderr, new RegExp(`run ${runs[0]} is completed`));
  const unknownRun = await task('resume', [crypto.randomUUID()]);
  assert.equal(unknownRun.code, 1);
  assert.match(unknownRun.stderr, /does not exist/);
  const badOption = await task('resume', ['billing-worker', '--actor', 'x']);
  assert.equal(badOption.code, 2);
  assert.match(badOption.stderr, /--actor is for a run/);
  const help = await task('pause', ['--help']);
  assert.match(help.stdout, /<run> \[--reason TEXT\]/);
  await sql`select switchyard.cancel_run(${later}::uuid, 'test over')`;
});

// Issue 41's "Done when", walked on a real database with a worker per version: V1's b has a bug;
// the fix is V2 (b fixed), deployed beside it. Every run that failed on the bug is rerun from the
// failing step onto V2, and the runs still going (their a running on V1's worker) move onto V2.
const doneGates = new Map<string, () => void>();
const doneV1 = new Flow<{ n: number; hold?: boolean }>({
  slug: 'rcDoneV1',
  maxAttempts: 1,
  timeout: 120,
})
  .step({ slug: 'a' }, async (input, ctx) => {
    if (input.hold) await new Promise<void>((r) => doneGates.set(ctx.runId, r));
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => {
    throw new Error(`b bug: cannot charge ${input.a}`);
  });
const doneV2 = new Flow<{ n: number; hold?: boolean }>({ slug: 'rcDoneV2', maxAttempts: 1 })
  .step({ slug: 'a' }, (input) => input.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => `charged ${input.a}`);

Deno.test('done when: fix a handler bug, deploy, rerun every failed run from the failing step, move the running ones', async () => {
  const v1Deployed = defineDeployedFlow(
    routeFlow(doneV1, { queues: { a: 'rc_done_v1', b: 'rc_done_v1' } }),
    {
      alias: 'rcDone',
    },
  );
  const v2Deployed = defineDeployedFlow(
    routeFlow(doneV2, { queues: { a: 'rc_done_v2', b: 'rc_done_v2' } }),
    {
      alias: 'rcDone',
    },
  );
  await sql`select switchyard.ensure_flow(${
    sql.json(toPlacement(v1Deployed).shape as never)
  }::jsonb)`;
  await sql`select switchyard.declare_alias('rcDone', array['rcDoneV1'])`;
  await sql`select switchyard.activate_alias('rcDone', 'rcDoneV1')`;
  const counts = async () =>
    Object.fromEntries(
      (await sql`select flow_slug || ' ' || status as k, count(*)::int as n from switchyard.runs
                  where flow_slug like 'rcDone%' group by 1 order by 1`).map((r) => [r.k, r.n]),
    );
  const drainV1 = async () => {
    const [row] = await sql`select state, started_runs::int, started_tasks::int
                              from switchyard.drain_status('rc_done_v1') where flow_slug = 'rcDoneV1'`;
    return `${row.state} (started runs ${row.started_runs}, running tasks ${row.started_tasks})`;
  };
  const oldWorker = await startWorker([v1Deployed], {
    connectionString: db.url,
    queueName: 'rc_done_v1',
    logger: quiet,
    maxConcurrent: 16,
    ...FAST,
  });
  let newWorker: Worker | undefined;
  try {
    const failed = await Promise.all([1, 2, 3, 4, 5].map((n) => client.startFlow('rcDone', { n })));
    for (const run of failed) assert.equal((await client.waitForRun(run)).status, 'failed');
    const going = await Promise.all(
      [6, 7, 8].map((n) => client.startFlow('rcDone', { n, hold: true })),
    );
    await waitFor('a of the going runs to run on V1', () => going.every((r) => doneGates.has(r)));
    const before = await counts();
    assert.deepEqual(before, { 'rcDoneV1 failed': 5, 'rcDoneV1 started': 3 });
    console.log(`before the fix: ${JSON.stringify(before)}; V1 ${await drainV1()}`);

    // The fix is deployed: V2 compiled and active, its worker on its own queue.
    await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(v2Deployed).shape as never)
    }::jsonb)`;
    await sql`select switchyard.declare_alias('rcDone', array['rcDoneV1', 'rcDoneV2'])`;
    await sql`select switchyard.activate_alias('rcDone', 'rcDoneV2')`;
    newWorker = await startWorker([v2Deployed], {
      connectionString: db.url,
      queueName: 'rc_done_v2',
      logger: quiet,
      maxConcurrent: 16,
      ...FAST,
    });

    // Rerun every run that failed on the bug from the failing step, onto the fixed version.
    const filter = ['--flow', 'rcDone', '--status', 'failed', '--error', 'b bug', '--from', 'b'];
    const dry = await task('rerun', [...filter, '--to', 'rcDoneV2']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stdout.trim(), 'dry run: 5 would rerun onto rcDoneV2');
    assert.deepEqual(await counts(), before, 'the dry run changed nothing');
    const rerun = await task('rerun', [...filter, '--to', 'rcDoneV2', '--apply']);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.equal(rerun.stdout.trim(), '5 rerun onto rcDoneV2');
    console.log(
      `$ switchyard rerun ${filter.join(' ')} --to rcDoneV2 --apply\n${rerun.stdout.trim()}`,
    );
    // Move the runs still going: their a runs on V1's worker and finishes there.
    const move = ['--flow', 'rcDoneV1', '--status', 'started', '--to', 'rcDoneV2', '--apply'];
    const moved = await task('move', move);
    assert.equal(moved.code, 0, moved.stderr);
    assert.equal(moved.stdout.trim(), '3 moved');
    console.log(`$ switchyard move ${move.join(' ')}\n${moved.stdout.trim()}`);
    console.log(`after the commands: ${JSON.stringify(await counts())}; V1 ${await drainV1()}`);
    assert.match(await drainV1(), /^draining \(started runs 0, running tasks 3\)/);

    for (const run of going) doneGates.get(run)!();
    for (const [i, run] of [...failed, ...going].entries()) {
      const done = await client.waitForRun(run);
      assert.equal(done.status, 'completed', `${run} completes`);
      assert.deepEqual(done.output, { b: `charged ${i + 1}` });
    }
    const after = await counts();
    assert.deepEqual(after, { 'rcDoneV2 completed': 8 });
    // The failed runs kept a's output (V1's), the going ones' a answered on V1 and counted once.
    const [{ reruns }] = await sql`select count(*)::int as reruns from switchyard.run_events
      where event = 'rerun' and run_id = any(${failed}::uuid[])`;
    assert.equal(reruns, 5);
    const aTasks = await sql`select flow_slug, attempts_count from switchyard.step_tasks
      where step_slug = 'a' and run_id = any(${going}::uuid[])`;
    assert.deepEqual(aTasks.map((t) => [t.flow_slug, t.attempts_count]), [
      ['rcDoneV1', 1],
      ['rcDoneV1', 1],
      ['rcDoneV1', 1],
    ]);
    assert.match(await drainV1(), /^drained/);
    console.log(`after the workers: ${JSON.stringify(after)}; V1 ${await drainV1()}`);
  } finally {
    for (const open of doneGates.values()) open();
    await newWorker?.stop();
    await oldWorker.stop();
  }
});

// A move inside a rollout fence: V1's function is fenced (disabled, its worker deprecated) while
// a's task still runs on it; the operator moves the runs onto V2 meanwhile. The fence still
// waits for the running task (it is V1's worker's), nothing is claimed while fenced, and after
// the fence the new registry's worker runs the rest on V2.
const fenceGates = new Map<string, () => void>();
const fenceV1 = new Flow<{ n: number; hold?: boolean }>({
  slug: 'rcFenceV1',
  maxAttempts: 1,
  timeout: 120,
})
  .step({ slug: 'a' }, async (input, ctx) => {
    if (input.hold) await new Promise<void>((r) => fenceGates.set(ctx.runId, r));
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => `V1 ${input.a}`);
const fenceV2 = new Flow<{ n: number; hold?: boolean }>({ slug: 'rcFenceV2', maxAttempts: 1 })
  .step({ slug: 'a' }, (input) => input.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => `V2 ${input.a}`);

Deno.test('a move inside a rollout fence: the fence waits for the running task, the rest runs on V2 after it', async () => {
  const v1 = defineDeployedFlow(routeFlow(fenceV1, { queues: { a: 'rc_fence', b: 'rc_fence' } }), {
    alias: 'rcFence',
  });
  const v2 = defineDeployedFlow(routeFlow(fenceV2, { queues: { a: 'rc_fence', b: 'rc_fence' } }), {
    alias: 'rcFence',
  });
  for (const d of [v1, v2]) {
    await sql`select switchyard.ensure_flow(${sql.json(toPlacement(d).shape as never)}::jsonb)`;
  }
  await sql`select switchyard.declare_alias('rcFence', array['rcFenceV1', 'rcFenceV2'])`;
  await sql`select switchyard.activate_alias('rcFence', 'rcFenceV1')`;
  const options = {
    connectionString: db.url,
    queueName: 'rc_fence' as const,
    logger: quiet,
    ...FAST,
  };
  const old = await startWorker([v1], { ...options, maxConcurrent: 1 });
  let next: Worker | undefined;
  try {
    // One run's a runs (the worker's one slot); the other's waits in the queue.
    const running = await client.startFlow('rcFenceV1', { n: 1, hold: true });
    await waitFor('a to run', () => fenceGates.has(running));
    const waiting = await client.startFlow('rcFenceV1', { n: 2 });
    await fenceBegin(client.sql, ['rc-fence-worker']);
    // The old worker's registry lacks V2 and polls the queue V2 shares: it must have stopped
    // claiming (it sees the fence's deprecation at its next heartbeat) before a moved task can be
    // read there, or the read is unsupported work and pauses its function.
    await waitFor('the fenced worker to stop claiming', () => old.state === 'stopping');
    const busy = (await fenceStatus(client.sql))!;
    assert.equal(busy.quiet, false);
    assert.equal(busy.functions[0].startedTasks, 1);

    // Inside the fence: both runs move onto V2.
    for (const run of [running, waiting]) {
      const r = await moveRun(client.sql, run, 'rcFenceV2', { actor: 'ops' });
      assert.equal(r.changed, true);
    }
    const fenced = (await fenceStatus(client.sql))!;
    assert.equal(fenced.functions[0].startedTasks, 1, 'the running task still holds the fence');
    const tasks = await sql`select run_id, flow_slug, status from switchyard.step_tasks
                             where run_id in (${running}, ${waiting}) and step_slug = 'a'`;
    assert.deepEqual(
      Object.fromEntries(tasks.map((t) => [t.run_id, [t.flow_slug, t.status]])),
      { [running]: ['rcFenceV1', 'started'], [waiting]: ['rcFenceV2', 'queued'] },
    );
    // The running task ends on V1's deprecated worker; then the fence is quiet.
    fenceGates.get(running)!();
    await within(20_000, 'the deprecated worker to stop', old.done);
    const quietNow = await waitForFence(client.sql, { timeoutMs: 20_000, intervalMs: 50 });
    assert.equal(quietNow.quiet, true);
    const [a] = await sql`select status, output from switchyard.step_states
                           where run_id = ${running} and step_slug = 'a'`;
    assert.deepEqual({ ...a }, { status: 'completed', output: 1 }, "a's answer counted");
    // Nothing was claimed while fenced: b of the moved run and a of the waiting one are queued.
    const [open] = await sql`select count(*) filter (where status = 'queued')::int as queued,
                                    count(*) filter (where status = 'started')::int as started
                               from switchyard.step_tasks where run_id in (${running}, ${waiting})`;
    assert.deepEqual({ ...open }, { queued: 2, started: 0 });
    // The replacement registry refuses to start while fenced; after the fence it runs V2.
    await assert.rejects(startWorker([v1, v2], options), FunctionDisabledError);
    await fenceEnd(client.sql);
    next = await startWorker([v1, v2], options);
    assert.deepEqual((await client.waitForRun(running)).output, { b: 'V2 1' });
    assert.deepEqual((await client.waitForRun(waiting)).output, { b: 'V2 2' });
    const [drained] = await sql`select state from switchyard.drain_status('rc_fence')
                                 where flow_slug = 'rcFenceV1'`;
    assert.notEqual(drained.state, 'draining', 'V1 has nothing left');
  } finally {
    for (const open of fenceGates.values()) open();
    await next?.stop();
    await old.stop();
  }
});

// Deleting the version a run moved off while a task of it still runs there takes nothing of
// that run: the running task becomes its run's version's, and its answer counts.
const delGate: { open?: () => void } = {};
const delV1 = new Flow<{ n: number }>({ slug: 'rcDelV1', maxAttempts: 1, timeout: 120 })
  .step({ slug: 'a' }, async (input) => {
    await new Promise<void>((r) => (delGate.open = r));
    return input.n;
  })
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => `V1 ${input.a}`);
const delV2 = new Flow<{ n: number }>({ slug: 'rcDelV2', maxAttempts: 1 })
  .step({ slug: 'a' }, (input) => input.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => `V2 ${input.a}`);

Deno.test('delete_flow of the version a run moved off, while its task still runs there: the run completes on the new one', async () => {
  const deployedDel = [
    defineDeployedFlow(routeFlow(delV1, { queues: { a: 'rc_del', b: 'rc_del' } }), {
      alias: 'rcDel',
    }),
    defineDeployedFlow(routeFlow(delV2, { queues: { a: 'rc_del', b: 'rc_del' } }), {
      alias: 'rcDel',
    }),
  ] as const;
  for (const d of deployedDel) {
    await sql`select switchyard.ensure_flow(${sql.json(toPlacement(d).shape as never)}::jsonb)`;
  }
  await sql`select switchyard.declare_alias('rcDel', array['rcDelV1', 'rcDelV2'])`;
  const w = await startWorker(deployedDel, {
    connectionString: db.url,
    queueName: 'rc_del',
    logger: quiet,
    ...FAST,
  });
  try {
    const run = await client.startFlow('rcDelV1', { n: 9 });
    await waitFor('a to run on V1', () => delGate.open);
    await sql`select switchyard.move_run(${run}::uuid, 'rcDelV2')`;
    await sql`select switchyard.activate_alias('rcDel', 'rcDelV2')`;
    await sql`select switchyard.delete_flow('rcDelV1')`;
    const [t] = await sql`select flow_slug, status from switchyard.step_tasks
                           where run_id = ${run} and step_slug = 'a'`;
    assert.deepEqual({ ...t }, { flow_slug: 'rcDelV2', status: 'started' });
    delGate.open!();
    const done = await client.waitForRun(run, { timeoutMs: 20_000 });
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.output, { b: 'V2 9' });
  } finally {
    delGate.open?.();
    await w.stop();
  }
});

Deno.test('the dashboard reruns, forks, pauses and resumes behind the bearer; refusals name the rule', async () => {
  const secret = 'run-controls-secret';
  const dashboard = createDashboard({
    source: client.sql,
    env: (n) => (n === 'SWITCHYARD_WORKER_SECRET' ? secret : undefined),
  });
  const post = async (
    run: string,
    action: string,
    body: unknown,
    bearer: string | null = secret,
  ) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const response = await dashboard.fetch(
      new Request(`http://127.0.0.1/api/runs/${run}/${action}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      }),
    );
    return { status: response.status, body: await response.json() };
  };
  const run = await client.startFlow('rcChain', { n: 20 });
  assert.equal((await client.waitForRun(run)).status, 'completed');
  const denied = await post(run, 'rerun', { fromStep: 'c' }, null);
  assert.equal(denied.status, 401);
  const bad = await post(run, 'rerun', { fromStep: 'nope' });
  assert.equal(bad.status, 422);
  assert.equal(bad.body.rule, 'step_unknown');
  const shape = await post(run, 'rerun', { fromStep: 'c', inputPatch: [1] });
  assert.equal(shape.status, 400);
  assert.equal(shape.body.parameter, 'inputPatch');
  const ok = await post(run, 'rerun', { fromStep: 'c' });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual(ok.body.result, { runId: run, steps: 1 });
  assert.equal((await client.waitForRun(run)).status, 'completed');
  assert.equal((await events(run)).find((e) => e.event === 'rerun')?.data.by, 'dashboard');
  const forked = await post(run, 'fork', { fromStep: 'd', input: { n: 30 } });
  assert.equal(forked.status, 200);
  const fork = forked.body.result.runId as string;
  assert.equal((await client.runStatus(fork))?.forkedFrom, run);
  const incompatible = await post(run, 'fork', { fromStep: 'b', toFlow: 'rcFlowV2' });
  assert.equal(incompatible.status, 422);
  assert.equal(incompatible.body.rule, 'flow_other_alias');
  const waiting = await client.startFlow('rcChain', { n: 1 }, {
    startAt: new Date(Date.now() + 3_600_000),
  });
  const paused = await post(waiting, 'pause', {});
  assert.deepEqual(paused.body.result, { runId: waiting, changed: true });
  assert.equal((await client.runStatus(waiting))?.pauseReason, 'paused from the dashboard');
  const resumed = await post(waiting, 'resume', {});
  assert.deepEqual(resumed.body.result, { runId: waiting, changed: true, requeued: 0 });
  const notEnded = await post(waiting, 'rerun', { fromStep: 'a' });
  assert.equal(notEnded.status, 409);
  assert.equal(notEnded.body.rule, 'run_not_ended');
  await sql`select switchyard.cancel_run(${waiting}::uuid, 'test over')`;
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await worker?.stop();
  await client.close();
  await db.close();
});
