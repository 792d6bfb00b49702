/**
 * The backfill of a row trigger (issue 43, docs/design/ingestion.md): runs for the rows a table
 * had before its declaration, batch by batch. While 4 connections keep inserting rows (before
 * and after the backfill's cursor, some rolled back), the backfill command is killed midway
 * (SIGKILL), then resumed by two backfills at once; afterwards every committed row has exactly
 * one run, a repeated backfill starts nothing, and the refusals name their rule. Real
 * PostgreSQL, real connections, a real process killed.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import { backfillRowTrigger, declareRowTrigger, listRowTriggers } from '../../lib/ops.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { spawnDeno } from '../_helpers/process.ts';
import { waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();

const flow = new Flow<{ id: number }>({ slug: 'backfillV1' }).step({ slug: 'a' }, (i) => i.id);
const deployed = defineDeployedFlow(flow, { alias: 'backfilled' });
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(deployed).shape as never)
}::jsonb)`;
await db.sql`select switchyard.sync_alias('backfilled', array['backfillV1'])`;

/** Rows of the table with a number of runs other than one, and the totals. */
async function tally(table: string) {
  const [t] = await db.sql<{ rows: number; runs: number; wrong: number }[]>`
    select (select count(*)::int from ${db.sql(table)}) as rows,
           (select count(*)::int from switchyard.runs where flow_slug = 'backfillV1') as runs,
           (select count(*)::int from ${db.sql(table)} a
             where (select count(*) from switchyard.runs r
                     where r.flow_slug = 'backfillV1' and (r.input ->> 'id')::int = a.id) <> 1)
             as wrong`;
  return { ...t };
}

async function state(name: string) {
  const [t] = (await listRowTriggers(db.sql)).filter((t) => t.name === name);
  return t.backfill!;
}

Deno.test('a backfill killed midway, resumed twice at once while writers insert: one run per row', async () => {
  const existing = 3000;
  await db.sql`create table public.accounts (id int primary key, email text not null)`;
  // The rows the table had: even ids.
  await db.sql`insert into public.accounts
               select 2 * i, 'a' || i || '@example.com' from generate_series(0, ${existing - 1}) i`;
  await declareRowTrigger(db.sql, {
    name: 'account_sync',
    table: 'accounts',
    alias: 'backfilled',
    inputColumns: ['id'],
    backfill: true,
  });
  assert.deepEqual(await tally('accounts'), { rows: existing, runs: 0, wrong: existing });

  // Writers: odd ids in random order across the whole range, so rows land behind and ahead of
  // the backfill's cursor; every fifth transaction rolls back.
  const odd = Array.from({ length: 2 * existing }, (_, i) => 2 * i + 1)
    .sort(() => Math.random() - 0.5);
  let stop = false;
  let committed = 0;
  let rolledBack = 0;
  const writers = Array.from(
    { length: 4 },
    () => postgres(db.url, { max: 1, onnotice: () => {}, prepare: false }),
  );
  const writing = Promise.all(writers.map(async (w, k) => {
    for (let n = 0; !stop; n++) {
      const id = odd.pop();
      if (id === undefined) return;
      const rollback = (n + k) % 5 === 4;
      await w.begin(async (tx) => {
        await tx`insert into public.accounts values (${id}, ${'w' + id + '@example.com'})`;
        if (rollback) throw new Error('roll back');
      }).then(() => committed++, (e) => {
        if (!rollback) throw e;
        rolledBack++;
      });
      await new Promise((r) => setTimeout(r, 2));
    }
  }));

  try {
    // The backfill command, killed once it committed a few batches.
    const command = spawnDeno(
      [
        'run',
        '-A',
        join(KIT_ROOT, 'cli', 'cli.ts'),
        'trigger',
        'backfill',
        'account_sync',
        '--batch-size',
        '40',
      ],
      { env: { SWITCHYARD_DB_URL: db.url, DATABASE_URL: db.url }, cwd: KIT_ROOT },
    );
    try {
      await waitFor(
        'five committed batches',
        async () => (await state('account_sync')).batches >= 5,
        {
          timeoutMs: 60_000,
        },
      );
    } finally {
      await command.stop('SIGKILL');
    }
    const killed = await state('account_sync');
    assert.equal(killed.state, 'pending', 'killed before the end');
    assert.ok(killed.rows < existing, `killed midway: ${killed.rows} rows passed`);
    const afterKill = await tally('accounts');
    assert.ok(afterKill.runs < afterKill.rows, 'rows are still waiting for their runs');

    // Resumed: two backfills at once take turns on the declaration, while the writers go on.
    const [a, b] = await Promise.all([
      backfillRowTrigger(db.sql, 'account_sync', { batchSize: 100 }),
      backfillRowTrigger(db.sql, 'account_sync', { batchSize: 70 }),
    ]);
    assert.ok(a.done && b.done);
    const done = await state('account_sync');
    assert.equal(done.state, 'done');
    assert.ok(done.rows >= existing, `the backfill passed every old row (${done.rows})`);
  } finally {
    stop = true;
    await writing.finally(() => Promise.all(writers.map((w) => w.end({ timeout: 5 }))));
  }
  assert.ok(
    committed > 0 && rolledBack > 0,
    `writers committed ${committed}, rolled back ${rolledBack}`,
  );
  // After the backfill, inserts start plain runs, once each.
  await db
    .sql`insert into public.accounts values (-1, 'late@example.com'), (-3, 'later@example.com')`;
  const final = await tally('accounts');
  assert.equal(final.rows, existing + committed + 2);
  assert.deepEqual(final, { rows: final.rows, runs: final.rows, wrong: 0 });

  // Repeated: a finished backfill starts nothing.
  const again = await backfillRowTrigger(db.sql, 'account_sync');
  assert.deepEqual({ rows: again.rows, runs: again.runs, done: again.done }, {
    rows: 0,
    runs: 0,
    done: true,
  });
  assert.deepEqual(await tally('accounts'), final);
});

Deno.test('a backfill applies the condition and the declared key; refusals name the rule', async () => {
  await db.sql`create table public.members (id int primary key, team text, active boolean)`;
  await db.sql`insert into public.members
               select i, 'team' || (i % 3), i % 2 = 0 from generate_series(1, 30) i`;
  await declareRowTrigger(db.sql, {
    name: 'member_sync',
    table: 'public.members',
    alias: 'backfilled',
    inputColumns: ['id', 'team'],
    condition: 'active',
    keyBy: 'team',
    mode: 'dedupe',
    backfill: true,
  });
  const batches: number[] = [];
  const last = await backfillRowTrigger(db.sql, 'member_sync', {
    batchSize: 7,
    onBatch: (b) => batches.push(b.rows),
  });
  assert.deepEqual(batches, [7, 7, 7, 7, 2]);
  assert.equal(last.totalRows, 30);
  assert.equal(last.totalRuns, 15, 'the 15 active rows named a run');
  const [{ runs }] = await db.sql<{ runs: number }[]>`
    select count(*)::int as runs from switchyard.runs r where r.input ? 'team'`;
  assert.equal(runs, 3, 'one run per team: the declared key dedupes');

  await declareRowTrigger(db.sql, { name: 'no_backfill', table: 'members', alias: 'backfilled' });
  const refused = async (p: Promise<unknown>) => {
    const e = await p.then(() => assert.fail('accepted'), (e) => e);
    assert.ok(e instanceof OperationError, String(e));
    return e;
  };
  let e = await refused(backfillRowTrigger(db.sql, 'no_backfill'));
  assert.equal(e.code, '55000');
  assert.equal(e.detail?.rule, 'backfill_not_declared');
  e = await refused(backfillRowTrigger(db.sql, 'nothing'));
  assert.equal(e.detail?.rule, 'row_trigger_unknown');
  assert.match(e.message, /row trigger "nothing" is unknown/);
  e = await refused(backfillRowTrigger(db.sql, 'member_sync', { batchSize: 0 }));
  assert.equal(e.detail?.rule, 'integer_range');
  assert.match(e.message, /batch_size 0 is invalid: use 1 to 10000 rows/);
});

Deno.test('a composite primary key on a quoted table: the cursor walks it, inserts share the key', async () => {
  await db.sql`create schema "Shop"`;
  await db.sql`create table "Shop"."Line Items" (order_id int, line int, sku text,
                                                primary key (order_id, line))`;
  await db.sql`insert into "Shop"."Line Items"
               select o, l, 'sku' || o || '-' || l from generate_series(1, 5) o, generate_series(1, 5) l`;
  await declareRowTrigger(db.sql, {
    name: 'line_item',
    table: '"Shop"."Line Items"',
    alias: 'backfilled',
    inputExpression: "jsonb_build_object('id', order_id * 100 + line, 'sku', sku)",
    backfill: true,
  });
  const first = await backfillRowTrigger(db.sql, 'line_item', { batchSize: 4, maxBatches: 2 });
  assert.deepEqual(first.after, ['2', '3'], 'the cursor is the 8th row in primary-key order');
  assert.equal(first.done, false);
  // Rows behind and ahead of the cursor, while the backfill is pending.
  await db.sql`insert into "Shop"."Line Items" values (1, 9, 'behind'), (9, 1, 'ahead')`;
  const last = await backfillRowTrigger(db.sql, 'line_item', { batchSize: 4 });
  assert.equal(last.done, true);
  assert.equal(last.totalRows, 26, '25 old rows and the one ahead');
  const [{ runs, ids }] = await db.sql<{ runs: number; ids: number }[]>`
    select count(*)::int as runs, count(distinct (input ->> 'id')::int)::int as ids
      from switchyard.runs where input ? 'sku'`;
  assert.deepEqual({ runs, ids }, { runs: 27, ids: 27 }, 'one run per row');
  const keys = await db.sql<{ key: string }[]>`
    select key from switchyard.start_keys where key like 'line\_item#%' order by key limit 1`;
  assert.equal(keys[0].key, 'line_item#[1, 1]', 'a composite key as a JSON array');
});

Deno.test('cleanup', async () => {
  await db.close();
});
