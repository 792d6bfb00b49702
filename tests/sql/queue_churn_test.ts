/**
 * The queue table's churn (issue 27, docs/design/overview.md#queue-ownership,
 * docs/design/claim.md#read, docs/design/claim.md#hiding-claimed-messages): the worker's read
 * hides a message as long as its claim needs, so the claim writes it no more, and every queue
 * table the kit creates or adopts is tuned for churn (autovacuum by dead rows, unthrottled).
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow } from '../../lib/mod.ts';
import { pgArray, WorkerQueries } from '../../lib/sql/worker_queries.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

const TUNED = [
  'autovacuum_vacuum_scale_factor=0',
  'autovacuum_vacuum_threshold=1000',
  'autovacuum_vacuum_cost_delay=0',
];

async function reloptions(table: string): Promise<string[]> {
  const [row] = await sql<{ o: string[] | null }[]>`
    select c.reloptions as o from pg_class c where c.oid = to_regclass(${'pgmq.' + table})`;
  assert.ok(row, `table pgmq.${table} exists`);
  return row.o ?? [];
}

// Two steps on one queue with different timeouts: the read covers the longer one.
const churn = new Flow<{ n: number }>({ slug: 'churn', timeout: 40 })
  .step({ slug: 'a', timeout: 7 }, (i) => i.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (i) => i.a);
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(churn).shape as never)}::jsonb)`;
const worker = crypto.randomUUID();
await sql`select switchyard.register_worker(${worker}::uuid, 'churn', 'churn-worker',
  array['churn/a', 'churn/b'])`;

async function startRuns(count: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let n = 0; n < count; n++) {
    const [{ id }] = await sql`select switchyard.start_flow('churn', ${
      sql.json({ n })
    }::jsonb) as id`;
    const [t] = await sql<
      { message_id: string }[]
    >`select message_id::text from switchyard.step_tasks
      where run_id = ${id} and step_slug = 'a'`;
    ids.push(BigInt(t.message_id));
  }
  return ids;
}

/** Each message's row version and how long it stays hidden from now. */
async function rows(ids: bigint[]) {
  return new Map(
    (await sql<{ msg_id: string; version: string; secs: number }[]>`
      select msg_id::text, ctid::text || '/' || xmin::text as version,
             extract(epoch from vt - clock_timestamp())::float as secs
        from pgmq.q_churn where msg_id = any(${pgArray(ids)}::bigint[])`)
      .map((r) => [BigInt(r.msg_id), r]),
  );
}

Deno.test("read_visibility_seconds: the claim window plus the queue's longest task timeout and the margin, capped", async () => {
  const [{ margin, cap }] = await sql`select switchyard.claim_margin_seconds() as margin,
    switchyard.read_visibility_cap_seconds() as cap`;
  const seconds = async (queue: string, window: number) =>
    (await sql`select switchyard.read_visibility_seconds(${queue}, ${window}) as s`)[0].s;
  // Step a says 7, step b inherits the flow's 40.
  assert.equal(await seconds('churn', 5), 5 + 40 + margin);
  // A queue with no step: the window alone.
  await sql`select switchyard.ensure_shared_queue('churn_empty')`;
  assert.equal(await seconds('churn_empty', 5), 5);
  // A long timeout is capped; a window longer than the cap is kept.
  const long = new Flow({ slug: 'churnLong', timeout: 3600 }).step({ slug: 'a' }, () => 1);
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(long).shape as never)}::jsonb)`;
  assert.equal(await seconds('churnlong', 5), cap);
  assert.equal(await seconds('churnlong', 600), 600);
  for (const bad of [0, 3601, null]) {
    await assert.rejects(
      sql`select switchyard.read_visibility_seconds('churn', ${bad}::int)`,
      (e: postgres.PostgresError) => {
        assert.equal(e.code, '22023');
        assert.match(
          e.message,
          new RegExp(`claim window ${bad ?? 'null'} is invalid: use whole seconds from 1 to 3600`),
        );
        return true;
      },
    );
  }
});

Deno.test("the worker's read hides a batch long enough for its claim, which then writes none of its messages", async () => {
  const ids = await startRuns(3);
  const q = new WorkerQueries(sql);
  const read = await q.readWithPoll('churn', 5, 10, 1, 10);
  assert.deepEqual(read, ids); // both in message order
  const [{ margin }] = await sql`select switchyard.claim_margin_seconds() as margin`;
  const before = await rows(ids);
  for (const r of before.values()) {
    assert.ok(r.secs > 5 + 40 + margin - 2, `read hides ${r.msg_id} for ${r.secs} s`);
  }
  const claims = await q.startTasks('churn', read, worker, null);
  assert.deepEqual(claims.map((c) => c.disposition), ['claimed', 'claimed', 'claimed']);
  const after = await rows(ids);
  for (const id of ids) {
    // The same row version: the claim did not update the message (no dead row, no index entry).
    assert.equal(after.get(id)!.version, before.get(id)!.version, `message ${id} not written`);
    assert.ok(after.get(id)!.secs >= 7 + margin, `message ${id} hidden past its timeout`);
  }
});

Deno.test('a message read with less visibility than its claim needs is hidden for its timeout plus the margin', async () => {
  const ids = await startRuns(2);
  // A read as an older worker makes it: the claim window alone.
  const read = await sql<{ msg_id: string }[]>`select msg_id::text from pgmq.read('churn', 1, 10)`;
  assert.equal(read.length, 2);
  const before = await rows(ids);
  const [{ margin }] = await sql`select switchyard.claim_margin_seconds() as margin`;
  const claims = await new WorkerQueries(sql).startTasks('churn', ids, worker, null);
  assert.deepEqual(claims.map((c) => c.disposition), ['claimed', 'claimed']);
  const after = await rows(ids);
  for (const id of ids) {
    assert.notEqual(after.get(id)!.version, before.get(id)!.version, `message ${id} written`);
    const secs = after.get(id)!.secs;
    assert.ok(secs > 7 + margin - 2 && secs <= 7 + margin, `message ${id} hidden ${secs} s`);
  }
});

Deno.test("the worker's read gives the batch's earliest vt, and a claim given it runs no statement on its messages", async () => {
  const ids = await startRuns(3);
  const q = new WorkerQueries(sql);
  const read = await q.readBatch('churn', 5, 10, 1, 10);
  assert.deepEqual(read.ids, ids);
  assert.ok(read.hiddenUntil !== null, 'a core with claim_batch gets the read vt');
  const [{ same }] = await sql<{ same: boolean }[]>`
    select ${read.hiddenUntil}::text::timestamptz = min(vt) as same
      from pgmq.q_churn where msg_id = any(${pgArray(ids)}::bigint[])`;
  assert.equal(same, true, `hiddenUntil ${read.hiddenUntil} is the batch's earliest vt`);
  const before = await rows(ids);
  const claims = await q.startTasks('churn', read.ids, worker, null, read.hiddenUntil);
  assert.deepEqual(claims.map((c) => c.disposition), ['claimed', 'claimed', 'claimed']);
  assert.deepEqual(claims.map((c) => c.attempt), [1, 1, 1]);
  const after = await rows(ids);
  for (const id of ids) {
    assert.equal(after.get(id)!.version, before.get(id)!.version, `message ${id} not written`);
  }
});

Deno.test('claim_batch writes no message when hidden_until covers every need, and hides each one it does not cover', async () => {
  const ids = await startRuns(2);
  // Read with the claim window alone: each message hidden about 1 s, far less than it needs.
  const read = await sql<{ msg_id: string; vt: string }[]>`
    select msg_id::text, vt::text from pgmq.read('churn', 1, 10)`;
  assert.equal(read.length, 2);
  const [{ margin }] = await sql`select switchyard.claim_margin_seconds() as margin`;
  const q = new WorkerQueries(sql);
  const before = await rows(ids);
  // The worker's word that the first is hidden an hour: the claim does not write it.
  const [{ hour }] = await sql<{ hour: string }[]>`
    select (clock_timestamp() + interval '1 hour')::text as hour`;
  const first = await q.startTasks('churn', [ids[0]], worker, null, hour);
  assert.deepEqual(first.map((c) => c.disposition), ['claimed']);
  // The read's true vt for the second: too short, so it is hidden for its timeout and margin.
  const second = await q.startTasks('churn', [ids[1]], worker, null, read[1].vt);
  assert.deepEqual(second.map((c) => c.disposition), ['claimed']);
  const after = await rows(ids);
  assert.equal(after.get(ids[0])!.version, before.get(ids[0])!.version, 'first not written');
  assert.ok(after.get(ids[0])!.secs <= 1, `first hidden ${after.get(ids[0])!.secs} s`);
  assert.notEqual(after.get(ids[1])!.version, before.get(ids[1])!.version, 'second written');
  const secs = after.get(ids[1])!.secs;
  assert.ok(secs > 7 + margin - 2 && secs <= 7 + margin, `second hidden ${secs} s`);
  // Make the first visible again for the tests after this one: it is claimed, not lost.
  await sql`select pgmq.set_vt('churn', ${ids[0].toString()}::bigint, 3600)`;
});

Deno.test('a batch read in order gives a bound at or below each message vt, and its claim writes none', async () => {
  await sql`update switchyard.queues set priority_used_at = clock_timestamp()
             where queue_name = 'churn'`;
  try {
    const ids = await startRuns(2);
    const q = new WorkerQueries(sql);
    const read = await q.readBatch('churn', 5, 10, 1, 10);
    assert.deepEqual(read.ids, ids);
    assert.ok(read.hiddenUntil !== null);
    const [{ below, gap }] = await sql<{ below: boolean; gap: number }[]>`
      select ${read.hiddenUntil}::text::timestamptz <= min(vt) as below,
             extract(epoch from min(vt) - ${read.hiddenUntil}::text::timestamptz)::float as gap
        from pgmq.q_churn where msg_id = any(${pgArray(ids)}::bigint[])`;
    assert.equal(below, true, 'the bound is never past a vt the read wrote');
    assert.ok(gap < 1, `the bound is the read's start: ${gap} s below`);
    const before = await rows(ids);
    const claims = await q.startTasks('churn', read.ids, worker, null, read.hiddenUntil);
    assert.deepEqual(claims.map((c) => c.disposition), ['claimed', 'claimed']);
    const after = await rows(ids);
    for (const id of ids) {
      assert.equal(after.get(id)!.version, before.get(id)!.version, `message ${id} not written`);
    }
  } finally {
    await sql`update switchyard.queues set priority_used_at = null where queue_name = 'churn'`;
  }
});

Deno.test('every queue the kit creates or adopts has its queue table tuned for churn', async () => {
  // Private (with its flow), shared, adopted (mixed-case PGMQ spelling).
  assert.deepEqual((await reloptions('q_churn')).sort(), [...TUNED].sort());
  await sql`select switchyard.ensure_shared_queue('churn_shared')`;
  assert.deepEqual((await reloptions('q_churn_shared')).sort(), [...TUNED].sort());
  await sql`select pgmq.create('Churn_Adopted')`;
  assert.deepEqual(await reloptions('q_churn_adopted'), []);
  await sql`select switchyard.adopt_queue('Churn_Adopted')`;
  assert.deepEqual((await reloptions('q_churn_adopted')).sort(), [...TUNED].sort());
  // Settings of its own are kept beside the kit's.
  await sql`alter table pgmq.q_churn_shared set (autovacuum_vacuum_threshold = 50, fillfactor = 90)`;
  await sql`select switchyard._tune_queue_table('churn_shared')`;
  assert.deepEqual(
    (await reloptions('q_churn_shared')).sort(),
    [...TUNED, 'fillfactor=90'].sort(),
  );
});

Deno.test('the upgrade step tunes the queues made before it, and skips a queue whose table is gone', async () => {
  await sql`select switchyard.ensure_shared_queue('churn_old')`;
  await sql`alter table pgmq.q_churn_old reset (autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay)`;
  await sql`select switchyard.ensure_shared_queue('churn_gone')`;
  // Gone as PGMQ drops a queue (the real extension refuses a plain DROP of a table it made: the
  // table is a member of the extension).
  await sql`select pgmq.drop_queue('churn_gone')`;
  assert.equal((await sql`select to_regclass('pgmq.q_churn_gone') as t`)[0].t, null);
  const step = await Deno.readTextFile(
    new URL('../../supabase/upgrades/0.4.0/after/queue_table_tuning.sql', import.meta.url),
  );
  await sql.unsafe(step);
  assert.deepEqual((await reloptions('q_churn_old')).sort(), [...TUNED].sort());
});

Deno.test('a queue table this role does not own keeps its settings, with a warning naming the table and the statement', async () => {
  await sql`select switchyard.ensure_shared_queue('churn_foreign')`;
  await sql`alter table pgmq.q_churn_foreign reset (autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay)`;
  const role = `churn_probe_${crypto.randomUUID().slice(0, 8)}`;
  await sql.unsafe(`create role ${role}; grant usage on schema switchyard, pgmq to ${role};
    grant execute on function switchyard._tune_queue_table(text) to ${role}`);
  const notices: string[] = [];
  const probe = postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: (n) => notices.push(`${n.severity}: ${n.message}`),
  });
  try {
    await probe.begin(async (tx) => {
      await tx.unsafe(`set local role ${role}`);
      await tx`select switchyard._tune_queue_table('churn_foreign')`;
    });
  } finally {
    await probe.end();
  }
  assert.deepEqual(await reloptions('q_churn_foreign'), []);
  assert.equal(notices.length, 1, notices.join('\n'));
  assert.match(
    notices[0],
    /^WARNING: queue table pgmq\.q_churn_foreign keeps its autovacuum settings: this role does not own it; its owner can run: alter table pgmq\.q_churn_foreign set \(autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=1000, autovacuum_vacuum_cost_delay=0\)$/,
  );
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
