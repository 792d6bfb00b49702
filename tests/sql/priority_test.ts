/**
 * Run priority and keys in turn (issue 23, docs/design/flow-control.md#priority-and-keys-in-turn):
 * `start_flow(...,
 * priority => p)` and the client's `priority` option, the worker's read
 * `switchyard.read_tasks` (higher priority first, ageing, message order among equals, keys served
 * round-robin within their free slots, full keys not read), a plain queue left to PGMQ's own
 * read with the bodies of earlier releases, concurrent readers, and bad input. Real PostgreSQL
 * over real connections.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { SwitchyardError } from '../../lib/errors.ts';
import { Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { startRun } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);

async function deploy(flow: { slug: string }, queues: Record<string, string>) {
  // deno-lint-ignore no-explicit-any
  const routed = routeFlow(flow as any, { queues } as any);
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(routed).shape as never)}::jsonb)`;
}

/** Reads one message at a time until the queue has none visible; the runs' `n` in read order. */
async function readOrder(queue: string): Promise<number[]> {
  const order: number[] = [];
  for (;;) {
    const rows = await sql<{ id: string }[]>`
      select m::text as id from switchyard.read_tasks(${queue}, 60, 1) m`;
    if (rows.length === 0) return order;
    const [t] = await sql<{ n: number }[]>`
      select (r.input ->> 'n')::int as n from switchyard.step_tasks t
        join switchyard.runs r using (run_id)
       where t.queue_name = ${queue} and t.message_id = ${rows[0].id}::bigint`;
    order.push(t.n);
  }
}

async function start(flow: string, n: number, priority?: number, extra: object = {}) {
  const [{ id }] = await sql<{ id: string }[]>`
    select switchyard.start_flow(${flow}, ${sql.json({ n, ...extra } as never)}::jsonb,
      priority => ${priority ?? null}::int)::text as id`;
  return id;
}

const plain = new Flow<{ n: number }>({ slug: 'prioPlain' }).step({ slug: 'a' }, (i) => i.n);
await deploy(plain, { a: 'prio_plain' });
const ranked = new Flow<{ n: number }>({ slug: 'prioRanked' }).step({ slug: 'a' }, (i) => i.n);
await deploy(ranked, { a: 'prio_ranked' });

Deno.test('a queue no run with a priority used keeps PGMQ read order and the bodies of earlier releases', async () => {
  for (let n = 1; n <= 4; n++) await start('prioPlain', n);
  const [q] = await sql`select priority_used_at from switchyard.queues
    where queue_name = 'prio_plain'`;
  assert.equal(q.priority_used_at, null);
  const bodies = await sql`select message from pgmq.q_prio_plain order by msg_id`;
  assert.deepEqual(Object.keys(bodies[0].message).sort(), ['flow_slug', 'run_id', 'step_slug']);
  assert.deepEqual(await readOrder('prio_plain'), [1, 2, 3, 4]);
  // Every kit queue has the partial index of ranked messages, empty here.
  const [i] = await sql`select count(*)::int as n from pg_indexes
    where schemaname = 'pgmq' and indexname = 'q_prio_plain_ranked'`;
  assert.equal(i.n, 1);
});

Deno.test('higher priority is read first, equal priorities in message order; the read hides what it returns', async () => {
  const priorities = [0, 5, -3, 10, 0, 5, -10];
  for (const [n, p] of priorities.entries()) await start('prioRanked', n, p);
  const [q] = await sql`select priority_used_at is not null as used from switchyard.queues
    where queue_name = 'prio_ranked'`;
  assert.equal(q.used, true, 'the first run with a priority turned the priority read on');
  const [m] = await sql`select message from pgmq.q_prio_ranked order by msg_id offset 1 limit 1`;
  assert.equal(m.message.priority, 5);
  assert.equal(typeof m.message.ranked_at, 'number');
  assert.deepEqual(await readOrder('prio_ranked'), [3, 1, 5, 0, 4, 2, 6]);
  const [r] = await sql`select count(*)::int as n, min(read_ct)::int as lo, max(read_ct)::int as hi,
      bool_and(vt > now() + interval '50 seconds') as hidden from pgmq.q_prio_ranked`;
  assert.deepEqual({ ...r }, { n: 7, lo: 1, hi: 1, hidden: true });
  await sql`delete from pgmq.q_prio_ranked`;
});

Deno.test('ageing: a task that waited longer than the levels between them goes before higher priority', async () => {
  await sql`select switchyard.set_setting('priority_ageing_seconds', '1')`;
  try {
    await start('prioRanked', 100, 0); // waits 2.5 s: worth 2.5 levels
    await new Promise((r) => setTimeout(r, 2500));
    await start('prioRanked', 101, 1); // one level: behind the older one
    await start('prioRanked', 102, 2); // two levels: still behind it
    await start('prioRanked', 103, 3); // three levels: ahead of it
    assert.deepEqual(await readOrder('prio_ranked'), [103, 100, 102, 101]);
  } finally {
    await sql`select switchyard.set_setting('priority_ageing_seconds', null)`;
    await sql`delete from pgmq.q_prio_ranked`;
  }
});

Deno.test('concurrent readers of a priority queue share it out: every message once, higher priority first', async () => {
  const total = 200;
  for (let n = 0; n < total; n++) await start('prioRanked', n, n % 3 === 0 ? 4 : 0);
  const conns = Array.from({ length: 4 }, () => postgres(db.url, { max: 1, onnotice: () => {} }));
  const seen: string[] = [];
  const firstBatches: string[][] = [];
  try {
    // Every reader connected before any reads: the first reads are then concurrent (4 x 7 of the
    // 67 priority-4 messages), not one reader's first read after a slow connect under load.
    await Promise.all(conns.map((c) => c`select 1`));
    await Promise.all(conns.map(async (c) => {
      let first = true;
      for (;;) {
        const rows = await c<{ id: string }[]>`
          select m::text as id from switchyard.read_tasks('prio_ranked', 60, 7) m`;
        if (rows.length === 0) return;
        if (first) firstBatches.push(rows.map((r) => r.id));
        first = false;
        seen.push(...rows.map((r) => r.id));
      }
    }));
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
  assert.equal(seen.length, total);
  assert.equal(new Set(seen).size, total, 'no message read twice');
  // The first batches hold priority-4 runs only (67 of them, read 7 at a time).
  const firstIds = firstBatches.flat();
  const [p] = await sql`select count(*)::int as n from switchyard.step_tasks t
      join switchyard.runs r using (run_id)
     where t.queue_name = 'prio_ranked' and t.message_id = any (${firstIds}::bigint[])
       and r.priority = 4`;
  assert.equal(p.n, firstIds.length);
  await sql`delete from pgmq.q_prio_ranked`;
});

Deno.test('keys in turn: a burst of one key does not hold back another, full keys are not read', async () => {
  const keyed = new Flow<{ n: number; tenant: string }>({ slug: 'prioKeyed' })
    .step({ slug: 'a', concurrency: { key: 'tenant', limit: 2 } }, (i) => i.n);
  await deploy(keyed, { a: 'prio_keyed' });
  for (let n = 0; n < 30; n++) await start('prioKeyed', n, undefined, { tenant: 'acme' });
  for (let n = 30; n < 35; n++) await start('prioKeyed', n, undefined, { tenant: 'globex' });
  const [b] = await sql`select message ->> 'concurrency_key' as k from pgmq.q_prio_keyed
    order by msg_id limit 1`;
  assert.equal(b.k, 'prioKeyed/a:"acme"', 'the message carries the key the claim counts');
  // Nothing started yet: each key gets its 2 free slots, acme's and globex's interleaved.
  const read = async (qty: number) =>
    (await sql<{ n: number; tenant: string; id: string }[]>`
      select (r.input ->> 'n')::int as n, r.input ->> 'tenant' as tenant, m::text as id
        from switchyard.read_tasks('prio_keyed', 60, ${qty}) m
        join switchyard.step_tasks t on t.queue_name = 'prio_keyed' and t.message_id = m
        join switchyard.runs r on r.run_id = t.run_id
       order by 1`).map((r) => ({ ...r }));
  const first = await read(10);
  assert.deepEqual(first.map((r) => r.n), [0, 1, 30, 31]);
  // Those four started (as a claim would start them): both keys are full, so a read finds
  // nothing although 31 messages are visible, and reads none of them.
  await sql`update switchyard.step_tasks t set status = 'started', attempts_count = 1,
      concurrency_key = switchyard._concurrency_key(t.run_id, t.flow_slug, t.step_slug, 0)
    where t.queue_name = 'prio_keyed' and t.message_id = any (${first.map((r) => r.id)}::bigint[])`;
  assert.deepEqual(await read(10), []);
  const [v] = await sql`select count(*)::int as visible, max(read_ct)::int as reads
    from pgmq.q_prio_keyed where vt <= now()`;
  assert.deepEqual({ ...v }, { visible: 31, reads: 0 });
  // One acme task ends: one acme slot is free, and only one acme message is read.
  await sql`update switchyard.step_tasks t set status = 'completed'
    where t.queue_name = 'prio_keyed' and t.message_id = ${first[0].id}::bigint`;
  assert.deepEqual((await read(10)).map((r) => r.n), [2]);
  await sql`delete from pgmq.q_prio_keyed`;
});

Deno.test('priority from the client; bad priorities and reads are refused by name', async () => {
  const id = await startRun(client, 'prioRanked', { n: 1 }, { priority: -2 });
  const [r] = await sql`select priority from switchyard.runs where run_id = ${id}::uuid`;
  assert.equal(r.priority, -2);
  for (const bad of [11, -11, 1.5, Number.NaN]) {
    await assert.rejects(
      () => startRun(client, 'prioRanked', { n: 1 }, { priority: bad }),
      (e: Error) =>
        e instanceof SwitchyardError && e.message.includes(`priority ${bad}`) &&
        e.message.includes('from -10'),
    );
  }
  const e = await sql`select switchyard.start_flow('prioRanked', '{}', priority => 11)`.then(
    () => assert.fail('accepted'),
    (e) => e,
  );
  assert.equal(e.code, '22023');
  assert.equal(JSON.parse(e.detail).rule, 'priority_range');
  assert.match(e.message, /priority 11 is invalid/);
  for (
    const [call, rule] of [
      [sql`select * from switchyard.read_tasks('prio_ranked', 60, 0)`, 'read_qty'],
      [sql`select * from switchyard.read_tasks('prio_ranked', -1, 1)`, 'read_visibility'],
      [sql`select * from switchyard.read_tasks('no_such_queue', 60, 1)`, 'queue_unknown'],
    ] as const
  ) {
    const err = await call.then(() => assert.fail(`${rule}: accepted`), (e) => e);
    assert.equal(err.code, '22023', rule);
    assert.equal(JSON.parse(err.detail).rule, rule);
  }
  const setting = await sql`select switchyard.set_setting('priority_ageing_seconds', '0')`.then(
    () => assert.fail('accepted'),
    (e) => e,
  );
  assert.match(setting.message, /priority_ageing_seconds "0" is invalid/);
  await sql`delete from pgmq.q_prio_ranked`;
});

Deno.test('read_ordered names the queues read in order; an idle worker polling either kind holds no lock on a switchyard table', async () => {
  const ordered = await sql`select q, switchyard.read_ordered(q) as o
    from unnest(array['prio_plain', 'prio_ranked', 'prio_keyed', 'no_such_queue']) q order by q`;
  assert.deepEqual(ordered.map((r) => [r.q, r.o]), [
    ['no_such_queue', false],
    ['prio_keyed', true],
    ['prio_plain', false],
    ['prio_ranked', true],
  ]);
  // Two workers polling idle queues, one plain (PGMQ's read_with_poll waits in the database) and
  // one ordered (read_tasks, polled by the worker), for 5 s per read. A migration's preamble takes
  // every switchyard table with a 100 ms lock_timeout (docs/design/supabase.md): it must get them.
  const options = { connectionString: db.url, maxPollSeconds: 5, pollIntervalMs: 50 };
  const ws = [
    await startWorker([routeFlow(plain, { queues: { a: 'prio_plain' } })], {
      ...options,
      queueName: 'prio_plain',
    }),
    await startWorker([routeFlow(ranked, { queues: { a: 'prio_ranked' } })], {
      ...options,
      queueName: 'prio_ranked',
    }),
  ];
  const locker = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await new Promise((r) => setTimeout(r, 1000)); // both are inside a poll
    let refused = 0;
    for (let i = 0; i < 10; i++) {
      await locker.begin(async (tx) => {
        await tx`set local lock_timeout = '100ms'`;
        const tables = await tx<{ t: string }[]>`
          select format('%I.%I', schemaname, tablename) as t from pg_tables
           where schemaname = 'switchyard' order by 1`;
        await tx.unsafe(
          `lock table ${tables.map((t) => t.t).join(', ')} in access exclusive mode`,
        );
      }).catch((e) => {
        if (e.code !== '55P03') throw e;
        refused++;
      });
      await new Promise((r) => setTimeout(r, 150));
    }
    assert.ok(refused <= 2, `the preamble's lock was refused ${refused} times in 10`);
  } finally {
    await locker.end();
    await Promise.all(ws.map((w) => w.stop()));
  }
});

Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
