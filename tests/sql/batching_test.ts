/**
 * Batching (issue 43, docs/design/batching.md): events of a flow with the `batch` option, from
 * `start_flow(..., batch_key)` and from row triggers declared with `batch_by`, collect into one
 * open batch per (alias, key), which becomes one run whose input is the list of its events in
 * the order they joined: at `maxSize` in the transaction of the event that fills it, or by the
 * tick (`run_schedules`, driven by a test clock) once `timeout` passed since its first event. A
 * rolled back event joins nothing; bad options are refused with their rule; and 8 connections
 * writing 2,000 events over 20 keys (some transactions rolled back) while ticks close batches put
 * every committed event in exactly one run. The dashboard's open batches (`dashboard_batches`)
 * list them most overdue first, at most 100. Real PostgreSQL, real connections.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { FlowDefinitionError, OperationError } from '../../lib/errors.ts';
import { Flow } from '../../lib/mod.ts';
import {
  batchOverviews,
  dashboardSnapshot,
  declareRowTrigger,
  listRowTriggers,
  startRun,
} from '../../lib/ops.ts';
import type { FlowOptions } from '../../lib/flows.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

/** Compiles a one-step flow with `options` and points `alias` at it. */
async function compile(slug: string, alias: string, options: Omit<FlowOptions, 'slug'> = {}) {
  const flow = new Flow<unknown>({ slug, ...options }).step({ slug: 'work' }, () => 1);
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(flow).shape as never)}::jsonb)`;
  await sql`select switchyard.sync_alias(${alias}, array[${slug}]::text[])`;
}

await compile('batchV1', 'batched', { batch: { maxSize: 3, timeout: 30 } });
await compile('plainV1', 'plain');

/** A refusal's SQLSTATE and detail, from an operation (OperationError) or raw SQL. */
async function refusal(
  promise: Promise<unknown>,
): Promise<{ code: string; detail: Record<string, unknown> }> {
  const e = await promise.then(() => null, (e) => e);
  if (e instanceof OperationError) return { code: e.code, detail: e.detail };
  const raw = e as { code?: string; detail?: string } | null;
  assert.ok(raw?.code && raw.detail, `expected a refusal, got ${String(e)}`);
  return { code: raw.code, detail: JSON.parse(raw.detail) };
}

/** One event: start_flow with a batch key, in its own transaction; the run id it answers. */
async function event(alias: string, key: string, input: unknown): Promise<string> {
  const [r] = await sql<{ id: string }[]>`
    select switchyard.start_flow(${alias}, ${sql.json(input as never)}::jsonb,
                                 batch_key => ${key}) as id`;
  return r.id;
}

/** The runs of a flow with their inputs and their start event's data. */
async function runsOf(flowSlug: string) {
  return [
    ...await sql<{ run_id: string; input: unknown[]; status: string; data: unknown }[]>`
    select r.run_id, r.input, r.status, e.data
      from switchyard.runs r
      left join switchyard.run_events e
        on e.run_id = r.run_id and e.event = 'started' and e.step_slug is null
     where r.flow_slug = ${flowSlug}
     order by r.started_at, r.run_id`,
  ];
}

/** A tick of the scheduler at the core's clock plus `seconds` (a test clock, docs/design/schedules.md). */
async function tick(seconds: number): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select switchyard.run_schedules(switchyard.clock_now() + ${seconds} * interval '1 second')
      as n`;
  return r.n;
}

const openBatches = async () => [
  ...await sql<{ started_as: string; batch_key: string; size: number; run_id: string }[]>`
    select started_as, batch_key, size, run_id from switchyard.list_batches()
     order by started_as, batch_key`,
];

Deno.test('a batch becomes one run at maxSize, in the transaction of the event that fills it', async () => {
  const a = await event('batched', 'k1', { n: 1 });
  const b = await event('batched', 'k1', { n: 2 });
  const other = await event('batched', 'k2', { n: 9 });
  assert.equal(a, b, 'the events of one open batch name one run');
  assert.notEqual(a, other, 'another key is another batch');
  assert.deepEqual(await runsOf('batchV1'), [], 'no run before the batch closes');
  assert.deepEqual(
    (await openBatches()).map((x) => [x.batch_key, x.size, x.run_id]),
    [['k1', 2, a], ['k2', 1, other]],
  );

  // The third event fills it: the run starts in that event's transaction, and goes with it
  // when that transaction rolls back (the two committed events stay in the open batch).
  await sql.begin(async (tx) => {
    await tx`select switchyard.start_flow('batched', '{"n": 3}'::jsonb, batch_key => 'k1')`;
    const [inside] = await tx<{ n: number }[]>`
      select count(*)::int as n from switchyard.runs where run_id = ${a}`;
    assert.equal(inside.n, 1, 'the run exists in the filling transaction');
    throw new Error('roll back');
  }).catch((e) => assert.match(String(e), /roll back/));
  assert.deepEqual(await runsOf('batchV1'), []);
  assert.equal((await openBatches()).find((x) => x.batch_key === 'k1')?.size, 2);

  const c = await event('batched', 'k1', { n: 3 });
  assert.equal(c, a);
  const runs = await runsOf('batchV1');
  assert.equal(runs.length, 1);
  assert.equal(runs[0].run_id, a);
  assert.equal(runs[0].status, 'started');
  assert.deepEqual(runs[0].input, [{ n: 1 }, { n: 2 }, { n: 3 }], 'the list, in order of arrival');
  const data = runs[0].data as { batch: Record<string, unknown> };
  assert.equal(data.batch.key, 'k1');
  assert.equal(data.batch.size, 3);
  assert.equal(data.batch.closed, 'size');
  // The next event of the key opens a new batch, with a new run.
  const d = await event('batched', 'k1', { n: 4 });
  assert.notEqual(d, a);
  assert.deepEqual(
    (await openBatches()).map((x) => [x.batch_key, x.size]),
    [['k1', 1], ['k2', 1]],
  );
  await sql`select switchyard.close_batches(switchyard.clock_now() + interval '1 day')`;
  await sql`delete from switchyard.runs where flow_slug = 'batchV1'`;
});

Deno.test('the tick closes a batch once its timeout passed since its first event', async () => {
  const id = await event('batched', 't1', { n: 1 });
  await event('batched', 't1', { n: 2 });
  // Before the timeout (30 s): the tick leaves it open.
  assert.equal(await tick(10), 0);
  assert.equal(await tick(29), 0);
  assert.deepEqual(await runsOf('batchV1'), []);
  // After it: one run, closed by 'timeout'.
  assert.equal(await tick(31), 1);
  const runs = await runsOf('batchV1');
  assert.equal(runs.length, 1);
  assert.equal(runs[0].run_id, id);
  assert.deepEqual(runs[0].input, [{ n: 1 }, { n: 2 }]);
  assert.equal((runs[0].data as { batch: { closed: string } }).batch.closed, 'timeout');
  assert.deepEqual(await openBatches(), []);
  assert.equal(await tick(45), 0, 'nothing left to close');
  await sql`delete from switchyard.runs where flow_slug = 'batchV1'`;
});

Deno.test('a rolled back event joins no batch; one that opened a batch leaves none', async () => {
  await sql.begin(async (tx) => {
    await tx`select switchyard.start_flow('batched', '{"n": 0}'::jsonb, batch_key => 'r1')`;
    throw new Error('roll back');
  }).catch((e) => assert.match(String(e), /roll back/));
  assert.deepEqual(await openBatches(), [], 'the batch it opened went with it');

  await event('batched', 'r1', { n: 1 });
  await sql.begin(async (tx) => {
    await tx`select switchyard.start_flow('batched', '{"n": 2}'::jsonb, batch_key => 'r1')`;
    throw new Error('roll back');
  }).catch((e) => assert.match(String(e), /roll back/));
  await event('batched', 'r1', { n: 3 });
  assert.equal(await tick(31), 1);
  const runs = await runsOf('batchV1');
  assert.deepEqual(runs.map((r) => r.input), [[{ n: 1 }, { n: 3 }]]);
  await sql`delete from switchyard.runs where flow_slug = 'batchV1'`;
});

Deno.test('a batch that would pass max_input_bytes closes, and the event opens the next', async () => {
  await sql`select switchyard.set_setting('max_input_bytes', '65536')`;
  try {
    const big = 'x'.repeat(30000);
    const first = await event('batched', 'b1', { s: big });
    await event('batched', 'b1', { s: big });
    const third = await event('batched', 'b1', { s: big });
    assert.notEqual(third, first, 'the third would make the list over 65536 bytes');
    const runs = await runsOf('batchV1');
    assert.equal(runs.length, 1);
    assert.equal((runs[0].input as unknown[]).length, 2);
    assert.equal((runs[0].data as { batch: { closed: string } }).batch.closed, 'bytes');
    // An event that could never fit alone is refused, as start_flow refuses any input over it.
    const e = await refusal(event('batched', 'b1', { s: 'y'.repeat(70000) }));
    assert.equal(e.detail.rule, 'max_input_bytes');
  } finally {
    await sql`select switchyard.set_setting('max_input_bytes', null)`;
    await sql`select switchyard.close_batches(switchyard.clock_now() + interval '1 day')`;
    await sql`delete from switchyard.runs where flow_slug = 'batchV1'`;
  }
});

Deno.test('bad batch options and bad batch starts are refused with their rule', async () => {
  // The DSL refuses before anything is sent.
  for (
    const [batch, pattern] of [
      [{ maxSize: 0, timeout: 10 }, /batch\.maxSize 0 is invalid: use an integer from 1 to 10000/],
      [{ maxSize: 10001, timeout: 10 }, /batch\.maxSize 10001 is invalid/],
      [{ maxSize: 5, timeout: 0 }, /batch\.timeout 0 is invalid: use an integer from 1 to 86400/],
      [{ maxSize: 5, timeout: 86401 }, /batch\.timeout 86401 is invalid/],
      [{ maxSize: 5 }, /batch needs timeout/],
      [{ maxSize: 5, timeout: 5, key: 'x' }, /unknown key "key"/],
      ['5', /option batch "5" is invalid/],
    ] as const
  ) {
    assert.throws(
      () => new Flow({ slug: 'badBatch', batch: batch as never }),
      (e: unknown) => e instanceof FlowDefinitionError && pattern.test(e.message),
      JSON.stringify(batch),
    );
  }
  // The SQL core refuses the same in a shape, naming the value and the rule.
  const shape = (batch: unknown, concurrency?: unknown) => {
    const s = toPlacement(new Flow<unknown>({ slug: 'badBatchV1' }).step({ slug: 'a' }, () => 1))
      .shape;
    return {
      ...s,
      options: { ...s.options, batch },
      steps: s.steps.map((st) =>
        concurrency ? { ...st, options: { ...st.options, concurrency } } : st
      ),
    };
  };
  for (
    const [batch, rule, concurrency] of [
      [{ maxSize: 0, timeout: 10 }, 'integer_range'],
      [{ maxSize: 5, timeout: 100000 }, 'integer_range'],
      [{ maxSize: 5 }, 'option_missing'],
      [{ maxSize: 5, timeout: 5, key: 'x' }, 'batch_invalid'],
      [[1], 'batch_invalid'],
      [{ maxSize: 5, timeout: 5 }, 'batch_run_input_key', { key: ['customer'], limit: 1 }],
    ] as const
  ) {
    const e = await refusal(
      sql`select switchyard.ensure_flow(${sql.json(shape(batch, concurrency) as never)}::jsonb)`,
    );
    assert.equal(e.code, '22023');
    assert.equal(e.detail.rule, rule, JSON.stringify(batch));
  }
  const [none] = await sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.flows where flow_slug = 'badBatchV1'`;
  assert.equal(none.n, 0, 'a refused flow is not compiled');

  // Changing the option under one slug is a new version (SY004), never applied in place.
  const changed = toPlacement(
    new Flow<unknown>({ slug: 'batchV1', batch: { maxSize: 4, timeout: 30 } })
      .step({ slug: 'work' }, () => 1),
  ).shape;
  const e = await sql`select switchyard.ensure_flow(${sql.json(changed as never)}::jsonb)`
    .then(() => null, (e) => e);
  assert.match(String(e?.code ?? e), /SY004/);

  // Starts.
  assert.equal(
    (await refusal(event('plain', 'k', {}))).detail.rule,
    'batch_not_declared',
    'a flow without batch refuses a batch key',
  );
  assert.equal((await refusal(event('batched', '', {}))).detail.rule, 'batch_key_length');
  assert.equal(
    (await refusal(event('batched', 'k'.repeat(201), {}))).detail.rule,
    'batch_key_length',
  );
  const alone = await refusal(sql`
    select switchyard.start_flow('batched', '{}'::jsonb, run_id => gen_random_uuid(),
                                 batch_key => 'k')`);
  assert.equal(alone.detail.rule, 'batch_key_alone');
  assert.equal(alone.detail.argument, 'run_id');
  const keyed = await refusal(sql`
    select switchyard.start_flow('batched', '{}'::jsonb, key => 'x', mode => 'dedupe',
                                 batch_key => 'k')`);
  assert.equal(keyed.detail.argument, 'key');
  // The TypeScript call passes the key through; the core's rules answer.
  await assert.rejects(
    startRun(sql, 'batched', {}, { batchKey: 5 as never }),
    /batchKey 5 is invalid/,
  );
  assert.equal(
    (await refusal(startRun(sql, 'batched', {}, { batchKey: 'k', priority: 2 }))).detail.rule,
    'batch_key_alone',
  );
  assert.deepEqual(await openBatches(), [], 'no refused start left a batch');
});

Deno.test('startRun with batchKey joins a batch and answers its run', async () => {
  const a = await startRun(sql, 'batched', { n: 1 }, { batchKey: 'ts' });
  const b = await startRun(sql, 'batched', { n: 2 }, { batchKey: 'ts' });
  const c = await startRun(sql, 'batched', { n: 3 }, { batchKey: 'ts' });
  assert.equal(a, b);
  assert.equal(b, c);
  const runs = await runsOf('batchV1');
  assert.deepEqual(runs.map((r) => [r.run_id, r.input]), [[a, [{ n: 1 }, { n: 2 }, { n: 3 }]]]);
  await sql`delete from switchyard.runs where flow_slug = 'batchV1'`;
});

Deno.test('the dashboard lists open batches, the most overdue first, at most 100', async () => {
  await compile('batchLongV1', 'batched_long', { batch: { maxSize: 5, timeout: 300 } });
  // None open: an empty list, in the snapshot too.
  assert.deepEqual(await batchOverviews(sql), []);
  assert.deepEqual((await dashboardSnapshot(sql)).batches, []);

  // Two batches: the long one (timeout 300 s) opens first, the short one (30 s) second.
  const long = await event('batched_long', 'slow', { n: 1 });
  await event('batched_long', 'slow', { n: 2 });
  const short = await event('batched', 'quick', { n: 1 });
  const [clock] = await sql<{ now: Date; later: Date }[]>`
    select switchyard.clock_now() as now, switchyard.clock_now() + interval '31 seconds' as later`;
  const rows = await batchOverviews(sql);
  assert.deepEqual(
    rows.map((b) => [b.alias, b.batchKey, b.runId, b.size, b.maxSize, b.overdue, b.lastError]),
    [
      ['batched', 'quick', short, 1, 3, false, null],
      ['batched_long', 'slow', long, 2, 5, false, null],
    ],
    'the earliest due first, not the earliest opened',
  );
  for (const b of rows) {
    const timeout = b.alias === 'batched' ? 30 : 300;
    assert.equal(
      b.dueAt.getTime() - b.openedAt.getTime(),
      timeout * 1000,
      'due = opened + timeout',
    );
    assert.ok(b.openedAt.getTime() <= clock.now.getTime());
  }

  // 31 s later by the clock the tick is given (as the tests above tick): the short one is due
  // and not closed yet, so overdue; the long one is not.
  const later = await batchOverviews(sql, { now: clock.later });
  assert.deepEqual(later.map((b) => [b.batchKey, b.overdue]), [['quick', true], ['slow', false]]);
  const [raw] = await sql<{ n: number }[]>`
    select count(*)::int as n
      from switchyard.dashboard_batches(switchyard.clock_now() + interval '31 seconds')
     where overdue`;
  assert.equal(raw.n, 1);
  const snap = await dashboardSnapshot(sql);
  assert.deepEqual(snap.batches.map((b) => [b.alias, b.batchKey, b.size]), [
    ['batched', 'quick', 1],
    ['batched_long', 'slow', 2],
  ]);

  // A bad time is refused, naming it; nothing is read.
  const bad = await refusal(batchOverviews(sql, { now: new Date('no date') }));
  assert.equal(bad.code, '22023');
  assert.equal(bad.detail.rule, 'instant_invalid');

  // Once the tick closed the short one, it is gone from the list; the long one stays.
  assert.equal(await tick(31), 1);
  assert.deepEqual((await batchOverviews(sql)).map((b) => b.batchKey), ['slow']);

  // Bounded: 101 more open batches (one statement), 100 rows, the earliest due first.
  await sql`select switchyard.start_flow('batched', jsonb_build_object('n', g),
                                         batch_key => 'many' || g)
              from generate_series(1, 101) g`;
  const many = await batchOverviews(sql);
  assert.equal(many.length, 100);
  assert.ok(many.every((b) => b.alias === 'batched'), 'the 300 s batch is due last: left out');
  for (let i = 1; i < many.length; i++) {
    assert.ok(many[i - 1].dueAt.getTime() <= many[i].dueAt.getTime(), 'earliest due first');
  }

  await sql`select switchyard.close_batches(switchyard.clock_now() + interval '1 day')`;
  assert.deepEqual(await batchOverviews(sql), []);
  await sql`delete from switchyard.runs where flow_slug in ('batchV1', 'batchLongV1')`;
});

Deno.test('row triggers with batch_by: inserts form the batches of their key', async () => {
  await compile('orderBatchV1', 'order_batches', { batch: { maxSize: 2, timeout: 30 } });
  await sql`create table public.orders (id bigint primary key, customer text, amount int)`;
  const declared = await declareRowTrigger(sql, {
    name: 'order_batch',
    table: 'orders',
    alias: 'order_batches',
    inputColumns: ['id', 'amount'],
    batchBy: 'customer',
  });
  assert.equal(declared.batchBy, 'customer');
  assert.equal(
    (await listRowTriggers(sql)).find((t) => t.name === 'order_batch')?.batchBy,
    'customer',
  );

  await sql`insert into public.orders values (1, 'ada', 10)`;
  await sql`insert into public.orders values (2, 'bob', 20)`;
  await sql.begin(async (tx) => {
    await tx`insert into public.orders values (3, 'ada', 30)`;
    throw new Error('roll back');
  }).catch((e) => assert.match(String(e), /roll back/));
  // Two rows in one statement: both events, in the statement's order; the second fills ada's.
  await sql`insert into public.orders values (4, 'ada', 40), (5, 'ada', 50)`;
  await sql`insert into public.orders values (6, null, 60)`;

  let runs = await runsOf('orderBatchV1');
  assert.deepEqual(runs.map((r) => r.input), [[{ id: 1, amount: 10 }, { id: 4, amount: 40 }]]);
  assert.equal((runs[0].data as { batch: { key: string } }).batch.key, 'order_batch:ada');
  assert.deepEqual(
    (await openBatches()).filter((b) => b.started_as === 'order_batches')
      .map((b) => [b.batch_key, b.size]),
    [['order_batch', 1], ['order_batch:ada', 1], ['order_batch:bob', 1]],
    'a null value joins the table batch',
  );
  assert.equal(await tick(31), 3);
  runs = await runsOf('orderBatchV1');
  assert.deepEqual(
    runs.map((r) => JSON.stringify(r.input)).sort(),
    [
      '[{"id": 1, "amount": 10}, {"id": 4, "amount": 40}]',
      '[{"id": 2, "amount": 20}]',
      '[{"id": 5, "amount": 50}]',
      '[{"id": 6, "amount": 60}]',
    ].map((s) => JSON.stringify(JSON.parse(s))).sort(),
  );

  // One batch for the table, and an expression's value.
  await sql`create table public.clicks (id bigint primary key, page text)`;
  await declareRowTrigger(sql, {
    name: 'click_batch',
    table: 'clicks',
    alias: 'order_batches',
    batchBy: 'table',
  });
  await declareRowTrigger(sql, {
    name: 'click_len',
    table: 'clicks',
    alias: 'order_batches',
    batchBy: 'length(page) > 3',
  });
  await sql`insert into public.clicks values (1, 'home'), (2, 'a'), (3, 'about')`;
  assert.deepEqual(
    (await openBatches()).filter((b) => b.started_as === 'order_batches')
      .map((b) => [b.batch_key, b.size]),
    [['click_batch', 1], ['click_len:false', 1]],
  );

  // Refusals: batch_by with a key or a backfill, on a flow without batch, a bad expression.
  const refused = async (decl: Record<string, unknown>, rule: string) => {
    const e = await refusal(declareRowTrigger(sql, {
      name: 'bad_batch',
      table: 'orders',
      alias: 'order_batches',
      ...decl,
    }));
    assert.equal(e.detail.rule, rule, JSON.stringify(decl));
  };
  await refused({ batchBy: 'customer', keyBy: 'row', mode: 'dedupe' }, 'batch_with_key');
  await refused({ batchBy: 'customer', backfill: true }, 'batch_with_key');
  await refused({ batchBy: 'customer', alias: 'plain' }, 'batch_not_declared');
  await refused({ batchBy: 'no_such_column + 1' }, 'batch_by_invalid');
  assert.equal((await listRowTriggers(sql)).some((t) => t.name === 'bad_batch'), false);
});

Deno.test('8 connections, 2,000 events over 20 keys, rollbacks and ticks: each committed event in exactly one run', async () => {
  await compile('concBatchV1', 'conc_batches', { batch: { maxSize: 25, timeout: 1 } });
  if (Deno.env.get('SWITCHYARD_BATCH_UNLOCKED') === '1') {
    // How the test was checked to fail without the batch's locking (docs/design/batching.md):
    // the same functions with their row locks taken out.
    for (const fn of ['_batch_event', 'close_batches']) {
      const [d] = await sql<{ def: string }[]>`
        select pg_get_functiondef(p.oid) as def from pg_proc p
         where p.pronamespace = 'switchyard'::regnamespace and p.proname = ${fn}`;
      await sql.unsafe(d.def.replaceAll(/for update( skip locked)?/g, ''));
    }
  }
  const writers = 8;
  const perWriter = 250;
  const keys = Array.from({ length: 20 }, (_, i) => `key${i}`);
  const committed = new Map<string, string>(); // event id -> the run id its start answered
  const rolledBack = new Set<string>();
  let writing = writers;
  let ticks = 0;

  const writer = async (w: number) => {
    const conn = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
    try {
      let i = 0;
      while (i < perWriter) {
        const n = Math.min(perWriter - i, 1 + Math.floor(Math.random() * 3));
        const events = Array.from({ length: n }, (_, j) => ({
          id: `${w}.${i + j}`,
          w,
          i: i + j,
          key: keys[Math.floor(Math.random() * keys.length)],
        })).sort((a, b) => a.key.localeCompare(b.key)); // one lock order: no deadlock
        const rollback = Math.random() < 0.2;
        const answers: string[] = [];
        try {
          await conn.begin(async (tx) => {
            for (const e of events) {
              const [r] = await tx<{ id: string }[]>`
                select switchyard.start_flow('conc_batches', ${tx.json(e as never)}::jsonb,
                                             batch_key => ${e.key}) as id`;
              answers.push(r.id);
            }
            if (rollback) throw new Error('roll back');
          });
          events.forEach((e, j) => committed.set(e.id, answers[j]));
        } catch (e) {
          // A deliberate rollback, or a deadlock PostgreSQL broke by aborting this transaction:
          // either way its events must join nothing.
          const code = (e as { code?: string }).code;
          if (!/roll back/.test(String(e)) && code !== '40P01') throw e;
          for (const e of events) rolledBack.add(e.id);
        }
        i += n;
      }
    } finally {
      writing--;
      await conn.end();
    }
  };
  // Two tickers, each at the core's clock plus 0 to 2 s: batches (timeout 1 s) close while
  // events keep joining them, across the timeout boundary.
  const ticker = async () => {
    const conn = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
    try {
      while (writing > 0) {
        await conn`select switchyard.run_schedules(
          switchyard.clock_now() + ${Math.random() * 2} * interval '1 second')`;
        ticks++;
        await new Promise((r) => setTimeout(r, 5));
      }
    } finally {
      await conn.end();
    }
  };
  await Promise.all([
    ...Array.from({ length: writers }, (_, w) => writer(w)),
    ticker(),
    ticker(),
  ]);
  // Whatever is still open closes now.
  await sql`select switchyard.close_batches(switchyard.clock_now() + interval '1 day', 100000)`;
  assert.deepEqual(await openBatches(), []);
  assert.equal(committed.size + rolledBack.size, writers * perWriter);
  assert.ok(rolledBack.size > 0 && committed.size > 0);
  assert.ok(ticks > 0);

  const runs = await runsOf('concBatchV1');
  const seen = new Map<string, string>(); // event id -> the run it is in
  for (const run of runs) {
    const events = run.input as { id: string; w: number; i: number; key: string }[];
    const batch = (run.data as { batch: { key: string; size: number } }).batch;
    assert.ok(events.length >= 1 && events.length <= 25, `run of ${events.length} events`);
    assert.equal(batch.size, events.length);
    const lastOf = new Map<number, number>();
    for (const e of events) {
      assert.ok(!seen.has(e.id), `event ${e.id} in two runs: ${seen.get(e.id)} and ${run.run_id}`);
      assert.ok(!rolledBack.has(e.id), `rolled back event ${e.id} in run ${run.run_id}`);
      assert.equal(e.key, batch.key, 'an event is in a batch of its key');
      // Order of arrival: one writer's events of a key come in the order it wrote them.
      assert.ok((lastOf.get(e.w) ?? -1) < e.i, `event ${e.id} out of order in ${run.run_id}`);
      lastOf.set(e.w, e.i);
      seen.set(e.id, run.run_id);
    }
  }
  for (const [id, runId] of committed) {
    assert.equal(seen.get(id), runId, `committed event ${id} in the run its start answered`);
  }
  assert.equal(seen.size, committed.size, 'every committed event is in a run');
  console.log(
    `  ${committed.size} committed events, ${rolledBack.size} rolled back, ${runs.length} runs, ` +
      `${ticks} ticks`,
  );
});

Deno.test('cleanup', async () => {
  await db.close();
});
