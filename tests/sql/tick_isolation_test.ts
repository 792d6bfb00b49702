/**
 * One run's bad value is that run's problem (issue 36, item 1 and 2;
 * docs/design/waits.md): a sleep-until time whose offset PostgreSQL refuses fails only its own run
 * with the
 * rule, wherever it is read (a start, a delayed start, a kept early signal, a completion); an
 * error no rule foresaw (a trigger planted by the test, raising for one run) in a tick's waits,
 * delayed starts or deadlines, or in the start of a completion's successors, fails that run
 * alone while every other run's timer, the tick's other parts and the completion go on, and a
 * finished handler is never run again for it; `retry_run` re-examines a flow step whose child
 * ended while the parent was failed.
 *
 * @module
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import {
  defineDeployedFlow,
  Flow,
  routeFlow,
  signalPayload,
  startWorker,
  type WorkerLogger,
  type WorkerTarget,
} from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const SILENT: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} };

/** The hostile inputs this file tries, counted as they are tried (reported at the end). */
let hostile = 0;

/** Offsets JavaScript's Date and the kit's pattern accept and PostgreSQL refuses (22009). */
const BAD_OFFSETS = [ // the first one JavaScript's Date takes too
  '2026-12-24T09:00:00+16:00',
  '2026-12-24T09:00:00+15:60',
  '2026-12-24T09:00:00+00:99',
  '2026-12-24T09:00:00-1599',
];

async function compile(target: WorkerTarget): Promise<void> {
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(target).shape as never)}::jsonb)`;
  const placement = toPlacement(target);
  if (placement.alias) {
    await client.activateAlias(placement.alias, placement.flow.slug);
  }
}

async function run(runId: string): Promise<{ status: string; error: string | null }> {
  const [r] = await sql<{ status: string; error: string | null }[]>`
    select status, error from switchyard.runs where run_id = ${runId}`;
  return { status: r.status, error: r.error };
}

async function stepStatus(runId: string, step: string): Promise<string> {
  const [r] = await sql<{ status: string }[]>`
    select status from switchyard.step_states where run_id = ${runId} and step_slug = ${step}`;
  return r.status;
}

/** Plants a trigger that raises whenever `table`'s row of `runId` is updated as `when` says. */
async function plant(name: string, table: string, runId: string, when: string): Promise<void> {
  await sql.unsafe(`
    create function public.${name}() returns trigger language plpgsql as $$
    begin
      if new.run_id = '${runId}'::uuid and (${when}) then
        raise exception 'planted failure for run %', new.run_id;
      end if;
      return new;
    end $$;
    create trigger ${name} before update on switchyard.${table}
      for each row execute function public.${name}();`);
}

async function unplant(name: string, table: string): Promise<void> {
  await sql.unsafe(`drop trigger ${name} on switchyard.${table}; drop function public.${name}();`);
}

const untilFlow = new Flow<{ sendAt: string }>({ slug: 'untilV1' })
  .sleep({ slug: 'until_send', until: { key: 'sendAt' } });
// A wait whose kept early signal names the time of the sleep after it.
const heldFlow = new Flow<Record<string, never>>({ slug: 'heldV1' })
  .sleep({ slug: 'first', seconds: 1 })
  .wait({ slug: 'approval', dependsOn: ['first'], payload: signalPayload<{ at: string }>() })
  .sleep({ slug: 'hold', dependsOn: ['approval'], until: { key: 'approval.at', input: 'step' } });
const napFlow = new Flow<Record<string, never>>({ slug: 'napV1' })
  .sleep({ slug: 'nap', seconds: 1 });
const blockedFlow = new Flow<Record<string, never>>({ slug: 'blockedV1' })
  .wait({ slug: 'never' });
for (const flow of [untilFlow, heldFlow, napFlow, blockedFlow]) await compile(flow);

/** Ticks the keep-alive until `done` holds (the SQL core's own clock, no worker). */
async function tickUntil(what: string, done: () => Promise<boolean>): Promise<void> {
  await waitFor(what, async () => {
    await sql`select count(*) from switchyard.keep_alive(debounce_seconds => 0)`;
    return await done();
  }, { timeoutMs: 20_000, intervalMs: 200 });
}

Deno.test('a sleep-until time whose offset PostgreSQL refuses fails its run with the rule at the start', async () => {
  for (const sendAt of BAD_OFFSETS) {
    hostile++;
    const runId = await client.startFlow('untilV1', { sendAt });
    const r = await run(runId);
    assert.equal(r.status, 'failed', sendAt);
    assert.match(
      String(r.error),
      new RegExp(
        `^sleep step "until_send" until: the value at "sendAt" of the run input ` +
          `"${sendAt.replace(/[+]/g, '\\+')}" is not a valid time: use an ISO 8601 timestamp`,
      ),
    );
    assert.equal(await stepStatus(runId, 'until_send'), 'failed');
  }
});

Deno.test('bad times planted behind a delayed start and a kept early signal stop no other timer, deadline or wake', async () => {
  await sql`select switchyard.ensure_shared_queue('tick_q')`;
  await sql`select switchyard.register_function('tick-worker', 'tick_q')`;
  const soon = new Date(Date.now() + 500);
  const delayed: string[] = [];
  const held: string[] = [];
  for (const sendAt of BAD_OFFSETS) {
    hostile += 2;
    delayed.push(await client.startFlow('untilV1', { sendAt }, { startAt: soon }));
    const h = await client.startFlow('heldV1', {});
    // Kept early: the wait has not begun (its dependency sleeps).
    assert.equal(
      (await sql`select switchyard.signal_run(${h}::uuid, 'approval', ${
        sql.json({ at: sendAt })
      }::jsonb) as r`)[0].r,
      'kept',
    );
    held.push(h);
  }
  const good = await client.startFlow('napV1', {});
  const goodDelayed = await client.startFlow('napV1', {}, { startAt: soon });
  const overdue = await client.startFlow('blockedV1', {}, {
    deadlineAt: new Date(Date.now() + 800),
  });

  let woken = false;
  await tickUntil('the good sleeps to end and the overdue run to be cancelled', async () => {
    const rows = await sql`select function_name from switchyard.keep_alive(debounce_seconds => 0)`;
    woken ||= rows.some((r) => r.function_name === 'tick-worker');
    return (await run(good)).status === 'completed' &&
      (await run(goodDelayed)).status === 'completed' &&
      (await run(overdue)).status === 'cancelled';
  });
  assert.ok(woken, 'the tick woke the queue function');
  for (const id of delayed) {
    const r = await run(id);
    assert.equal(r.status, 'failed');
    assert.match(String(r.error), /is not a valid time: use an ISO 8601 timestamp/);
  }
  for (const id of held) {
    const r = await run(id);
    assert.equal(r.status, 'failed');
    assert.match(
      String(r.error),
      /^sleep step "hold" until: the value at "approval.at" of the step input/,
    );
    assert.deepEqual(
      [
        await stepStatus(id, 'first'),
        await stepStatus(id, 'approval'),
        await stepStatus(id, 'hold'),
      ],
      ['completed', 'completed', 'failed'],
    );
  }
  assert.match(String((await run(overdue)).error), /deadline/);
  // Nothing is left for a later tick to trip over.
  const [left] = await sql<
    { n: number }[]
  >`select count(*)::int as n from switchyard.delayed_starts`;
  assert.equal(left.n, 0);
});

Deno.test('an error no rule foresaw in one run of a tick fails that run alone; every other timer goes on', async () => {
  // Three runs whose own work fails in a way no rule of the SQL core foresees, one per loop of
  // the tick (a sleep ending, a delayed start, a deadline), each beside a run that must not mind.
  const sleeper = await client.startFlow('napV1', {});
  const sleeperOk = await client.startFlow('napV1', {});
  const starter = await client.startFlow('napV1', {}, { startAt: new Date(Date.now() + 300) });
  const starterOk = await client.startFlow('napV1', {}, { startAt: new Date(Date.now() + 300) });
  const late = await client.startFlow('blockedV1', {}, { deadlineAt: new Date(Date.now() + 600) });
  const lateOk = await client.startFlow('blockedV1', {}, {
    deadlineAt: new Date(Date.now() + 600),
  });
  hostile += 3;
  await plant('sy_test_sleeper', 'step_states', sleeper, "new.status = 'completed'");
  await plant('sy_test_starter', 'step_states', starter, "new.status = 'started'");
  await plant('sy_test_late', 'runs', late, "new.status = 'cancelled'");
  try {
    await tickUntil(
      'the other runs to end',
      async () =>
        (await run(sleeperOk)).status === 'completed' &&
        (await run(starterOk)).status === 'completed' &&
        (await run(lateOk)).status === 'cancelled' &&
        (await run(sleeper)).status !== 'started' &&
        (await run(starter)).status !== 'started' &&
        (await run(late)).status !== 'started',
    );
  } finally {
    await unplant('sy_test_sleeper', 'step_states');
    await unplant('sy_test_starter', 'step_states');
    await unplant('sy_test_late', 'runs');
  }
  const expected: [string, RegExp][] = [
    [sleeper, /^step "nap" could not end its wait or start what follows it: "planted failure/],
    [starter, /^its delayed start could not begin: "planted failure/],
    [late, /^its deadline passed and it could not be cancelled: "planted failure/],
  ];
  for (const [id, error] of expected) {
    const r = await run(id);
    assert.equal(r.status, 'failed', id);
    assert.match(String(r.error), error);
    assert.match(String(r.error), /\(SQLSTATE P0001\); only this run failed: retry it/);
  }
  // Once the cause is gone, a retry takes the run on from where it stopped.
  await sql`select switchyard.retry_run(${sleeper}::uuid)`;
  await tickUntil(
    'the retried sleep to end',
    async () => (await run(sleeper)).status === 'completed',
  );
  await sql`select switchyard.retry_run(${starter}::uuid)`;
  await tickUntil(
    'the retried delayed run',
    async () => (await run(starter)).status === 'completed',
  );
});

Deno.test('an error no rule foresaw in one schedule is a warning: every other schedule fires on the same tick', async () => {
  for (const name of ['nap-broken', 'nap-fine']) {
    await sql`select switchyard.create_schedule(${name}, 'napV1', '* * * * *')`;
    await sql`update switchyard.schedules set created_at = now() - interval '10 minutes',
                checked_until = now() - interval '10 minutes' where name = ${name}`;
  }
  hostile++;
  await sql.unsafe(`
    create function public.sy_test_schedule() returns trigger language plpgsql as $$
    begin
      if new.name = 'nap-broken' then raise exception 'planted failure for schedule %', new.name; end if;
      return new;
    end $$;
    create trigger sy_test_schedule before update on switchyard.schedules
      for each row execute function public.sy_test_schedule();`);
  const started = async (name: string) =>
    (await sql<{ n: number }[]>`select count(*)::int as n from switchyard.schedule_ticks
      where schedule_name = ${name} and outcome = 'started'`)[0].n;
  try {
    await sql`select count(*) from switchyard.keep_alive(debounce_seconds => 0)`;
    assert.equal(await started('nap-fine'), 1, 'the other schedule fired');
    assert.equal(await started('nap-broken'), 0);
  } finally {
    await sql.unsafe(`drop trigger sy_test_schedule on switchyard.schedules;
                      drop function public.sy_test_schedule();`);
  }
  await sql`select switchyard.run_schedules()`;
  assert.equal(await started('nap-broken'), 1, 'looked at again on the next tick');
});

Deno.test('a successor that cannot start never fails the completion: the handler ran once, its run fails with the rule, the batch goes on', async () => {
  const QUEUE = 'charge_q' as const;
  const calls = new Map<string, number>();
  const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
  const charge = defineDeployedFlow(
    routeFlow(
      new Flow<{ at: string; key: string }>({ slug: 'chargeV1', maxAttempts: 3, baseDelay: 1 })
        .step({ slug: 'charge' }, (input) => {
          count(input.key);
          return { at: input.at };
        })
        .sleep({ slug: 'hold', dependsOn: ['charge'], until: { key: 'charge.at', input: 'step' } })
        .step({ slug: 'notify', dependsOn: ['charge'] }, () => 'sent'),
      { queues: { charge: QUEUE, notify: QUEUE } },
    ),
    { alias: 'charge' },
  );
  await compile(charge);
  const past = '2020-01-01T00:00:00Z';
  const runs = new Map<string, string>();
  for (const [i, at] of BAD_OFFSETS.entries()) {
    hostile++;
    runs.set(`bad${i}`, await client.startFlow('charge', { at, key: `bad${i}` }));
  }
  runs.set('good', await client.startFlow('charge', { at: past, key: 'good' }));
  // An error no rule foresaw in the start of one run's successors (planted on its 'notify').
  runs.set('planted', await client.startFlow('charge', { at: past, key: 'planted' }));
  hostile++;
  await plant(
    'sy_test_successor',
    'step_states',
    runs.get('planted')!,
    "new.step_slug = 'notify' and new.status = 'started'",
  );
  const worker = await startWorker([charge], {
    connectionString: db.url,
    ...FAST,
    queueName: QUEUE,
    maxConcurrent: 8,
    logger: SILENT,
  });
  try {
    await waitFor('every run to end', async () => {
      for (const id of runs.values()) if ((await run(id)).status === 'started') return false;
      return true;
    });
  } finally {
    await worker.stop();
    await unplant('sy_test_successor', 'step_states');
  }
  for (const [key, id] of runs) {
    assert.equal(calls.get(key), 1, `${key}: the finished handler ran once`);
    const [task] = await sql<{ status: string; attempts_count: number }[]>`
      select status, attempts_count from switchyard.step_tasks
       where run_id = ${id} and step_slug = 'charge'`;
    assert.deepEqual({ ...task }, { status: 'completed', attempts_count: 1 }, key);
  }
  assert.equal((await run(runs.get('good')!)).status, 'completed');
  for (const [key, id] of runs) {
    if (!key.startsWith('bad')) continue;
    const r = await run(id);
    assert.equal(r.status, 'failed', key);
    assert.match(
      String(r.error),
      /^sleep step "hold" until: the value at "charge.at" of the step input .* is not a valid time/,
    );
  }
  const planted = await run(runs.get('planted')!);
  assert.equal(planted.status, 'failed');
  assert.match(
    String(planted.error),
    /^the steps ready after a completed step could not start: "planted failure for run .*" \(SQLSTATE P0001\)/,
  );
});

Deno.test('retry_run takes on a flow step whose child ended while the parent was failed', async () => {
  const child = defineDeployedFlow(
    new Flow<Record<string, never>>({ slug: 'kidV1' })
      .wait({ slug: 'go', payload: signalPayload<{ n: number }>() }),
    { alias: 'kid' },
  );
  const parent = defineDeployedFlow(
    new Flow<Record<string, never>>({ slug: 'momV1' })
      .childFlow({ slug: 'sub', flow: child })
      .wait({ slug: 'gate', timeout: 1, onTimeout: 'fail' }),
    { alias: 'mom' },
  );
  await compile(child);
  await compile(parent);
  const runId = await client.startFlow('mom', {});
  const [link] = await sql<{ run_id: string }[]>`
    select run_id from switchyard.child_runs where parent_run_id = ${runId}`;
  // The parent fails (its gate times out) while its child waits.
  await tickUntil('the parent to fail', async () => (await run(runId)).status === 'failed');
  // The child ends while its parent is failed: the parent's step is left as it was.
  await sql`select switchyard.signal_run(${link.run_id}::uuid, 'go', ${sql.json({ n: 7 })}::jsonb)`;
  assert.equal((await run(link.run_id)).status, 'completed');
  assert.equal(await stepStatus(runId, 'sub'), 'started');
  // The retry takes the child's output; the gate waits again, and its signal ends the run.
  await sql`select switchyard.retry_run(${runId}::uuid)`;
  assert.equal(await stepStatus(runId, 'sub'), 'completed');
  await sql`select switchyard.signal_run(${runId}::uuid, 'gate', ${sql.json('open')}::jsonb)`;
  const [done] = await sql`select status, output from switchyard.runs where run_id = ${runId}`;
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.output, { sub: { go: { n: 7 } }, gate: 'open' });
});

Deno.test('teardown', async () => {
  console.log(`hostile inputs tried here: ${hostile}`);
  await client.close();
  await db.close();
});
