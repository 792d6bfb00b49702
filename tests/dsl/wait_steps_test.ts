/**
 * Wait and sleep steps (issue 22, docs/design/waits.md) on real PostgreSQL, with real
 * workers where handlers run. A wait step has no task and no message: the tests start runs
 * with no worker alive, signal them from the application's own transaction (a trigger on an
 * app table calling switchyard.signal_run) and show that a rolled-back signal is not
 * delivered, an early signal is kept, a repeated key is a no-op, bad signals are refused
 * with their rule and change nothing, timeouts fail or skip (ended by the SQL core's own tick,
 * no worker), a signal racing the timeout has exactly one outcome, cancel works while waiting,
 * a waiting run keeps its version when its alias moves, and prune removes the signal rows.
 *
 * WAIT_RACE_ITERATIONS sets the race's rounds (default 20; the issue's 100:
 * `WAIT_RACE_ITERATIONS=100 npx -y deno@2 task test tests/dsl/wait_steps_test.ts`).
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError } from '../../lib/errors.ts';
import {
  type AnyFlow,
  defineDeployedFlow,
  Flow,
  routeFlow,
  signalPayload,
  startWorker,
  type WorkerTarget,
} from '../../lib/mod.ts';
import { drainStatus } from '../../lib/ops.ts';
import { formatDrainStatus } from '../../lib/ops/format.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createClient } from '../../lib/client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';
import { deno, envWithout } from '../_helpers/process.ts';
import { sectionText } from '../_helpers/docs.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const base = { connectionString: db.url, ...FAST };

type Row = Record<string, unknown>;

async function compile(target: WorkerTarget): Promise<void> {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(target).shape as never)
  }::jsonb)`;
}

async function stepRows(runId: string): Promise<Row[]> {
  return (await db.sql`
    select ss.step_slug, ss.status, ss.output,
           (select count(*)::int from switchyard.step_tasks t
             where t.run_id = ss.run_id and t.step_slug = ss.step_slug) as tasks
      from switchyard.step_states ss
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
     where ss.run_id = ${runId} order by st.step_index`).map((r) => ({ ...r }));
}

async function events(runId: string): Promise<string[]> {
  return (await db.sql<{ e: string }[]>`
    select coalesce(step_slug, 'run') || ':' || event as e from switchyard.run_events
     where run_id = ${runId} order by event_id`).map((r) => r.e);
}

async function refusal(promise: Promise<unknown>): Promise<OperationError> {
  const e = await promise.then(() => assert.fail('the signal was accepted'), (e) => e);
  assert.ok(e instanceof OperationError, String(e));
  return e;
}

async function signalSql(runId: string, step: string, payload: unknown, key?: string) {
  const [row] = await db.sql<{ r: string }[]>`
    select switchyard.signal_run(${runId}::uuid, ${step}::text, ${
    db.sql.json(payload as never)
  }::jsonb, ${key ?? null}::text) as r`;
  return row.r;
}

async function sqlRefusal(runId: string, step: string, payload: unknown, key?: string) {
  const e = await signalSql(runId, step, payload, key).then(
    () => assert.fail('the signal was accepted'),
    (e) => e,
  );
  return {
    code: e.code as string,
    detail: JSON.parse(e.detail) as Row,
    message: String(e.message),
  };
}

/** The flow's messages in its queue (visible or not): none for a waiting step. */
async function queueLength(queue: string): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pgmq.read(${queue}::text, 0, 100)`;
  return row.n;
}

const approvalFlow = new Flow<{ title: string }>({ slug: 'approvalV1' })
  .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean; by: string }>() })
  .step({ slug: 'publish', dependsOn: ['approval'] }, (input) => ({
    published: input.approval.approved,
    by: input.approval.by,
  }));

Deno.test('no worker: a signal from a rolled-back transaction is not delivered, a committed one is; a worker then finishes the run', async () => {
  await compile(approvalFlow);
  // The application's table and its trigger: an approval row signals the run.
  await db.sql.unsafe(`
    create table public.approvals (run_id uuid primary key, approved boolean not null, approver text not null);
    create function public.approvals_signal() returns trigger language plpgsql as $$
    begin
      perform switchyard.signal_run(new.run_id, 'approval',
        jsonb_build_object('approved', new.approved, 'by', new.approver), 'approval:' || new.run_id);
      return new;
    end $$;
    create trigger approvals_signal after insert on public.approvals
      for each row execute function public.approvals_signal();`);
  const runId = await client.startFlow('approvalV1', { title: 'launch' });
  assert.deepEqual(await stepRows(runId), [
    { step_slug: 'approval', status: 'started', output: null, tasks: 0 },
    { step_slug: 'publish', status: 'created', output: null, tasks: 0 },
  ]);
  assert.equal(await queueLength('approvalv1'), 0, 'a waiting step sends no message');
  assert.deepEqual(await events(runId), ['run:started', 'approval:started', 'approval:waiting']);

  // BEGIN ... ROLLBACK: the app's insert and the signal go together.
  await db.sql.begin(async (tx) => {
    await tx`insert into public.approvals values (${runId}, true, 'ada')`;
    const [inside] = await tx`select status from switchyard.step_states
      where run_id = ${runId} and step_slug = 'approval'`;
    assert.equal(inside.status, 'completed', 'inside the transaction the step has its signal');
    throw new Error('rollback');
  }).catch((e) => assert.equal(e.message, 'rollback'));
  assert.equal((await stepRows(runId))[0].status, 'started');
  assert.equal((await db.sql`select * from switchyard.run_signals`).length, 0);
  assert.equal(await queueLength('approvalv1'), 0);

  // BEGIN ... COMMIT: delivered; the next step is queued, still with no worker.
  await db.sql.begin(async (tx) => {
    await tx`insert into public.approvals values (${runId}, true, 'grace')`;
  });
  assert.deepEqual(await stepRows(runId), [
    {
      step_slug: 'approval',
      status: 'completed',
      output: { approved: true, by: 'grace' },
      tasks: 0,
    },
    { step_slug: 'publish', status: 'started', output: null, tasks: 1 },
  ]);
  const worker = await startWorker(approvalFlow, base);
  try {
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { publish: { published: true, by: 'grace' } });
  } finally {
    await worker.stop();
  }
  assert.deepEqual(await events(runId), [
    'run:started',
    'approval:started',
    'approval:waiting',
    'approval:signalled',
    'approval:completed',
    'publish:started',
    'publish:completed',
    'run:completed',
  ]);
});

Deno.test('an early signal is kept and delivered when the step becomes ready', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'earlyV1' })
    .step({ slug: 'draft' }, (input) => input.n * 2)
    .wait({ slug: 'approval', dependsOn: ['draft'], payload: signalPayload<{ ok: boolean }>() })
    .step({ slug: 'report', dependsOn: ['draft', 'approval'] }, (input) => ({
      draft: input.draft,
      ok: input.approval.ok,
    }));
  await compile(flow);
  const runId = await client.startFlow('earlyV1', { n: 21 });
  assert.equal(await signalSql(runId, 'approval', { ok: true }, 'early'), 'kept');
  assert.equal(await signalSql(runId, 'approval', { ok: false }, 'early'), 'duplicate');
  assert.equal((await stepRows(runId))[1].status, 'created');
  const worker = await startWorker(flow, base);
  try {
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { report: { draft: 42, ok: true } });
  } finally {
    await worker.stop();
  }
  const evs = await events(runId);
  assert.ok(evs.includes('approval:signalled') && !evs.includes('approval:waiting'), evs.join());
  const [signal] = await db.sql`select signal_key, payload, delivered_at is not null as delivered
    from switchyard.run_signals where run_id = ${runId}`;
  assert.deepEqual({ ...signal }, { signal_key: 'early', payload: { ok: true }, delivered: true });
});

Deno.test('a repeated key is a no-op; bad signals are refused with their rule and change nothing', async () => {
  await compile(approvalFlow);
  const typed = createClient([approvalFlow], { connectionString: db.url });
  try {
    const runId = await client.startFlow('approvalV1', { title: 'x' });
    // Refused before anything: unknown run, unknown step, a step with a handler, a big payload.
    let r = await sqlRefusal(crypto.randomUUID(), 'approval', {});
    assert.equal(r.code, '22023');
    assert.equal(r.detail.rule, 'run_unknown');
    r = await sqlRefusal(runId, 'aproval', {});
    assert.equal(r.code, '22023');
    assert.equal(r.detail.rule, 'step_unknown');
    assert.match(r.message, /signal one of its wait steps: "approval"/);
    r = await sqlRefusal(runId, 'publish', {});
    assert.equal(r.code, '22023');
    assert.equal(r.detail.rule, 'step_not_wait');
    await db.sql`select switchyard.set_setting('max_output_bytes', '65536')`;
    r = await sqlRefusal(runId, 'approval', { blob: 'x'.repeat(70_000) });
    await db.sql`delete from switchyard.settings where name = 'max_output_bytes'`;
    assert.equal(r.code, '22023');
    assert.equal(r.detail.rule, 'max_output_bytes');
    assert.equal(r.detail.limit, 65536);
    r = await sqlRefusal(runId, 'approval', {}, ' ');
    assert.equal(r.detail.rule, 'key_empty');
    assert.equal((await stepRows(runId))[0].status, 'started', 'nothing changed');

    // Through the typed client: delivered once, then the same key is a no-op.
    const first = await typed.signal(runId, 'approval', { approved: false, by: 'ada' }, {
      key: 'k1',
    });
    assert.equal(first.outcome, 'delivered');
    const again = await typed.signal(runId, 'approval', { approved: true, by: 'eve' }, {
      key: 'k1',
    });
    assert.equal(again.outcome, 'duplicate');
    // Another key, or none: refused, the delivered payload stays.
    const other = await refusal(
      typed.signal(runId, 'approval', { approved: true, by: 'eve' }, { key: 'k2' }),
    );
    assert.equal(other.code, '55000');
    assert.equal(other.detail.rule, 'step_already_signalled');
    assert.equal(other.detail.signal_key, 'k1');
    const rows = await stepRows(runId);
    assert.deepEqual(rows[0].output, { approved: false, by: 'ada' });

    // A finished run refuses a new signal (the same key is still a no-op).
    await client.sql`select switchyard.cancel_run(${runId}::uuid, 'test')`;
    const finished = await refusal(
      typed.signal(runId, 'approval', { approved: true, by: 'x' }, { key: 'k3' }),
    );
    assert.equal(finished.code, '55000');
    assert.equal(finished.detail.rule, 'run_not_started');
    assert.equal(
      (await typed.signal(runId, 'approval', { approved: true, by: 'x' }, { key: 'k1' })).outcome,
      'duplicate',
    );
  } finally {
    await typed.close();
  }
});

/** Ends due waits as the keep-alive tick does, until `check` holds (no worker involved). */
async function tickUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  await waitFor(what, async () => {
    await db.sql`select count(*) from switchyard.keep_alive()`;
    return await check();
  }, { intervalMs: 100 });
}

Deno.test('timeouts with no worker alive: onTimeout fail fails the run, skip skips the step', async () => {
  const failing = new Flow({ slug: 'timeoutFailV1' })
    .wait({ slug: 'approval', timeout: 1 })
    .step({ slug: 'after', dependsOn: ['approval'] }, () => 'never');
  const skipping = new Flow({ slug: 'timeoutSkipV1' })
    .wait({ slug: 'approval', timeout: 1, onTimeout: 'skip' })
    .step({ slug: 'after', dependsOn: ['approval'] }, (input) => ({
      approval: input.approval ?? 'skipped',
    }));
  await compile(failing);
  await compile(skipping);
  const failRun = await client.startFlow('timeoutFailV1', {});
  const skipRun = await client.startFlow('timeoutSkipV1', {});
  await tickUntil('both waits to time out', async () => {
    const rows = await db.sql`select status from switchyard.step_states
      where run_id in (${failRun}, ${skipRun}) and step_slug = 'approval' and status = 'started'`;
    return rows.length === 0;
  });
  const failed = await client.runStatus(failRun);
  assert.equal(failed?.status, 'failed');
  assert.match(String(failed?.error), /wait step "approval" timed out: no signal within 1 seconds/);
  assert.deepEqual(await events(failRun), [
    'run:started',
    'approval:started',
    'approval:waiting',
    'approval:timed out',
    'approval:failed',
    'run:failed',
  ]);
  const late = await sqlRefusal(failRun, 'approval', {});
  assert.equal(late.detail.rule, 'run_not_started');

  assert.deepEqual((await stepRows(skipRun)).map((r) => [r.step_slug, r.status, r.tasks]), [
    ['approval', 'skipped', 0],
    ['after', 'started', 1],
  ]);
  const tooLate = await sqlRefusal(skipRun, 'approval', { approved: true });
  assert.equal(tooLate.code, '55000');
  assert.equal(tooLate.detail.rule, 'wait_timed_out');
  const worker = await startWorker(skipping, base);
  try {
    const status = await client.waitForRun(skipRun);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { after: { approval: 'skipped' } });
  } finally {
    await worker.stop();
  }
  // The failed run retried: the wait waits again, with a new deadline.
  await db.sql`select switchyard.retry_run(${failRun}::uuid)`;
  assert.equal((await stepRows(failRun))[0].status, 'started');
  assert.equal(await signalSql(failRun, 'approval', 'ok'), 'delivered');
});

Deno.test('a signal racing the timeout has exactly one outcome', async () => {
  const rounds = Number(Deno.env.get('WAIT_RACE_ITERATIONS') ?? '20');
  const flow = new Flow({ slug: 'raceV1' })
    .wait({ slug: 'approval', timeout: 3600, onTimeout: 'skip' });
  await compile(flow);
  const racer = untypedClient(db.url, { max: 4 });
  const outcomes = { delivered: 0, timedOut: 0 };
  try {
    for (let i = 0; i < rounds; i++) {
      const runId = await client.startFlow('raceV1', {});
      // Due a few milliseconds from now: the signal and the tick race for it.
      await db.sql`update switchyard.step_states
         set wait_deadline = clock_timestamp() + ${`${i % 7} milliseconds`}::interval,
             wait_due = clock_timestamp() + ${`${i % 7} milliseconds`}::interval
       where run_id = ${runId} and step_slug = 'approval'`;
      const [signal, _tick] = await Promise.allSettled([
        racer.sql`select switchyard.signal_run(${runId}::uuid, 'approval', '{"i": 1}'::jsonb, 'k')`,
        racer.sql`select switchyard.expire_waits()`,
      ]);
      // A tick that found the run held by the signal leaves it for the next one.
      await tickUntil(`round ${i} to settle`, async () => {
        const [row] = await db.sql`select status from switchyard.runs where run_id = ${runId}`;
        return row.status === 'completed';
      });
      const [step] = await db.sql`select status, output from switchyard.step_states
        where run_id = ${runId} and step_slug = 'approval'`;
      const evs = await events(runId);
      const signalled = evs.filter((e) => e === 'approval:signalled').length;
      const timedOut = evs.filter((e) => e === 'approval:timed out').length;
      if (signal.status === 'fulfilled') {
        assert.equal(step.status, 'completed');
        assert.deepEqual(step.output, { i: 1 });
        assert.deepEqual([signalled, timedOut], [1, 0], evs.join());
        outcomes.delivered++;
      } else {
        const e = signal.reason as { code: string; detail: string };
        assert.equal(e.code, '55000');
        // Timed out (the step skipped), or the tick came first and the run completed.
        assert.ok(
          ['wait_timed_out', 'run_not_started'].includes(JSON.parse(e.detail).rule),
          e.detail,
        );
        assert.equal(step.status, 'skipped');
        assert.deepEqual([signalled, timedOut], [0, 1], evs.join());
        assert.equal(
          (await db.sql`select 1 from switchyard.run_signals where run_id = ${runId}`).length,
          0,
        );
        outcomes.timedOut++;
      }
    }
  } finally {
    await racer.close();
  }
  assert.equal(outcomes.delivered + outcomes.timedOut, rounds);
  console.log(`race: ${outcomes.delivered} delivered, ${outcomes.timedOut} timed out`);
});

Deno.test('cancel while waiting; expire_waits and signals leave the cancelled run alone', async () => {
  const flow = new Flow({ slug: 'cancelWaitV1' })
    .wait({ slug: 'approval', timeout: 1 })
    .step({ slug: 'after', dependsOn: ['approval'] }, () => 1);
  await compile(flow);
  const runId = await client.startFlow('cancelWaitV1', {});
  const [cancelled] = await db.sql`select switchyard.cancel_run(${runId}::uuid, 'withdrawn') as c`;
  assert.equal(cancelled.c, true);
  assert.deepEqual((await stepRows(runId)).map((r) => r.status), ['cancelled', 'cancelled']);
  // The cancel ended the wait: its deadline left the index of open waits, and a cancelled step
  // cannot get one back.
  const [open] = await db.sql`select count(*)::int as n from switchyard.step_states
    where run_id = ${runId} and wait_due is not null`;
  assert.equal(open.n, 0);
  await assert.rejects(
    db.sql`update switchyard.step_states set wait_due = now() where run_id = ${runId}`,
    /step_states_wait_due_started/,
  );
  await db.sql`update switchyard.step_states set wait_deadline = now() - interval '1 second'
    where run_id = ${runId}`;
  const [ended] = await db.sql`select switchyard.expire_waits() as n`;
  assert.equal(ended.n, 0);
  assert.equal((await client.runStatus(runId))?.status, 'cancelled');
  const r = await sqlRefusal(runId, 'approval', {});
  assert.equal(r.detail.rule, 'run_not_started');
});

Deno.test('a run another step failed keeps its wait out of the tick; a retry makes it due again', async () => {
  let fail = true;
  const flow = new Flow({ slug: 'failedWaitV1', maxAttempts: 1 })
    .step({ slug: 'boom' }, () => {
      if (fail) throw new Error('boom');
      return 1;
    })
    .wait({ slug: 'approval', timeout: 3600, onTimeout: 'skip' });
  await compile(flow);
  const runId = await client.startFlow('failedWaitV1', {});
  const worker = await startWorker(flow, base);
  try {
    assert.equal((await client.waitForRun(runId)).status, 'failed');
    assert.equal((await stepRows(runId))[1].status, 'started', 'the wait still waits');
    await db.sql`update switchyard.step_states
      set wait_deadline = now() - interval '1 second', wait_due = now() - interval '1 second'
      where run_id = ${runId} and step_slug = 'approval'`;
    const [none] = await db.sql`select switchyard.expire_waits(1) as n`;
    assert.equal(none.n, 0, "a failed run is not the tick's");
    assert.ok(!(await events(runId)).includes('approval:timed out'));
    fail = false;
    await db.sql`select switchyard.retry_run(${runId}::uuid)`;
    await tickUntil(
      'the retried run to finish',
      async () => (await client.runStatus(runId))?.status === 'completed',
    );
    assert.deepEqual((await stepRows(runId)).map((r) => r.status), ['completed', 'skipped']);
  } finally {
    await worker.stop();
  }
});

Deno.test('an alias moved while a run waits: the run keeps its version, counts as open, finishes on it', async () => {
  const version = (n: number): AnyFlow =>
    new Flow<{ id: string }>({ slug: `reviewAliasV${n}` })
      .wait({ slug: 'approval', payload: signalPayload<{ ok: boolean }>() })
      .step({ slug: 'publish', dependsOn: ['approval'] }, (input) => `v${n}:${input.approval.ok}`);
  const v1 = defineDeployedFlow(routeFlow(version(1), { queues: { publish: 'review_q' } }), {
    alias: 'reviewAlias',
  });
  const v2 = defineDeployedFlow(routeFlow(version(2), { queues: { publish: 'review_q' } }), {
    alias: 'reviewAlias',
  });
  await compile(v1);
  await compile(v2);
  await client.activateAlias('reviewAlias', 'reviewAliasV1');
  const runId = await client.startFlow('reviewAlias', { id: 'a' });
  await client.activateAlias('reviewAlias', 'reviewAliasV2');
  const drain = await db.sql`select flow_slug, state, started_runs::int as n
    from switchyard.drain_status('review_q') order by flow_slug`;
  assert.deepEqual(drain.map((r) => [r.flow_slug, r.state, r.n]), [
    ['reviewAliasV1', 'draining', 1], // the waiting run counts as open for its version
    ['reviewAliasV2', 'active', 0],
  ]);
  // Every queue, through the operator's call (deno task drain): a wait step routes nowhere, so
  // it adds no row without a queue (issue 37, item 5: the command crashed on one).
  const everyQueue = await drainStatus(client);
  assert.ok(everyQueue.length >= 2);
  assert.ok(everyQueue.every((d) => typeof d.queueName === 'string'), JSON.stringify(everyQueue));
  assert.doesNotThrow(() => formatDrainStatus(everyQueue));
  // The worker for the queue must still cover v1's publish: a waiting run may reach it.
  const gaps = await db.sql`select flow_slug, step_slug from switchyard.coverage_gaps('review_q',
    array['reviewAliasV2/publish'])`;
  assert.deepEqual(gaps.map((g) => `${g.flow_slug}/${g.step_slug}`), ['reviewAliasV1/publish']);
  assert.equal(await signalSql(runId, 'approval', { ok: true }), 'delivered');
  const worker = await startWorker([v1, v2], { ...base, queueName: 'review_q' });
  try {
    const status = await client.waitForRun(runId);
    assert.equal(status.flowSlug, 'reviewAliasV1');
    assert.deepEqual(status.output, { publish: 'v1:true' });
  } finally {
    await worker.stop();
  }
});

Deno.test('prune removes a finished run with its signal', async () => {
  const flow = new Flow({ slug: 'pruneWaitV1' }).wait({ slug: 'approval' });
  await compile(flow);
  const runId = await client.startFlow('pruneWaitV1', {});
  assert.equal(await signalSql(runId, 'approval', { ok: 1 }, 'p'), 'delivered');
  assert.equal((await client.runStatus(runId))?.status, 'completed');
  assert.deepEqual((await client.runStatus(runId))?.output, { approval: { ok: 1 } });
  await db.sql`update switchyard.runs set completed_at = now() - interval '2 days'
    where run_id = ${runId}`;
  await db.sql`select * from switchyard.prune(interval '1 day')`;
  const left = await db.sql`select 1 from switchyard.run_signals where run_id = ${runId}`;
  assert.equal(left.length, 0);
  assert.equal(await client.runStatus(runId), null);
});

Deno.test("SQL checks a wait step's shape: no queue, a sleep needs its seconds", async () => {
  const shape = JSON.parse(JSON.stringify(
    toPlacement(new Flow({ slug: 'badWaitV1' }).wait({ slug: 'w' })).shape,
  ));
  shape.steps[0].queue = 'badwaitv1';
  const e = await db.sql`select switchyard.ensure_flow(${db.sql.json(shape)}::jsonb)`.then(
    () => assert.fail('accepted'),
    (e) => e,
  );
  assert.equal(e.code, '22023');
  assert.equal(JSON.parse(e.detail).rule, 'wait_queue');
  const sleep = JSON.parse(JSON.stringify(
    toPlacement(new Flow({ slug: 'badSleepV1' }).sleep({ slug: 's', seconds: 5 })).shape,
  ));
  delete sleep.steps[0].options.waitTimeout;
  const s = await db.sql`select switchyard.ensure_flow(${db.sql.json(sleep)}::jsonb)`.then(
    () => assert.fail('accepted'),
    (e) => e,
  );
  assert.equal(JSON.parse(s.detail).rule, 'option_missing');
  // A missing key takes its default: a wait's shape without onTimeout is the full one.
  const full = toPlacement(new Flow({ slug: 'keysWaitV1' }).wait({ slug: 'w', timeout: 9 })).shape;
  const short = JSON.parse(JSON.stringify(full));
  delete short.steps[0].options.onTimeout;
  const [created] = await db.sql`select switchyard.ensure_flow(${db.sql.json(short)}::jsonb) as r`;
  assert.equal(created.r, 'created');
  const [verified] = await db.sql`select switchyard.ensure_flow(${
    db.sql.json(full as never)
  }::jsonb) as r`;
  assert.equal(verified.r, 'verified');
  const [row] = await db.sql`select step_type, queue_name, wait_timeout, on_timeout
    from switchyard.steps where flow_slug = 'keysWaitV1'`;
  assert.deepEqual({ ...row }, {
    step_type: 'wait',
    queue_name: null,
    wait_timeout: 9,
    on_timeout: 'fail',
  });
});

Deno.test("a sleep ends on the SQL core's tick, across a worker restart, with no worker held", async () => {
  let calls = 0;
  const flow = new Flow({ slug: 'sleepV1' })
    .step({ slug: 'before' }, () => ++calls)
    .sleep({ slug: 'nap', dependsOn: ['before'], seconds: 1 })
    .step({ slug: 'after', dependsOn: ['nap', 'before'] }, (input) => ({
      nap: input.nap,
      before: input.before,
    }));
  let worker = await startWorker(flow, base);
  const runId = await client.startFlow('sleepV1', {});
  await waitFor('the sleep to start', async () => (await stepRows(runId))[1].status === 'started');
  await worker.stop(); // no worker while it sleeps
  assert.equal(await queueLength('sleepv1'), 0);
  await tickUntil(
    'the sleep to end',
    async () => (await stepRows(runId))[1].status === 'completed',
  );
  worker = await startWorker(flow, base);
  try {
    const status = await client.waitForRun(runId);
    assert.deepEqual(status.output, { after: { nap: null, before: 1 } });
  } finally {
    await worker.stop();
  }
  const r = await sqlRefusal(runId, 'nap', {});
  assert.equal(r.detail.rule, 'step_not_wait');
});

Deno.test('a sleep until a time read from the input: the deadline is that time; a past one ends it at once; a bad value fails the step naming the rule', async () => {
  const flow = new Flow<{ sendAt: string }>({ slug: 'untilV1' })
    .sleep({ slug: 'until_send', until: { key: 'sendAt' } })
    .wait({ slug: 'approval', dependsOn: ['until_send'], payload: signalPayload<{ at: string }>() })
    .sleep({ slug: 'hold', dependsOn: ['approval'], until: { key: 'approval.at', input: 'step' } });
  await compile(flow);
  const [row] = await db.sql`select sleep_until, sleep_until_input, wait_timeout
    from switchyard.steps where flow_slug = 'untilV1' and step_slug = 'hold'`;
  assert.deepEqual({ ...row }, {
    sleep_until: ['approval', 'at'],
    sleep_until_input: 'step',
    wait_timeout: null,
  });
  // No worker at all: the SQL core reads the time, and its tick ends the sleep.
  const sendAt = new Date(Date.now() + 1200).toISOString();
  const runId = await client.startFlow('untilV1', { sendAt });
  const [deadline] = await db.sql<{ ok: boolean }[]>`
    select wait_deadline = ${sendAt}::timestamptz and wait_due = wait_deadline as ok
      from switchyard.step_states
     where run_id = ${runId} and step_slug = 'until_send' and status = 'started'`;
  assert.equal(deadline?.ok, true, 'the deadline is the input time, due while the step sleeps');
  await tickUntil(
    'the sleep until sendAt to end',
    async () => (await stepRows(runId))[1].status === 'started',
  );
  assert.ok(Date.now() >= Date.parse(sendAt), 'not before its time');
  const [ended] = await db.sql<{ ok: boolean }[]>`
    select wait_due is null and wait_deadline = ${sendAt}::timestamptz as ok
      from switchyard.step_states where run_id = ${runId} and step_slug = 'until_send'`;
  assert.equal(ended?.ok, true, 'the ended sleep keeps its deadline and is no longer due');
  // A time already past (from the step's input, here the signal's payload) ends it at once.
  assert.equal(
    await signalSql(runId, 'approval', { at: '2020-01-01T00:00:00+02:00' }),
    'delivered',
  );
  assert.deepEqual((await stepRows(runId)).map((r) => r.status), [
    'completed',
    'completed',
    'completed',
  ]);
  const [done] = await db.sql`select status from switchyard.runs where run_id = ${runId}`;
  assert.equal(done.status, 'completed');

  // Bad values: the step and the run fail naming the path, the value and the rule; nothing starts.
  const far = new Date(Date.now() + 400 * 86400_000).toISOString();
  const bad: [unknown, RegExp][] = [
    [{}, /is missing/],
    [{ sendAt: 1766566800 }, /is a JSON number \("1766566800"\), not a string/],
    [{ sendAt: 'tomorrow' }, /"tomorrow" is not an ISO 8601 timestamp with a time zone/],
    [{ sendAt: 'now' }, /"now" is not an ISO 8601 timestamp/],
    [{ sendAt: '2026-12-24T09:00:00' }, /is not an ISO 8601 timestamp with a time zone/],
    [{ sendAt: '2026-02-30T09:00:00Z' }, /"2026-02-30T09:00:00Z" is not a valid time/],
    [{ sendAt: far }, /is more than 365 days ahead/],
  ];
  for (const [input, reason] of bad) {
    const id = await client.startFlow('untilV1', input as never);
    const [run] = await db.sql`select status, error from switchyard.runs where run_id = ${id}`;
    assert.equal(run.status, 'failed', JSON.stringify(input));
    assert.match(
      String(run.error),
      /^sleep step "until_send" until: the value at "sendAt" of the run input /,
    );
    assert.match(String(run.error), reason);
    assert.match(String(run.error), /use an ISO 8601 timestamp with a time zone/);
    assert.deepEqual((await stepRows(id)).map((r) => r.status), ['failed', 'created', 'created']);
  }
  // A failed step's run is retried like any: with the same input it fails the same way.
  const id = await client.startFlow('untilV1', { sendAt: 'soon' });
  await db.sql`select switchyard.retry_run(${id}::uuid)`;
  const [again] = await db.sql`select status, error from switchyard.runs where run_id = ${id}`;
  assert.equal(again.status, 'failed');

  // SQL checks the shape as the DSL does: sleepUntil is a sleep's, instead of its seconds.
  const shape = JSON.parse(JSON.stringify(
    toPlacement(new Flow({ slug: 'badUntilV1' }).sleep({ slug: 's', until: { key: 'at' } })).shape,
  ));
  for (
    const options of [{ waitTimeout: 5 }, { sleepUntil: { key: [] } }, {
      sleepUntil: { key: ['at'], input: 'flow' },
    }]
  ) {
    const broken = structuredClone(shape);
    Object.assign(broken.steps[0].options, options);
    const e = await db.sql`select switchyard.ensure_flow(${db.sql.json(broken)}::jsonb)`.then(
      () => assert.fail('accepted'),
      (e) => e,
    );
    assert.equal(e.code, '22023');
    assert.equal(JSON.parse(e.detail).rule, 'sleep_until_invalid', JSON.stringify(options));
  }
});

Deno.test("startAt: the run exists at once, its steps start on the SQL core's tick after startAt", async () => {
  const flow = new Flow<{ n: number }>({ slug: 'laterV1' })
    .step({ slug: 'a' }, (input) => input.n + 1);
  const deployed = defineDeployedFlow(flow, { alias: 'later' });
  await compile(deployed);
  await client.activateAlias('later', 'laterV1');
  const typed = createClient([deployed], { connectionString: db.url });
  try {
    const runId = crypto.randomUUID();
    const startAt = new Date(Date.now() + 1500);
    const run = await typed.start('later', { n: 1 }, { runId, startAt });
    assert.equal(run.runId, runId);
    // The same id again is the same run (idempotent, as start_flow).
    assert.equal((await typed.start('later', { n: 1 }, { runId, startAt })).runId, runId);
    assert.deepEqual((await stepRows(runId)).map((r) => [r.status, r.tasks]), [['created', 0]]);
    const [row] = await db.sql`select r.status, exists (select 1 from switchyard.delayed_starts d
      where d.run_id = r.run_id) as delayed from switchyard.runs r where r.run_id = ${runId}`;
    assert.deepEqual({ ...row }, { status: 'started', delayed: true });
    // Open for drain: its version stays needed though nothing is queued yet.
    const [drain] = await db.sql`select state, started_runs::int as n
      from switchyard.drain_status('laterv1') where flow_slug = 'laterV1'`;
    assert.deepEqual({ ...drain }, { state: 'active', n: 1 });
    const refused = await refusal(
      typed.start('later', { n: 1 }, { startAt: new Date(Date.now() + 400 * 86400_000) }),
    );
    assert.equal(refused.code, '22023');
    assert.equal(refused.detail.rule, 'start_at_range');
    await tickUntil(
      'the delayed start to begin',
      async () => (await stepRows(runId))[0].status === 'started',
    );
    const begun = await db.sql`select 1 from switchyard.delayed_starts where run_id = ${runId}`;
    assert.equal(begun.length, 0);
    const worker = await startWorker([deployed], { ...base, queueName: 'laterv1' });
    try {
      assert.deepEqual(await run.output({ timeoutMs: 30_000 }), { a: 2 });
    } finally {
      await worker.stop();
    }
    // A time not in the future starts at once.
    const now = await typed.start('later', { n: 5 }, { startAt: new Date(Date.now() - 1000) });
    assert.equal((await stepRows(now.runId))[0].status, 'started');
  } finally {
    await typed.close();
  }
});

Deno.test("the waits guide's example runs as written", async () => {
  const root = decodeURIComponent(new URL('../../', import.meta.url).pathname);
  const section = sectionText('docs/guide/waits.md', '# Waits, signals, sleeps and child flows');
  assert.ok(section, 'the waits guide has the section');
  const code = section.match(/```ts\n([\s\S]*?)```/)?.[1];
  assert.ok(code, 'the section has a TypeScript example');
  // Run it from the project root, so `switchyard/...` imports resolve as in an app.
  const file = `${root}.readme_wait_example_${crypto.randomUUID().slice(0, 8)}.ts`;
  await Deno.writeTextFile(file, code);
  try {
    const { code, stdout, stderr } = await deno(['run', '-A', file], {
      cwd: root,
      clearEnv: true,
      env: {
        ...envWithout('SUPABASE_DB_URL'),
        NO_COLOR: '1',
        DATABASE_URL: db.url,
        SWITCHYARD_LOG: 'error',
      },
    });
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /Launch post: draft \(approved by ada\)/);
  } finally {
    await Deno.remove(file).catch(() => {});
  }
});

Deno.test({
  name: 'teardown',
  async fn() {
    await client.close();
    await db.close();
  },
});
