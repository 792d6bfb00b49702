/**
 * Schedules (docs/design/schedules.md): the scheduler's tick `switchyard.run_schedules(now)`
 * driven by a test clock on real PostgreSQL. Exactly one run per tick (double fires, 100
 * concurrent ticks), the overlap policies, the catch-up policies after missed ticks, an alias
 * moved between ticks, a daylight-saving change in Europe/Berlin, a paused target function,
 * backfill, and bad input refused with its rule and nothing created.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow } from '../../lib/mod.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { deno } from '../_helpers/process.ts';

const db = await createTestDatabase();
const sql = db.sql;

async function compile(slug: string, alias?: string) {
  const flow = new Flow<{ n?: number }>({ slug }).step({ slug: 'work' }, () => 1);
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(flow).shape as never)}::jsonb)`;
  if (alias) await sql`select switchyard.sync_alias(${alias}, array[${slug}]::text[])`;
}

await compile('reportV1', 'report');
await compile('reportV2');

/** A schedule created at `createdAt` (the test clock starts there). */
async function schedule(name: string, cron: string, options: Record<string, unknown> = {}) {
  const o = {
    alias: 'report',
    time_zone: 'UTC',
    overlap: 'skip',
    catch_up: 'latest',
    catch_up_limit: 10,
    createdAt: '2026-01-05T00:00:00Z',
    ...options,
  };
  await sql`select switchyard.create_schedule(${name}, ${o.alias as string}, ${cron},
    '{"n": 1}'::jsonb, ${o.time_zone as string}, ${o.overlap as string}, ${o.catch_up as string},
    ${o.catch_up_limit as number})`;
  await sql`update switchyard.schedules set created_at = ${o.createdAt as string}::timestamptz,
              checked_until = ${o.createdAt as string}::timestamptz where name = ${name}`;
}

const tick = async (at: string) =>
  (await sql<{ n: number }[]>`select switchyard.run_schedules(${at}::timestamptz) as n`)[0].n;

async function ticks(name: string) {
  return (await sql<{ tick_at: Date; outcome: string; run_id: string; status: string | null }[]>`
    select st.tick_at, st.outcome, st.run_id, r.status from switchyard.schedule_ticks st
      left join switchyard.runs r on r.run_id = st.run_id
     where st.schedule_name = ${name} order by st.tick_at`).map((r) => ({
    at: r.tick_at.toISOString(),
    outcome: r.outcome,
    run_id: r.run_id,
    status: r.status,
  }));
}

async function runsOf(name: string) {
  return (await sql<{ run_id: string; flow_slug: string; status: string }[]>`
    select r.run_id, r.flow_slug, r.status from switchyard.runs r
     where r.run_id in (select run_id from switchyard.schedule_ticks where schedule_name = ${name})
     order by r.started_at, r.run_id`).map((r) => ({ ...r }));
}

const finish = (runId: string) =>
  sql`update switchyard.runs set status = 'completed', completed_at = now()
       where run_id = ${runId}::uuid`;

Deno.test('a double fire of one tick starts one run; the run id is derived from schedule and tick', async () => {
  await schedule('double', '*/10 * * * *');
  assert.equal(await tick('2026-01-05T00:10:00Z'), 1);
  assert.equal(await tick('2026-01-05T00:10:00Z'), 0, 'the same tick again');
  assert.equal(await tick('2026-01-05T00:10:30Z'), 0, 'later within the same minute');
  const [t] = await ticks('double');
  assert.equal(t.at, '2026-01-05T00:10:00.000Z');
  assert.equal(t.outcome, 'started');
  const [{ derived }] = await sql<{ derived: string }[]>`
    select switchyard._schedule_run_id('double', '2026-01-05T00:10:00Z') as derived`;
  assert.equal(t.run_id, derived);
  const runs = await runsOf('double');
  assert.equal(runs.length, 1);
  assert.equal(runs[0].flow_slug, 'reportV1');
});

Deno.test('100 concurrent ticks for one schedule: one run per tick', async () => {
  await schedule('crowd', '* * * * *');
  const clients = Array.from(
    { length: 10 },
    () => postgres(db.url, { max: 1, onnotice: () => {}, prepare: false }),
  );
  try {
    const times = ['2026-01-05T00:01:00Z', '2026-01-05T00:02:00Z', '2026-01-05T00:03:00Z'];
    const started = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        clients[i % 10]<{ n: number }[]>`
          select switchyard.run_schedules(${times[i % 3]}::timestamptz) as n`.then((r) => r[0].n)),
    );
    const all = await ticks('crowd');
    const byTick = new Map<string, number>();
    for (const t of all) byTick.set(t.at, (byTick.get(t.at) ?? 0) + 1);
    assert.ok([...byTick.values()].every((n) => n === 1), JSON.stringify([...byTick]));
    const runs = await runsOf('crowd');
    assert.equal(runs.length, all.filter((t) => t.outcome === 'started').length);
    assert.equal(started.reduce((a, b) => a + b, 0), runs.length, 'each start counted once');
    assert.ok(runs.length >= 1);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});

Deno.test('overlap skip: a tick while the previous run is open is skipped and counted', async () => {
  await schedule('skipper', '0 * * * *', { overlap: 'skip' });
  assert.equal(await tick('2026-01-05T01:00:00Z'), 1);
  assert.equal(await tick('2026-01-05T02:00:00Z'), 0);
  const t = await ticks('skipper');
  assert.deepEqual(t.map((x) => x.outcome), ['started', 'skipped']);
  await finish(t[0].run_id);
  assert.equal(await tick('2026-01-05T03:00:00Z'), 1);
  const [{ skipped }] = await sql`select skipped_ticks::int as skipped from switchyard.schedules
                                   where name = 'skipper'`;
  assert.equal(skipped, 1);
});

Deno.test('overlap queue: ticks wait behind the open run and start in order when it ends', async () => {
  await schedule('queuer', '0 * * * *', { overlap: 'queue' });
  assert.equal(await tick('2026-01-05T01:00:00Z'), 1);
  assert.equal(await tick('2026-01-05T02:00:00Z'), 0);
  assert.equal(await tick('2026-01-05T03:00:00Z'), 0);
  let t = await ticks('queuer');
  assert.deepEqual(t.map((x) => x.outcome), ['started', 'queued', 'queued']);
  await finish(t[0].run_id);
  assert.equal(await tick('2026-01-05T03:00:30Z'), 1, 'the oldest queued tick starts');
  t = await ticks('queuer');
  assert.deepEqual(t.map((x) => [x.outcome, x.status]), [
    ['started', 'completed'],
    ['started', 'started'],
    ['queued', null],
  ]);
  await finish(t[1].run_id);
  assert.equal(await tick('2026-01-05T03:01:00Z'), 1);
  t = await ticks('queuer');
  assert.deepEqual(t.map((x) => x.outcome), ['started', 'started', 'started']);
});

Deno.test('overlap cancel_previous: the open run is cancelled, the new tick starts', async () => {
  await schedule('replacer', '0 * * * *', { overlap: 'cancel_previous' });
  assert.equal(await tick('2026-01-05T01:00:00Z'), 1);
  assert.equal(await tick('2026-01-05T02:00:00Z'), 1);
  const t = await ticks('replacer');
  assert.deepEqual(t.map((x) => [x.outcome, x.status]), [
    ['started', 'cancelled'],
    ['started', 'started'],
  ]);
  const [{ error }] = await sql`select error from switchyard.runs where run_id = ${t[0].run_id}`;
  assert.match(error, /schedule replacer: replaced by the tick of 2026-01-05 02:00/);
});

Deno.test('catch-up after 3 missed ticks: none runs none, latest the last, all each (bounded)', async () => {
  for (const policy of ['none', 'latest', 'all']) {
    await schedule(`catch-${policy}`, '0 * * * *', {
      catch_up: policy,
      overlap: 'queue',
      catch_up_limit: 2,
    });
  }
  // Down from 00:00 to 03:30: the ticks of 01:00, 02:00 and 03:00 were missed.
  for (const policy of ['none', 'latest', 'all']) {
    const name = `catch-${policy}`;
    await sql`select switchyard.run_schedules('2026-01-05T03:30:00Z')`;
    const t = await ticks(name);
    const [{ missed }] = await sql`select missed_ticks::int as missed from switchyard.schedules
                                    where name = ${name}`;
    if (policy === 'none') {
      assert.deepEqual(t, [], 'late ticks do not run');
      assert.equal(missed, 3);
    } else if (policy === 'latest') {
      assert.deepEqual(t.map((x) => x.at), ['2026-01-05T03:00:00.000Z']);
      assert.equal(missed, 2);
    } else {
      assert.deepEqual(t.map((x) => [x.at, x.outcome]), [
        ['2026-01-05T02:00:00.000Z', 'started'],
        ['2026-01-05T03:00:00.000Z', 'queued'],
      ], 'the latest catch_up_limit ticks, behind each other (overlap queue)');
      assert.equal(missed, 1);
    }
  }
  // On time, 'none' runs the tick.
  assert.equal(
    (await sql`select switchyard.run_schedules('2026-01-05T04:00:20Z')`).length,
    1,
  );
  assert.deepEqual((await ticks('catch-none')).map((x) => x.at), ['2026-01-05T04:00:00.000Z']);
});

Deno.test('an alias moved between ticks: the next tick starts the new version', async () => {
  await schedule('mover', '0 * * * *');
  await tick('2026-01-05T01:00:00Z');
  await sql`select switchyard.sync_alias('report', array['reportV1', 'reportV2'])`;
  const [{ flow }] = await sql`select switchyard.resolve_flow('report') as flow`;
  assert.equal(flow, 'reportV2');
  await finish((await ticks('mover'))[0].run_id);
  await tick('2026-01-05T02:00:00Z');
  assert.deepEqual((await runsOf('mover')).map((r) => r.flow_slug), ['reportV1', 'reportV2']);
});

Deno.test('Europe/Berlin across both daylight-saving changes: no tick lost, none doubled', async () => {
  // 02:30 every day: on 2026-03-29 02:30 does not exist (02:00 -> 03:00), on 2026-10-25 it
  // happens twice (03:00 -> 02:00).
  const spring = await sql<{ t: Date }[]>`
    select t from switchyard._cron_ticks('30 2 * * *', 'Europe/Berlin',
      '2026-03-27T12:00:00Z', '2026-03-31T12:00:00Z', 100) t`;
  assert.deepEqual(spring.map((r) => r.t.toISOString()), [
    '2026-03-28T01:30:00.000Z', // 02:30 CET
    '2026-03-29T01:30:00.000Z', // in the gap: 03:30 CEST, the gap's length later
    '2026-03-30T00:30:00.000Z', // 02:30 CEST
    '2026-03-31T00:30:00.000Z',
  ]);
  const autumn = await sql<{ t: Date }[]>`
    select t from switchyard._cron_ticks('30 2 * * *', 'Europe/Berlin',
      '2026-10-23T12:00:00Z', '2026-10-27T12:00:00Z', 100) t`;
  assert.deepEqual(autumn.map((r) => r.t.toISOString()), [
    '2026-10-24T00:30:00.000Z', // 02:30 CEST
    '2026-10-25T01:30:00.000Z', // the repeated hour: once, 02:30 CET
    '2026-10-26T01:30:00.000Z',
    '2026-10-27T01:30:00.000Z',
  ]);
  // Every 30 minutes through the spring gap: the local times 02:00 and 02:30 land at 03:00
  // and 03:30 CEST, which the cron names anyway: each instant once.
  const everyHalf = await sql<{ t: Date }[]>`
    select t from switchyard._cron_ticks('*/30 * * * *', 'Europe/Berlin',
      '2026-03-29T00:00:00Z', '2026-03-29T02:00:00Z', 100) t`;
  assert.deepEqual(everyHalf.map((r) => r.t.toISOString()), [
    '2026-03-29T00:30:00.000Z',
    '2026-03-29T01:00:00.000Z',
    '2026-03-29T01:30:00.000Z',
    '2026-03-29T02:00:00.000Z',
  ]);
  // Through the tick itself, day by day.
  await schedule('berlin', '30 2 * * *', {
    time_zone: 'Europe/Berlin',
    overlap: 'queue',
    createdAt: '2026-10-23T12:00:00Z',
  });
  for (const day of ['24', '25', '26']) {
    for (const hour of ['00', '01', '02', '03']) {
      await tick(`2026-10-${day}T${hour}:45:00Z`);
    }
    for (const t of await ticks('berlin')) if (t.status === 'started') await finish(t.run_id);
  }
  assert.deepEqual((await ticks('berlin')).map((t) => t.at), [
    '2026-10-24T00:30:00.000Z',
    '2026-10-25T01:30:00.000Z',
    '2026-10-26T01:30:00.000Z',
  ]);
});

Deno.test('a paused target function: the tick starts its run, whose task waits on its queue', async () => {
  await sql`select switchyard.register_function('report-worker', 'reportv1')`;
  await sql`select switchyard.pause_function('report-worker', 'maintenance')`;
  await schedule('paused-target', '0 * * * *', { alias: 'reportV1' });
  assert.equal(await tick('2026-01-05T01:00:00Z'), 1);
  const [t] = await ticks('paused-target');
  const [task] = await sql`select t.status, t.queue_name from switchyard.step_tasks t
                            where t.run_id = ${t.run_id}::uuid`;
  assert.deepEqual({ ...task }, { status: 'queued', queue_name: 'reportv1' });
  const [{ n }] = await sql`select count(*)::int as n from pgmq.q_reportv1
                             where message ->> 'run_id' = ${t.run_id}`;
  assert.equal(n, 1, 'the message is on the queue for when the function resumes');
  await sql`select switchyard.resume_function('report-worker')`;
});

Deno.test('pause, resume, update, backfill and delete; ensure_schedule for migrations', async () => {
  await schedule('ops', '0 * * * *');
  await sql`select switchyard.pause_schedule('ops')`;
  assert.equal(await tick('2026-01-05T01:00:00Z'), 0, 'paused: nothing starts');
  await sql`update switchyard.schedules set checked_until = '2026-01-05T01:00:00Z' where name = 'ops'`;
  await sql`update switchyard.schedules set enabled = true where name = 'ops'`;
  assert.equal(await tick('2026-01-05T02:00:00Z'), 1);
  const [{ s }] = await sql`select switchyard.update_schedule('ops', cron => '30 * * * *') as s`;
  assert.equal(s.cron, '30 * * * *');
  assert.equal(s.alias, 'report', 'fields left null are kept');
  const [{ n }] = await sql`select switchyard.backfill_schedule('ops', '2026-01-04T00:00:00Z',
                                                                '2026-01-04T03:00:00Z') as n`;
  assert.equal(n, 3, 'the 00:30, 01:30 and 02:30 ticks of the day before');
  const [{ again }] = await sql`select switchyard.backfill_schedule('ops', '2026-01-04T00:00:00Z',
                                                                    '2026-01-04T03:00:00Z') as again`;
  assert.equal(again, 0, 'a backfill repeated starts nothing');
  const ensured = [];
  for (const cron of ['0 4 * * *', '0 4 * * *', '0 5 * * *']) {
    const [{ r }] =
      await sql`select switchyard.ensure_schedule('declared', 'report', ${cron}) as r`;
    ensured.push(r);
  }
  assert.deepEqual(ensured, ['created', 'unchanged', 'updated']);
  const [{ list }] = await sql`select switchyard.list_schedules() as list`;
  const declared = list.find((x: { name: string }) => x.name === 'declared');
  assert.equal(declared.cron, '0 5 * * *');
  assert.ok(declared.next_tick_at, 'the next tick is known');
  const [{ gone }] = await sql`select switchyard.delete_schedule('ops') as gone`;
  assert.equal(gone, true);
  assert.equal((await ticks('ops')).length, 0, 'its tick records go with it');
});

Deno.test('bad input is refused with its rule and creates nothing', async () => {
  const cases: [string, string, string, string, string][] = [
    ['bad-cron', 'report', '61 * * * *', 'UTC', 'cron_invalid'],
    ['bad-cron2', 'report', '* * *', 'UTC', 'cron_invalid'],
    ['bad-cron3', 'report', '*/0 * * * *', 'UTC', 'cron_invalid'],
    ['bad-cron4', 'report', '0 0 * foo *', 'UTC', 'cron_invalid'],
    ['bad-zone', 'report', '0 * * * *', 'Mars/Olympus', 'time_zone_unknown'],
    ['bad-alias', 'nosuchalias', '0 * * * *', 'UTC', 'flow_or_alias_unknown'],
    ['Bad Name', 'report', '0 * * * *', 'UTC', 'schedule_name_invalid'],
  ];
  for (const [name, alias, cron, zone, rule] of cases) {
    const e = await sql`select switchyard.create_schedule(${name}, ${alias}, ${cron}, '{}'::jsonb,
                          ${zone})`.then(() => null, (e) => e);
    assert.ok(e, `${name} was refused`);
    assert.equal(e.code, '22023', e.message);
    assert.equal(JSON.parse(e.detail).rule, rule, e.message);
  }
  const e = await sql`select switchyard.create_schedule('bad-policy', 'report', '0 * * * *',
                        '{}'::jsonb, 'UTC', 'sometimes')`.then(() => null, (e) => e);
  assert.equal(JSON.parse(e.detail).rule, 'overlap_invalid');
  await sql`select switchyard.set_setting('max_input_bytes', '65536')`;
  try {
    const big = await sql`select switchyard.create_schedule('bad-input', 'report', '0 * * * *',
                            ${sql.json({ blob: 'x'.repeat(70000) } as never)}::jsonb)`
      .then(() => null, (e) => e);
    assert.equal(JSON.parse(big.detail).rule, 'input_too_large', big.message);
    assert.match(big.message, /70012 bytes of JSON, over the limit of 65536 bytes/);
  } finally {
    await sql`select switchyard.set_setting('max_input_bytes', ${String(1024 * 1024)})`;
  }
  const [{ n }] = await sql`select count(*)::int as n from switchyard.schedules
                             where name like 'bad%'`;
  assert.equal(n, 0, 'nothing was created');
  await sql`select switchyard.create_schedule('dup', 'report', '0 * * * *')`;
  const dup = await sql`select switchyard.create_schedule('dup', 'report', '0 * * * *')`
    .then(() => null, (e) => e);
  assert.equal(dup.code, '23505');
  assert.match(dup.message, /schedule "dup" exists/);
  const cronMessage = await sql`select switchyard._cron_parse('0 25 * * *')`.then(
    () => '',
    (e) => e.message,
  );
  assert.match(cronMessage, /hour field part "25": 25 is out of range 0-23/);
});

function cli(args: string[]) {
  return deno(['task', '-q', 'schedule', ...args], {
    cwd: KIT_ROOT,
    env: { DATABASE_URL: db.url, NO_COLOR: '1' },
  });
}

Deno.test('deno task schedule: create, list, pause, tick and delete; a bad cron exits 1 with the rule', async () => {
  const created = await cli([
    'create',
    'cli-nightly',
    '--alias',
    'report',
    '--cron',
    '0 3 * * *',
    '--time-zone',
    'Europe/Berlin',
    '--input',
    '{"n": 7}',
    '--overlap',
    'queue',
  ]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(
    created.stdout,
    /^created cli-nightly {2}enabled {2}report {2}'0 3 \* \* \*' Europe\/Berlin/,
  );
  const [{ input }] = await sql`select input from switchyard.schedules where name = 'cli-nightly'`;
  assert.deepEqual(input, { n: 7 });
  const list = await cli(['list']);
  assert.match(list.stdout, /cli-nightly {2}enabled/);
  const paused = await cli(['pause', 'cli-nightly']);
  assert.match(paused.stdout, /^paused cli-nightly {2}paused/);
  const ticked = await cli(['tick']);
  assert.equal(ticked.code, 0, ticked.stderr);
  assert.match(ticked.stdout, /^started \d+ run\(s\)/);
  const bad = await cli(['create', 'cli-bad', '--alias', 'report', '--cron', '0 0 31 2 * *']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /cron expression "0 0 31 2 \* \*" is invalid: it has 6 fields/);
  const usage = await cli(['create', 'cli-bad', '--cron', '0 * * * *']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /create needs --alias and --cron/);
  const deleted = await cli(['delete', 'cli-nightly']);
  assert.equal(deleted.stdout.trim(), 'deleted schedule cli-nightly');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
