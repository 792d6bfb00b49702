/**
 * Races during a version switch on one shared queue: v1-only workers and a [v1, v2] worker
 * poll the same queue while v2 runs start, and started tasks are made visible again at random
 * (benign duplicates). Many iterations; `SWITCHYARD_RACE_ITERATIONS` raises the count.
 *
 * @module
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { UnsupportedWorkError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker, type Worker } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const SILENT = { info() {}, warn() {}, error() {} };

const ITERATIONS = Number(Deno.env.get('SWITCHYARD_RACE_ITERATIONS') ?? '12');
if (!Number.isInteger(ITERATIONS) || ITERATIONS < 1) {
  throw new Error(`SWITCHYARD_RACE_ITERATIONS=${ITERATIONS} is invalid: use an integer >= 1`);
}

const db = await createTestDatabase();
const client = untypedClient(db.url);
const sql = db.sql;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)];

/** Which registry executed which task (handlers record it). */
interface Execution {
  who: string;
  flowSlug: string;
  runId: string;
  attempt: number;
}

function version(slug: string, queue: string, alias: string, who: string, log: Execution[]) {
  const flow = new Flow<{ n: number }>({ slug, maxAttempts: 3, timeout: 30 })
    .step({ slug: 'work' }, async (input, ctx) => {
      log.push({ who, flowSlug: ctx.flowSlug, runId: ctx.runId, attempt: ctx.attempt });
      await sleep(Math.random() * 15);
      return { n: input.n, by: slug };
    });
  return defineDeployedFlow(routeFlow(flow, { queues: { work: queue } }), { alias });
}

/** Settles to the rejection reason, or `'resolved'`; `settled` tells whether it has yet. */
function track(worker: Worker) {
  const state = { settled: false, outcome: undefined as unknown };
  worker.done.then(
    () => (state.outcome = 'resolved'),
    (e) => (state.outcome = e),
  ).finally(() => (state.settled = true));
  return state;
}

Deno.test(`version switch: ${ITERATIONS} iterations of v1-only and [v1, v2] workers racing on one queue`, async () => {
  let refusals = 0;
  let duplicatesForced = 0;
  for (let i = 0; i < ITERATIONS; i++) {
    const queue = `race_q${i}`;
    const alias = `race${i}`;
    const v1Slug = `race${i}V1`;
    const v2Slug = `race${i}V2`;
    const oldFn = `race-old-${i}`;
    const newFn = `race-new-${i}`;
    const log: Execution[] = [];
    const oldV1 = version(v1Slug, queue, alias, 'old', log);
    const newV1 = version(v1Slug, queue, alias, 'new', log);
    const newV2 = version(v2Slug, queue, alias, 'new', log);
    const errors = new Map<string, string[]>();
    const workerOptions = (functionName: string) => ({
      ...FAST,
      // Captured, so the test can count the fatal error lines of each worker.
      logger: ((lines: string[]) => ({
        info() {},
        warn() {},
        error: (m: string) => lines.push(m),
      }))(errors.get(functionName) ?? (errors.set(functionName, []).get(functionName)!)),
      connectionString: db.url,
      queueName: queue,
      functionName,
      maxConcurrent: pick([1, 2, 4]),
      batchSize: pick([1, 3, 10]),
      visibilityTimeout: 1,
    });

    // Two v1-only workers of one function, running before v2 exists.
    const olds = [
      await startWorker([oldV1], workerOptions(oldFn)),
      await startWorker([oldV1], workerOptions(oldFn)),
    ];
    const oldStates = olds.map(track);
    let fresh: Worker | undefined;
    let stopForcing = false;
    try {
      const v1Runs = await Promise.all(
        Array.from({ length: 6 }, (_, n) => client.startFlow(alias, { n })),
      );
      // v2 is deployed elsewhere first (compiled, alias moved), as in a rollout.
      await sql`select switchyard.ensure_flow(${sql.json(toPlacement(newV2).shape as never)})`;
      await client.activateAlias(alias, v2Slug);
      const mixed = await Promise.all(
        Array.from(
          { length: 16 },
          (_, n) => client.startFlow(n % 4 === 0 ? v1Slug : alias, { n: 100 + n }),
        ),
      );
      // The new registry's worker boots while the old ones are still polling.
      await sleep(Math.random() * 60);
      fresh = await startWorker([newV1, newV2], workerOptions(newFn));
      const freshState = track(fresh);

      // Benign duplicates: started tasks become visible again while they run. In message order,
      // as the kit locks messages; a deadlock with the kit's statements would still only roll
      // back this helper's own statement, which then tries again.
      const forcer = (async () => {
        while (!stopForcing) {
          try {
            const forced = await sql<{ n: number }[]>`
              select count(*)::int as n
                from (select t.queue_name, t.message_id from switchyard.step_tasks t
                       where t.queue_name = ${queue} and t.status = 'started'
                       order by t.message_id) t,
                     lateral pgmq.set_vt(t.queue_name, t.message_id, 0)`;
            duplicatesForced += forced[0].n;
          } catch (e) {
            if ((e as { code?: string }).code !== '40P01') throw e;
          }
          await sleep(5 + Math.random() * 20);
        }
      })();
      let forcerError: unknown;
      forcer.catch((e) => (forcerError = e));

      // The old function is paused by a refused batch; both old workers stop.
      await waitFor(
        `iteration ${i}: both old workers to stop`,
        () => oldStates.every((s) => s.settled),
        { timeoutMs: 20_000 },
      );
      // Right after the refusal nothing unsupported was archived or failed: every reported
      // message is still queued, or was completed by the new worker since.
      const refused = oldStates
        .map((s) => s.outcome)
        .filter((o): o is UnsupportedWorkError => o instanceof UnsupportedWorkError);
      assert.ok(refused.length >= 1, `iteration ${i}: an old worker was refused`);
      refusals += refused.length;
      for (const e of refused) {
        assert.equal(e.queueName, queue);
        assert.equal(e.functionName, oldFn);
        assert.deepEqual(e.unsupportedPairs, [`${v2Slug}/work`]);
        assert.ok(e.messageIds.length >= 1);
        const rows = await sql.unsafe<
          {
            flow_slug: string;
            worker_id: string | null;
            status: string;
            in_queue: boolean;
            archived: boolean;
          }[]
        >(
          `select t.flow_slug, t.worker_id::text as worker_id, t.status,
                  exists (select 1 from pgmq.q_${queue} q where q.msg_id = t.message_id) as in_queue,
                  exists (select 1 from pgmq.a_${queue} a where a.msg_id = t.message_id) as archived
             from switchyard.step_tasks t
            where t.queue_name = $1 and t.message_id = any ($2::bigint[])`,
          [queue, pgArray(e.messageIds)],
        );
        assert.equal(rows.length, e.messageIds.length, 'every reported id is a tracked task');
        for (const r of rows) {
          assert.equal(r.flow_slug, v2Slug);
          assert.notEqual(r.status, 'failed');
          assert.ok(
            !olds.some((o) => o.workerId === r.worker_id),
            'an old worker never claimed v2 work',
          );
          // Archived only by its own completion on the new worker, else still in the queue.
          if (r.archived) {
            assert.equal(r.status, 'completed');
            assert.equal(r.worker_id, fresh.workerId);
          } else {
            assert.ok(r.in_queue, 'a refused message stays in its queue');
          }
        }
      }

      // Paused exactly once: the reason is the first refused batch's, not a later one's.
      const [fn] = await sql<{ paused_at: Date; pause_reason: string }[]>`
        select paused_at, pause_reason from switchyard.worker_functions
         where function_name = ${oldFn}`;
      assert.ok(fn.paused_at, 'the old function is paused');
      const reasons = await sql<{ worker_id: string; stop_reason: string; first: boolean }[]>`
        select w.worker_id::text, w.stop_reason, w.deprecated_at = f.paused_at as first
          from switchyard.workers w
          join switchyard.worker_functions f on f.function_name = w.function_name
         where w.function_name = ${oldFn} and w.stop_reason like 'unsupported work%'`;
      assert.equal(reasons.length, refused.length, 'one recorded refusal per refused worker');
      // The refusal that paused the function (same transaction time) wrote the reason; a
      // later refusal (possibly of the same messages, so possibly the same text) did not. Two
      // workers of this process woken by one notification can start their refusing transactions
      // in the same microsecond, so two refusals may share the pause's time (seen once in CI):
      // the pause's reason is then one of theirs. (That exactly one refusal writes the reason is
      // the next test's, with refusals whose reasons differ.)
      const firsts = reasons.filter((r) => r.first);
      assert.ok(firsts.length >= 1, 'a refusal paused the function');
      assert.ok(
        firsts.some((r) => r.stop_reason === fn.pause_reason),
        `the pause's reason is the first refusal's: ${fn.pause_reason}`,
      );
      assert.doesNotMatch(fn.pause_reason, /"n"|by/, 'never a message body');
      // Each refused worker logged one error line, its UnsupportedWorkError; nobody else did.
      assert.deepEqual(errors.get(oldFn)!.sort(), refused.map((e) => e.message).sort());

      // Everything completes on the new worker; no attempt was spent on refusals or duplicates.
      const runIds = [...v1Runs, ...mixed];
      await waitFor(`iteration ${i}: all runs completed`, async () => {
        const [{ n }] = await sql<{ n: number }[]>`
          select count(*)::int as n from switchyard.runs
           where run_id = any (${pgArray(runIds)}::uuid[]) and status = 'completed'`;
        return n === runIds.length;
      }, { timeoutMs: 30_000 }).catch(async (e) => {
        // Say where the work stands, for a failure in CI.
        const tasks = await sql.unsafe(
          `select t.flow_slug, t.status, t.attempts_count, t.worker_id, q.vt, q.read_ct
             from switchyard.step_tasks t left join pgmq.q_${queue} q on q.msg_id = t.message_id
            where t.queue_name = $1 and t.status <> 'completed'`,
          [queue],
        );
        console.error(`iteration ${i}: unfinished tasks`, tasks, 'new worker', fresh?.workerId);
        console.error('worker errors', Object.fromEntries(errors));
        throw e;
      });
      stopForcing = true;
      await forcer.catch(() => {});
      assert.equal(forcerError, undefined);

      const tasks = await sql<
        { flow_slug: string; status: string; attempts_count: number; message_id: string }[]
      >`select flow_slug, status, attempts_count, message_id::text
          from switchyard.step_tasks where queue_name = ${queue}`;
      assert.equal(tasks.length, runIds.length);
      for (const t of tasks) {
        assert.equal(t.status, 'completed');
        assert.equal(t.attempts_count, 1, `task ${t.message_id} used ${t.attempts_count} attempts`);
      }
      // Archived exactly the completed tasks' messages; nothing left in the queue.
      const archived = await sql.unsafe(`select msg_id::text as id from pgmq.a_${queue}`);
      assert.deepEqual(
        archived.map((r) => r.id).sort(),
        tasks.map((t) => t.message_id).sort(),
      );
      const [{ left }] = await sql.unsafe(`select count(*)::int as left from pgmq.q_${queue}`);
      assert.equal(left, 0);
      // v2 ran only on the new registry, and every task ran once (no recovery, no re-run).
      assert.ok(log.every((x) => x.flowSlug !== v2Slug || x.who === 'new'));
      assert.equal(log.length, runIds.length, 'one execution per task');
      assert.equal(new Set(log.map((x) => x.runId)).size, runIds.length);

      // The healthy worker kept running through every duplicate, and its function is unpaused.
      assert.equal(freshState.settled, false, 'the [v1, v2] worker is still running');
      const [nf] = await sql<{ paused_at: Date | null }[]>`
        select paused_at from switchyard.worker_functions where function_name = ${newFn}`;
      assert.equal(nf.paused_at, null);
      await fresh.stop();
      assert.equal(freshState.outcome, 'resolved');
      assert.deepEqual(errors.get(newFn), []);
    } finally {
      stopForcing = true;
      await Promise.all([...olds, ...(fresh ? [fresh] : [])].map((w) => w.stop()));
    }
  }
  assert.ok(duplicatesForced > 0, 'duplicates were forced');
  console.log(
    `races: ${ITERATIONS} iterations, ${refusals} refused batches, ` +
      `${duplicatesForced} started messages made visible again`,
  );
});

Deno.test('two concurrent unsupported batches pause the function once and keep the first reason', async () => {
  // The real race on the pause flag: two workers of one function refuse at the same moment.
  const flow = new Flow({ slug: 'pauseRaceV2' }).step({ slug: 'work' }, () => 1);
  const routed = routeFlow(flow, { queues: { work: 'pause_race_q' } });
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(routed).shape as never)})`;
  const conns = [0, 1].map(() => postgres(db.url, { max: 1, onnotice: () => {} }));
  try {
    for (let round = 0; round < 10; round++) {
      const fnName = `pause-race-${round}`;
      const workers = [crypto.randomUUID(), crypto.randomUUID()];
      for (const w of workers) {
        await sql`select switchyard.register_worker(${w}::uuid, 'pause_race_q', ${fnName},
          ${pgArray(['someOtherFlow/work'])}::text[])`;
      }
      const runs = [
        await client.startFlow('pauseRaceV2', {}),
        await client.startFlow('pauseRaceV2', {}),
      ];
      const ids = await sql<{ id: string }[]>`
        select message_id::text as id from switchyard.step_tasks
         where run_id = any (${pgArray(runs)}::uuid[]) order by message_id`;
      const results = await Promise.all(workers.map((w, k) =>
        conns[k]<{ disposition: string }[]>`
          select disposition from switchyard.start_tasks('pause_race_q',
            ${pgArray([ids[k].id])}::bigint[], ${w}::uuid,
            ${pgArray(['someOtherFlow/work'])}::text[])`
      ));
      assert.deepEqual(results.map((r) => r.map((x) => x.disposition)), [
        ['unsupported'],
        ['unsupported'],
      ]);
      const [fn] = await sql<{ paused_at: Date; pause_reason: string }[]>`
        select paused_at, pause_reason from switchyard.worker_functions
         where function_name = ${fnName}`;
      const ws = await sql<{ stop_reason: string; deprecated_at: Date }[]>`
        select stop_reason, deprecated_at from switchyard.workers
         where worker_id = any (${pgArray(workers)}::uuid[])`;
      assert.equal(ws.length, 2);
      const matching = ws.filter((w) => w.stop_reason === fn.pause_reason);
      assert.equal(matching.length, 1, 'exactly one refusal set the reason');
      assert.equal(matching[0].deprecated_at.getTime(), fn.paused_at.getTime());
      // Nothing claimed, archived or charged: both tasks queued, attempts 0, messages visible.
      const tasks = await sql<{ status: string; attempts_count: number; visible: boolean }[]>`
        select t.status, t.attempts_count, q.vt <= now() as visible
          from switchyard.step_tasks t join pgmq.q_pause_race_q q on q.msg_id = t.message_id
         where t.run_id = any (${pgArray(runs)}::uuid[])`;
      assert.deepEqual(tasks.map((t) => ({ ...t })), [
        { status: 'queued', attempts_count: 0, visible: true },
        { status: 'queued', attempts_count: 0, visible: true },
      ]);
      // Leave the queue empty for the next round.
      await sql`select switchyard.delete_flow('pauseRaceV2')`;
      await sql`select switchyard.ensure_flow(${sql.json(toPlacement(routed).shape as never)})`;
    }
    const [{ archived }] = await sql<{ archived: number }[]>`
      select count(*)::int as archived from pgmq.a_pause_race_q`;
    assert.equal(archived, 20, 'only delete_flow archived the messages');
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
});

Deno.test('a started task made visible again is a benign duplicate for every other healthy worker', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let executions = 0;
  const flow = new Flow<{ hold: boolean }>({ slug: 'dupStormV1', timeout: 120 })
    .step({ slug: 'work' }, async (input) => {
      executions++;
      if (input.hold) await gate;
      return input.hold;
    });
  const deployed = defineDeployedFlow(routeFlow(flow, { queues: { work: 'dup_storm_q' } }), {
    alias: 'dupStorm',
  });
  const options = (functionName: string, maxConcurrent: number) => ({
    ...FAST,
    connectionString: db.url,
    queueName: 'dup_storm_q' as const,
    functionName,
    maxConcurrent,
    visibilityTimeout: 1,
  });
  // The holder runs one task at a time, so while it holds the gated task only the others read.
  const holder = await startWorker([deployed], options('dup-storm-holder', 1));
  const others: Worker[] = [];
  try {
    const held = await client.startFlow('dupStorm', { hold: true });
    const task = await waitFor(
      'the held task to start',
      async () =>
        (await sql<{ message_id: string; worker_id: string }[]>`
        select message_id::text, worker_id::text from switchyard.step_tasks
         where run_id = ${held} and status = 'started'`)[0],
    );
    assert.equal(task.worker_id, holder.workerId);
    others.push(
      await startWorker([deployed], options('dup-storm-a', 2)),
      await startWorker([deployed], options('dup-storm-b', 3)),
    );
    const states = others.map(track);
    for (let round = 1; round <= 8; round++) {
      const [{ read_ct: before }] = await sql<{ read_ct: number }[]>`
        select read_ct from pgmq.q_dup_storm_q where msg_id = ${task.message_id}`;
      await sql`select pgmq.set_vt('dup_storm_q', ${task.message_id}::bigint, 0)`;
      await waitFor(`duplicate read ${round}`, async () => {
        const [{ read_ct }] = await sql<{ read_ct: number }[]>`
          select read_ct from pgmq.q_dup_storm_q where msg_id = ${task.message_id}`;
        return read_ct > before;
      });
      // Meanwhile ordinary work keeps flowing through the readers.
      const run = await client.startFlow('dupStorm', { hold: false });
      assert.equal((await client.waitForRun(run)).status, 'completed');
    }
    const [t] = await sql<{ status: string; attempts_count: number }[]>`
      select status, attempts_count from switchyard.step_tasks where run_id = ${held}`;
    assert.deepEqual({ ...t }, { status: 'started', attempts_count: 1 }, 'no attempt consumed');
    assert.ok(states.every((s) => !s.settled), 'no healthy worker stopped');
    const paused = await sql`select function_name from switchyard.worker_functions
      where function_name like 'dup-storm%' and paused_at is not null`;
    assert.equal(paused.length, 0, 'duplicates pause nothing');
    release();
    assert.equal((await client.waitForRun(held)).status, 'completed');
    const [done] = await sql<{ attempts_count: number; worker_id: string }[]>`
      select attempts_count, worker_id::text from switchyard.step_tasks where run_id = ${held}`;
    assert.deepEqual({ ...done }, { attempts_count: 1, worker_id: holder.workerId });
    assert.equal(executions, 9, 'the held task ran once, each other run once');
  } finally {
    release();
    await Promise.all([holder, ...others].map((w) => w.stop()));
  }
});

Deno.test('flow control under racing workers: one key limit 1, a shared rate limit, duplicates, retries and cancels', async () => {
  let active = 0;
  let overlap = 0;
  const flow = new Flow<{ n: number; tenant?: string }>({
    slug: 'fcRaceV1',
    maxAttempts: 3,
    baseDelay: 0,
  })
    .step({ slug: 'one', concurrency: { key: 'tenant', limit: 1 } }, async (input, ctx) => {
      // No run's input has a tenant: they all share the one key of an absent value.
      active++;
      overlap = Math.max(overlap, active);
      try {
        await sleep(Math.random() * 8);
        if (ctx.attempt === 1 && input.n % 5 === 0) throw new Error('transient');
        return input.n;
      } finally {
        active--;
      }
    })
    .step({ slug: 'two', dependsOn: ['one'], rateLimit: { name: 'fc-race' } }, (i) => i.one);
  await sql`select switchyard.set_rate_limit('fc-race', 200, 1, 5)`;
  const deployed = defineDeployedFlow(
    routeFlow(flow as never, { queues: { one: 'fc_race_q', two: 'fc_race_q' } } as never),
    { alias: 'fcRace' },
  );
  const workers = await Promise.all(
    [3, 4, 5, 6].map((maxConcurrent, i) =>
      startWorker([deployed], {
        ...FAST,
        connectionString: db.url,
        queueName: 'fc_race_q',
        functionName: `fc-race-${i}`,
        maxConcurrent,
        visibilityTimeout: 1,
        logger: SILENT,
      })
    ),
  );
  const states = workers.map(track);
  try {
    const ids: string[] = [];
    for (let n = 0; n < 40; n++) ids.push(await client.startFlow('fcRace', { n }));
    const cancelled = new Set<string>();
    let open = true;
    // Meanwhile: started tasks' messages made visible again (benign duplicates for the claim,
    // which must not count them twice) and a few runs cancelled.
    const storm = (async () => {
      while (open) {
        await sql`select pgmq.set_vt('fc_race_q', t.message_id, 0) from switchyard.step_tasks t
          where t.flow_slug = 'fcRaceV1' and t.status = 'started'`;
        if (cancelled.size < 5) {
          const id = pick(ids);
          const [r] = await sql`select status from switchyard.runs where run_id = ${id}`;
          if (r.status === 'started' && !cancelled.has(id)) {
            // The run may finish between the read and the cancel: then it is not cancelled.
            try {
              await sql`select switchyard.cancel_run(${id}::uuid, 'race')`;
              cancelled.add(id);
            } catch (e) {
              if ((e as { code?: string }).code !== '55000') throw e;
            }
          }
        }
        await sleep(10);
      }
    })();
    try {
      for (const id of ids) {
        const s = await client.waitForRun(id);
        assert.equal(s.status, cancelled.has(id) ? 'cancelled' : 'completed', id);
      }
    } finally {
      open = false;
      await storm;
    }
    assert.equal(overlap, 1, 'one handler of the key at a time');
    const [t] = await sql<{ open: number; beyond: number }[]>`select
        count(*) filter (where status in ('queued', 'started'))::int as open,
        count(*) filter (where step_slug = 'one' and attempts_count > 2)::int as beyond
      from switchyard.step_tasks where flow_slug = 'fcRaceV1'`;
    assert.deepEqual({ ...t }, { open: 0, beyond: 0 });
    assert.ok(states.every((s) => !s.settled), 'no worker stopped');
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
});

Deno.test('a completion from a superseded attempt, arriving while the next attempt runs, is refused', async () => {
  const gates = new Map<number, () => void>();
  const entered = new Set<number>();
  const flow = new Flow<Record<string, never>>({ slug: 'supersededV1', maxAttempts: 3 })
    .step({ slug: 'work', baseDelay: 0, timeout: 120 }, async (_input, ctx) => {
      entered.add(ctx.attempt);
      await new Promise<void>((r) => gates.set(ctx.attempt, r));
      return { by: ctx.attempt };
    });
  const options = { ...FAST, connectionString: db.url, logger: SILENT };
  // maxConcurrent 1: while its handler holds attempt 1, the first worker reads nothing else.
  const first = await startWorker(flow, { ...options, maxConcurrent: 1 });
  let second: Worker | undefined;
  try {
    const run = await client.startFlow('supersededV1', {});
    await waitFor('attempt 1 to run on the first worker', () => gates.has(1));
    // Attempt 1 is superseded (as a stall recovery or a failure report would): attempt 2 is
    // claimed by another worker and is still running when attempt 1's output comes in.
    const [{ r }] = await sql`
      select switchyard.fail_task(${run}::uuid, 'work', 1, 'superseded on purpose') as r`;
    assert.ok(r, 'attempt 1 failed, to be retried');
    second = await startWorker(flow, options);
    await waitFor('attempt 2 to run on the second worker', () => gates.has(2));
    gates.get(1)!();
    await within(30_000, 'the first worker to write its late completion and stop', first.stop());
    const [held] = await sql`select status, attempts_count, output, worker_id::text
                               from switchyard.step_tasks where run_id = ${run}`;
    assert.deepEqual(
      { ...held },
      { status: 'started', attempts_count: 2, output: null, worker_id: second.workerId },
      "attempt 1's completion changed nothing",
    );
    gates.get(2)!();
    const status = await client.waitForRun(run);
    assert.deepEqual([status.status, status.output], ['completed', { work: { by: 2 } }]);
    assert.deepEqual([...entered].sort(), [1, 2]);
  } finally {
    for (const open of gates.values()) open();
    await first.stop();
    await second?.stop();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
