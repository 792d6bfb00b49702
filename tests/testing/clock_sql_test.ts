/**
 * The SQL core's clock (docs/design/clock.md#one-clock-for-every-time-rule) on PostgreSQL: in
 * production the clock
 * functions are `now()` and `clock_timestamp()`, inlined into their callers; a test engine on a
 * database replaces `clock_now()` alone, puts the production definition back when it closes, and
 * moves PGMQ's own times with its clock (PGMQ's `read` sees a delayed message when the virtual
 * clock says, not before; its age grows), while real time passing between a test's calls leaks
 * into nothing.
 */
import assert from 'node:assert/strict';
import { createSchedule } from '../../lib/ops.ts';
import { createTestEngine } from '../../lib/testing.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { SCHEMAS } from '../../tools/sql_source.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { join } from 'node:path';
import { registry } from './_flows.ts';

Deno.test('in production the clock functions are now() and clock_timestamp(), inlined into the statements that call them', async () => {
  const db = await createTestDatabase();
  try {
    const [row] = await db.sql.begin((sql) =>
      sql<{ same: boolean; queue_same: boolean; volatile: string }[]>`
        select switchyard.clock_now() = now() as same,
               switchyard.queue_now() = now() as queue_same,
               (select provolatile from pg_proc where oid = 'switchyard.queue_clock()'::regprocedure)
                 as volatile`
    );
    assert.deepEqual(row, { same: true, queue_same: true, volatile: 'v' });
    // Inlined: the plan names now(), not the function (no call per row, no plan of its own).
    const plan = (await db.sql.unsafe(
      `explain (verbose, costs off)
       select r.run_id from switchyard.runs r
        where r.deadline_at <= switchyard.clock_now() and r.status = 'started'`,
    )).map((r) => Object.values(r)[0]).join('\n');
    assert.match(plan, /now\(\)/);
    assert.doesNotMatch(plan, /clock_now/);
    const vtPlan = (await db.sql.unsafe(
      `explain (verbose, costs off)
       select 1 from pgmq.meta m where m.created_at <= switchyard.queue_clock()`,
    )).map((r) => Object.values(r)[0]).join('\n');
    assert.match(vtPlan, /clock_timestamp\(\)/);
    assert.doesNotMatch(vtPlan, /queue_clock/);
  } finally {
    await db.close();
  }
});

Deno.test('an engine on a database replaces clock_now alone while it runs and puts the production definition back', async () => {
  const db = await createTestDatabase();
  try {
    const definition = async () => {
      const [r] = await db.sql<{ def: string }[]>`
        select pg_get_functiondef('switchyard.clock_now()'::regprocedure) as def`;
      return r.def;
    };
    const production = await definition();
    assert.match(production, /select pg_catalog\.now\(\)/);
    const engine = await createTestEngine({
      registry,
      databaseUrl: db.url,
      now: '2031-02-03T04:05:06.789Z',
    });
    try {
      const [r] = await db.sql<{ at: Date; queue_now_is_now: boolean }[]>`
        select switchyard.clock_now() as at, switchyard.queue_now() = now() as queue_now_is_now`;
      assert.equal(r.at.toISOString(), '2031-02-03T04:05:06.789Z');
      assert.equal(r.queue_now_is_now, true, "PGMQ's clock stays the database's");
      await engine.advance('1d 2h', { run: false });
      const [after] = await db.sql<{ at: Date }[]>`select switchyard.clock_now() as at`;
      assert.equal(after.at.toISOString(), '2031-02-04T06:05:06.789Z');
    } finally {
      await engine.close();
    }
    assert.equal(await definition(), production);
    const [gone] = await db.sql<{ present: boolean }[]>`
      select to_regnamespace('switchyard_test') is not null as present`;
    assert.equal(gone.present, false);
    const source = await Deno.readTextFile(
      join(KIT_ROOT, SCHEMAS, 'functions/rules/clock_now.sql'),
    );
    assert.match(source, /as \$\$ select pg_catalog\.now\(\) \$\$;/);
  } finally {
    await db.close();
  }
});

for (const where of ['PostgreSQL', 'PGlite'] as const) {
  Deno.test(`${where}: PGMQ's own read sees a delayed message when the virtual clock says, and its age grows with it`, async () => {
    const db = where === 'PostgreSQL' ? await createTestDatabase() : null;
    const engine = await createTestEngine({
      registry,
      databaseUrl: db?.url,
      now: '2030-01-01T00:00:00Z',
    });
    try {
      const sql = engine.sql;
      await sql`select pgmq.send('flakyv1', '{"probe": true}'::jsonb, 30)`;
      await engine.advance('29s', { run: false });
      assert.equal((await sql`select * from pgmq.read('flakyv1', 1, 1)`).length, 0);
      await engine.advance('1s', { run: false });
      const [m] = await sql<{ msg_id: string; message: unknown }[]>`
        select msg_id::text, message from pgmq.read('flakyv1', 0, 1)`;
      assert.deepEqual(m.message, { probe: true });
      const [metrics] = await sql<
        { m: { queues: { queue_name: string; oldest_age_seconds: number }[] } }[]
      >`
        select switchyard.metrics(60) as m`;
      const age = metrics.m.queues.find((q) => q.queue_name === 'flakyv1')!.oldest_age_seconds;
      assert.ok(age >= 30 && age < 32, `the message is ${age} s old`);
      await sql`select pgmq.delete('flakyv1', ${m.msg_id}::bigint)`;
    } finally {
      await engine.close();
      await db?.close();
    }
  });
}

Deno.test('real time a test spends between its calls does not leak into the virtual clock', async () => {
  const engine = await createTestEngine({ registry, now: '2030-01-01T00:00:00Z' });
  try {
    engine.mock('flaky', 'work', () => {
      throw new Error('once');
    }, { times: 1 });
    const run = await engine.start('flaky', { n: 1 });
    await engine.runUntilIdle(); // attempt 1 fails: a retry in 10 s
    await new Promise((resolve) => setTimeout(resolve, 700)); // a slow test
    await engine.advance('9s');
    await new Promise((resolve) => setTimeout(resolve, 700));
    await engine.runUntilIdle();
    assert.equal(engine.calls('flaky', 'work').length, 1, 'still 1 s to go on the virtual clock');
    await engine.advance('1s');
    assert.deepEqual(await engine.output(run), { work: 2 });
    assert.equal(engine.calls('flaky', 'work')[1].at.toISOString(), '2030-01-01T00:00:10.000Z');
  } finally {
    await engine.close();
  }
});

Deno.test('advance stops at every due time on the way, and gives up past maxStops naming the next', async () => {
  const engine = await createTestEngine({ registry, now: '2030-01-01T00:00:00Z' });
  try {
    await createSchedule(engine.sql, 'minutely', { alias: 'report', cron: '* * * * *' });
    const report = await engine.advance('10m');
    assert.equal(report.tasks, 10);
    await assert.rejects(
      engine.advance('1h', { maxStops: 5 }),
      /advance\("1h"\): stopped 5 times on the way and 2030-01-01T00:16:00\.000Z is due next, before 2030-01-01T01:10:00\.000Z: raise maxStops, or pass run: false/,
    );
    await assert.rejects(engine.advance('1m', { maxStops: 0 }), /maxStops 0 is invalid/);
  } finally {
    await engine.close();
  }
});
