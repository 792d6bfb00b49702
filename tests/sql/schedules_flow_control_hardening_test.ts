/**
 * Hardening, third round (issue 36): schedules, rate limits and child run ids against real
 * PostgreSQL. A RetryAfter's drain of a shared rate limit is bounded and lifted by the operator
 * (item 6); `cancel_previous` cancels nothing when the new tick cannot start (item 7); and the
 * low items: bounded backfills that never hold up the scheduler's tick, a cron length limit, IANA
 * region names only, a bounded test clock, retention on the clock the ticks were recorded with,
 * the kit's rule instead of raw PostgreSQL errors, and child run ids no signed-in user can take.
 *
 * Each test names the item it guards; each failed before its fix.
 *
 * @module
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import { InvalidInputError, OperationError } from '../../lib/errors.ts';
import { backfillSchedule, createSchedule, updateSchedule } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { waitFor } from '../_helpers/wait.ts';

/**
 * The bound of a refusal or a look that must not do unbounded work: the loops it guards against
 * take minutes (40 years of ticks, a cron parsed per day and field), so a bound far above a
 * loaded machine's slowest statement still catches them. Not a speed target: those live in the
 * bench, where figures are measured side by side.
 */
const REFUSED_WITHIN_MS = 20_000;

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);

/** The hostile inputs this file tries, counted as they are tried (reported at the end). */
let hostile = 0;

// deno-lint-ignore no-explicit-any
async function compile(flow: any) {
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(flow).shape as never)}::jsonb)`;
}

/** The SQLSTATE, message and rule a statement fails with (it must fail). */
async function refusal(
  fn: () => PromiseLike<unknown>,
): Promise<{ code: string; message: string; rule: string; ms: number }> {
  const started = performance.now();
  try {
    await fn();
  } catch (e) {
    const err = e as { code?: string; message: string; detail?: string | object };
    let rule = '';
    try {
      const detail = typeof err.detail === 'string' ? JSON.parse(err.detail) : err.detail;
      rule = String((detail as { rule?: unknown })?.rule ?? '');
    } catch { /* not the kit's detail */ }
    return {
      code: err.code ?? '',
      message: err.message,
      rule,
      ms: performance.now() - started,
    };
  }
  throw new Error('expected a refusal');
}

const report = new Flow<{ n?: number; blob?: string }>({ slug: 'reportV1' })
  .step({ slug: 'work' }, () => 1);
await compile(report);
await sql`select switchyard.sync_alias('report', array['reportV1']::text[])`;

/** A schedule whose clock starts at 2026-01-05 00:00 UTC. */
async function schedule(name: string, cron: string, overlap = 'skip', input: unknown = {}) {
  await sql`select switchyard.create_schedule(${name}, 'report', ${cron},
    ${sql.json(input as never)}::jsonb, 'UTC', ${overlap})`;
  await sql`update switchyard.schedules set created_at = '2026-01-05T00:00:00Z',
              checked_until = '2026-01-05T00:00:00Z' where name = ${name}`;
}

const tick = async (at: string) =>
  (await sql<{ n: number }[]>`select switchyard.run_schedules(${at}::timestamptz) as n`)[0].n;

async function ticks(name: string) {
  return await sql<{ outcome: string; run_id: string; status: string | null; error: string }[]>`
    select st.outcome, st.run_id, r.status, st.error from switchyard.schedule_ticks st
      left join switchyard.runs r on r.run_id = st.run_id
     where st.schedule_name = ${name} order by st.tick_at`;
}

Deno.test('item 6: a RetryAfter delays its own task by its seconds but drains a shared limit for at most its period, and set_rate_limit lifts the drain', async () => {
  await sql`select switchyard.set_rate_limit('shared-api', 10, 60)`;
  for (const slug of ['sharingA', 'sharingB']) {
    await compile(
      new Flow<{ n: number }>({ slug }).step(
        { slug: 'call', rateLimit: { name: 'shared-api' } },
        () => 1,
      ),
    );
  }
  const claim = async (flow: string) => {
    const queue = flow.toLowerCase();
    const worker = crypto.randomUUID();
    await sql`select switchyard.register_worker(${worker}::uuid, ${queue}, ${queue + '-worker'},
                array[${flow + '/call'}]::text[])`;
    const [{ id }] = await sql`select switchyard.start_flow(${flow}, '{"n": 1}') as id`;
    const [{ msg }] = await sql.unsafe(
      `select msg_id as msg from pgmq.q_${queue} where message ->> 'run_id' = $1`,
      [id],
    );
    const again = async () =>
      (await sql`select disposition from switchyard.start_tasks(${queue}, array[${msg}]::bigint[],
                   ${worker}::uuid)`)[0].disposition;
    return { run: id as string, msg, queue, disposition: await again(), again };
  };
  const a = await claim('sharingA');
  assert.equal(a.disposition, 'claimed');
  hostile++;
  const [{ r }] = await sql`select switchyard.fail_task_with(${a.run}::uuid, 'call', 1,
                              'HTTP 429', 0, 604800, false) as r`;
  assert.equal(r, 'retrying');
  const [own] = await sql.unsafe(
    `select vt > now() + interval '6 days 23 hours' as later from pgmq.q_${a.queue}
      where msg_id = $1`,
    [a.msg],
  );
  assert.equal(own.later, true, 'the task itself waits the 7 days its handler asked for');
  const [bucket] = await sql`select refilled_at <= now() + interval '60 seconds' as bounded,
                                    refilled_at > now() as drained
                               from switchyard.rate_limits where name = 'shared-api'`;
  assert.deepEqual(
    { ...bucket },
    { bounded: true, drained: true },
    'the shared bucket is drained for at most its own period (60 s), not 7 days',
  );
  const b = await claim('sharingB');
  assert.equal(b.disposition, 'throttled', 'another flow sharing the limit backs off meanwhile');
  // The operator raises the limit: the drain is lifted at once.
  const [{ set }] = await sql`select switchyard.set_rate_limit('shared-api', 100, 1) as set`;
  assert.equal(set.rate, 100);
  const [after] = await sql`select refilled_at <= now() as lifted from switchyard.rate_limits
                             where name = 'shared-api'`;
  assert.equal(after.lifted, true);
  // A token at 100/s refills within 10 ms: the held task starts at once, not in a minute.
  await waitFor(
    "the held task starting under the operator's raised limit",
    async () => (await b.again()) === 'claimed',
    { timeoutMs: 5000 },
  );
});

Deno.test('item 7: cancel_previous keeps the open run when the new tick cannot start', async () => {
  await schedule('replacer', '0 * * * *', 'cancel_previous', { blob: 'x'.repeat(70000) });
  assert.equal(await tick('2026-01-05T01:00:00Z'), 1);
  // The next tick's start fails: its input no longer fits the limit.
  await sql`select switchyard.set_setting('max_input_bytes', '65536')`;
  try {
    hostile++;
    assert.equal(await tick('2026-01-05T02:00:00Z'), 0);
  } finally {
    await sql`select switchyard.set_setting('max_input_bytes', null)`;
  }
  const t = await ticks('replacer');
  assert.deepEqual(t.map((x) => [x.outcome, x.status]), [
    ['started', 'started'],
    ['failed', null],
  ], 'the open run is not cancelled for a run that never started');
  assert.match(t[1].error, /over the limit of 65536 bytes/);
  // A tick that starts still replaces it.
  assert.equal(await tick('2026-01-05T03:00:00Z'), 1);
  assert.deepEqual((await ticks('replacer')).map((x) => [x.outcome, x.status]), [
    ['started', 'cancelled'],
    ['failed', null],
    ['started', 'started'],
  ]);
});

Deno.test('low: a backfill is bounded (a year at most, never an infinite range), and the scheduler tick never waits for a schedule held by a backfill', async () => {
  await schedule('yearly', '0 0 1 1 *');
  for (
    const [from, to] of [
      ["now() - interval '40 years'", 'now()'],
      ["'-infinity'::timestamptz", 'now()'],
      ["now() - interval '1 day'", "'infinity'::timestamptz"],
      ["'4713-01-01 BC'::timestamptz", 'now()'],
      ['now()', "'294276-12-31'::timestamptz"],
    ]
  ) {
    hostile++;
    const r = await refusal(() =>
      sql.unsafe(`select switchyard.backfill_schedule('yearly', ${from}, ${to})`)
    );
    assert.equal(r.code, '22023', `${from} to ${to}: ${r.message}`);
    assert.equal(r.rule, 'backfill_too_long', r.message);
    assert.ok(r.ms < REFUSED_WITHIN_MS, `${from} to ${to} refused in ${Math.round(r.ms)} ms`);
  }
  const long = await refusal(() =>
    sql`select switchyard.backfill_schedule('yearly', now() - interval '40 years', now())`
  );
  assert.match(long.message, /backfill at most 366 days per call/);
  // A year of a minute cron stops at its 1001st tick, at once.
  await schedule('minutely', '* * * * *');
  hostile++;
  const minutes = await refusal(() =>
    sql`select switchyard.backfill_schedule('minutely', now() - interval '366 days', now())`
  );
  assert.equal(minutes.rule, 'backfill_too_long');
  assert.ok(minutes.ms < REFUSED_WITHIN_MS, `refused in ${Math.round(minutes.ms)} ms`);
  // A backfill (or any change) holding the schedule's lock: the tick goes on without waiting.
  const holder = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  const ticker = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  try {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const held = holder.begin(async (tx) => {
      await tx`select switchyard.backfill_schedule('yearly', '2026-01-01T00:00:00Z',
                                                   '2026-01-01T00:00:00Z')`;
      locked();
      await released;
    });
    await isLocked;
    try {
      const started = performance.now();
      await ticker.begin(async (tx) => {
        await tx`set local lock_timeout = '3s'`;
        await tx`select switchyard.run_schedules()`;
      });
      // lock_timeout proves the tick did not wait (it would throw); this bounds the rest.
      assert.ok(performance.now() - started < REFUSED_WITHIN_MS);
    } finally {
      release();
      await held;
    }
  } finally {
    await holder.end();
    await ticker.end();
  }
});

Deno.test('low: cron text is at most 1000 characters and parsed once per look, not per day', async () => {
  const parts = Array.from({ length: 20000 }, (_, i) => String(i % 60)).join(',');
  hostile++;
  const huge = await refusal(() =>
    sql`select switchyard.create_schedule('huge-cron', 'report', ${parts + ' * * * *'})`
  );
  assert.equal(huge.code, '22023');
  assert.equal(huge.rule, 'cron_too_long', huge.message);
  assert.match(huge.message, /is 56667 characters, over the limit of 1000/);
  assert.ok(huge.message.length < 500);
  // One look of the scheduler (31 days) parses the cron once, not once per day and field.
  const calls = await sql.begin(async (tx) => {
    await tx`set local track_functions = 'all'`;
    await tx`select count(*) from switchyard._cron_ticks('0 3 * * *', 'UTC',
               '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', 100000)`;
    const [row] = await tx`select calls::int as n from pg_stat_xact_user_functions
                            where funcname = '_cron_parse'`;
    return row.n;
  });
  assert.equal(calls, 1, 'parsed once');
  // At the limit: 31 days of ticks of a long list stay quick.
  const list = Array.from({ length: 60 }, (_, i) => String(i)).join(',');
  const cron = `${list} ${Array.from({ length: 24 }, (_, i) => String(i)).join(',')} ${
    Array.from({ length: 130 }, () => '1-31').join(',')
  } * *`;
  assert.ok(cron.length <= 1000 && cron.length > 800, `${cron.length}`);
  await sql`select switchyard.create_schedule('long-cron', 'report', ${cron})`;
  const started = performance.now();
  const [{ n }] = await sql`select count(*)::int as n from switchyard._cron_ticks(${cron}, 'UTC',
                              '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', 100000)`;
  const ms = performance.now() - started;
  assert.equal(n, 31 * 24 * 60);
  assert.ok(ms < REFUSED_WITHIN_MS, `31 days of a 1000-character cron took ${Math.round(ms)} ms`);
});

Deno.test('low: only IANA region names (and UTC) are time zones: POSIX offsets and abbreviations are refused', async () => {
  for (
    const zone of [
      'UTC+5',
      'EST',
      'Etc/GMT+5',
      '<+05>-5',
      'PST8PDT',
      '+05:00',
      'localtime',
      'posixrules',
      'GMT',
      'Mars/Olympus',
      'Europe/../Europe/Paris',
      'CET',
      'Z',
    ]
  ) {
    hostile++;
    const r = await refusal(() =>
      sql`select switchyard.create_schedule('zoned', 'report', '0 * * * *', '{}', ${zone})`
    );
    assert.equal(r.code, '22023', `${zone}: ${r.message}`);
    assert.equal(r.rule, 'time_zone_unknown', `${zone}: ${r.message}`);
    assert.match(r.message, /use an IANA region name such as 'Europe\/Berlin', or 'UTC'/);
  }
  hostile++;
  const upd = await refusal(() =>
    sql`select switchyard.update_schedule('replacer', time_zone => 'UTC+5')`
  );
  assert.equal(upd.rule, 'time_zone_unknown');
  assert.match(upd.message, /"UTC\+5" is not a region name: .*POSIX reads UTC\+5 as 5 hours west/);
  for (const zone of ['UTC', 'Europe/Paris', 'America/Argentina/Buenos_Aires', 'Etc/UTC']) {
    await sql`select switchyard.create_schedule('zoned', 'report', '0 * * * *', '{}', ${zone})`;
    await sql`select switchyard.delete_schedule('zoned')`;
  }
});

Deno.test('low: run_schedules refuses a test clock ahead of now', async () => {
  for (
    const at of ["now() + interval '2 days'", "now() + interval '40 days'", "'infinity'", 'null']
  ) {
    hostile++;
    const r = await refusal(() =>
      sql.unsafe(`select switchyard.run_schedules((${at})::timestamptz)`)
    );
    assert.equal(r.code, '22023', `${at}: ${r.message}`);
    assert.equal(r.rule, 'now_at_range', r.message);
    assert.ok(r.ms < REFUSED_WITHIN_MS, `${at} refused in ${Math.round(r.ms)} ms`);
  }
  // A minute ahead is a clock's skew, not a test clock's leap: taken.
  await sql`select switchyard.run_schedules(now() + interval '30 seconds')`;
});

Deno.test('low: run_schedules removes tick records by the clock they were recorded with, not the test clock', async () => {
  // Two records of an earlier tick: one recorded 31 days ago (past retention), one 29 days ago.
  await schedule('retained', '0 * * * *');
  await tick('2026-01-05T01:00:00Z');
  await tick('2026-01-05T02:00:00Z');
  await sql`update switchyard.schedule_ticks set recorded_at = now() - interval '31 days'
             where schedule_name = 'retained' and tick_at = '2026-01-05T01:00:00Z'`;
  await sql`update switchyard.schedule_ticks set recorded_at = now() - interval '29 days'
             where schedule_name = 'retained' and tick_at = '2026-01-05T02:00:00Z'`;
  // A test clock in the past: retention still reads the clock the records were written with.
  await tick('2026-01-05T02:30:00Z');
  const left = await sql`select tick_at from switchyard.schedule_ticks
                          where schedule_name = 'retained' order by tick_at`;
  assert.deepEqual(left.map((r) => r.tick_at.toISOString()), ['2026-01-05T02:00:00.000Z']);
});

Deno.test('low: hostile schedule and rate-limit arguments are refused with the kit rule, never a raw PostgreSQL error', async () => {
  const statements = [
    `select switchyard.create_schedule('steps', 'report', '*/99999999999 * * * *')`,
    `select switchyard.create_schedule('steps', 'report', '0 0-23/4294967296 * * *')`,
    `select switchyard.update_schedule('replacer', cron => '0 */99999999999 * * *')`,
    `select switchyard.create_schedule('steps', 'report', '0 * * * *', '{}', 'UTC', 'skip', 'all', -2147483648)`,
    `select switchyard.create_schedule('steps', 'report', repeat('*', 100000))`,
    `select switchyard.create_schedule('steps', 'report', '0 * * * *', '{}', repeat('A/', 50000))`,
    `select switchyard.backfill_schedule('replacer', '2026-01-05', '2026-01-04')`,
    `select switchyard.set_rate_limit('x', 1, 1, -2147483648)`,
    `select switchyard.set_rate_limit(repeat('x', 100000), 1)`,
    `select switchyard.ensure_schedule('ens', 'report', '0 * * * *', '{}', 'EST')`,
  ];
  const raw: string[] = [];
  for (const s of statements) {
    hostile++;
    const r = await refusal(() => sql.unsafe(s)).catch(() => null);
    if (!r) raw.push(`${s}: accepted`);
    else if (r.code !== '22023' || !r.rule) raw.push(`${s}: ${r.code} ${r.message}`);
  }
  assert.deepEqual(raw, []);
  // From TypeScript: values that are not JSON, or not whole numbers, or not dates.
  const ts: [string, () => Promise<unknown>, new (...a: never[]) => Error][] = [
    [
      'bigint input',
      () => createSchedule(client, 'ts1', { alias: 'report', cron: '0 * * * *', input: 1n }),
      InvalidInputError,
    ],
    [
      'NUL in input',
      () => createSchedule(client, 'ts2', { alias: 'report', cron: '0 * * * *', input: 'a\u0000' }),
      InvalidInputError,
    ],
    [
      'lone surrogate in update input',
      () => updateSchedule(client, 'replacer', { input: { k: '\ud800' } }),
      InvalidInputError,
    ],
    [
      'fractional catchUpLimit',
      () =>
        createSchedule(client, 'ts3', { alias: 'report', cron: '0 * * * *', catchUpLimit: 1.5 }),
      OperationError,
    ],
    [
      'catchUpLimit past int4',
      () => updateSchedule(client, 'replacer', { catchUpLimit: 1e12 }),
      OperationError,
    ],
    [
      'invalid Date',
      () => backfillSchedule(client, 'replacer', new Date(NaN), new Date()),
      OperationError,
    ],
  ];
  const wrong: string[] = [];
  for (const [what, call, kind] of ts) {
    hostile++;
    try {
      await call();
      wrong.push(`${what}: accepted`);
    } catch (e) {
      if (!(e instanceof kind)) wrong.push(`${what}: ${(e as Error).name} ${(e as Error).message}`);
      else if (e instanceof OperationError && (e.code !== '22023' || !e.detail.rule)) {
        wrong.push(`${what}: ${e.code} ${e.message}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test('low: a child run id derived from its parent is never one a signed-in user may choose', async () => {
  await sql.unsafe(`
    create schema if not exists auth;
    create or replace function auth.uid() returns uuid language sql stable as $$
      select nullif(current_setting('request.jwt.claim.sub', true), '')::uuid $$;`);
  const child = defineDeployedFlow(
    new Flow<{ n: number }>({ slug: 'squatChildV1' }).step({ slug: 'a' }, () => 1),
    { alias: 'squatChild' },
  );
  await compile(child.flow);
  await sql`select switchyard.sync_alias('squatChild', array['squatChildV1']::text[])`;
  await compile(
    new Flow<{ n: number }>({ slug: 'squatParentV1' }).childFlow({ slug: 'sub', flow: child }),
  );
  await sql`insert into switchyard.user_start_aliases (alias) values ('squatChild')`;
  const v4 = '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$';
  // A parent id whose child id (as the kit derived it: the MD5 of parent and step) has the shape
  // of a random id, found by trying; an attacker who knows the parent's id computes it too.
  const [{ parent, derived }] = await sql<{ parent: string; derived: string }[]>`
    select p as parent, md5(p::text || '/sub')::uuid::text as derived
      from (select gen_random_uuid() as p from generate_series(1, 5000)) x
     where md5(p::text || '/sub')::uuid::text ~ ${v4} limit 1`;
  const alice = crypto.randomUUID();
  const bob = crypto.randomUUID();
  hostile++;
  await sql.begin(async (tx) => {
    await tx`select set_config('request.jwt.claim.sub', ${alice}, true)`;
    await tx`select switchyard.start_user_run('squatChild', '{"n": 1}', ${derived}::uuid)`
      .catch(() => {}); // refused is fine too: the point is what the parent gets
  });
  await sql`select switchyard.start_flow('squatParentV1', '{"n": 2}', ${parent}::uuid,
                                         ${bob}::uuid)`;
  const [link] = await sql`select c.run_id, r.owner, r.status, r.input
                             from switchyard.child_runs c join switchyard.runs r using (run_id)
                            where c.parent_run_id = ${parent}::uuid`;
  assert.ok(link, 'the parent started its child');
  assert.deepEqual(
    { owner: link.owner, status: link.status, input: link.input },
    { owner: bob, status: 'started', input: { n: 2 } },
  );
  const [p] = await sql`select status from switchyard.runs where run_id = ${parent}::uuid`;
  assert.equal(p.status, 'started', 'the parent did not fail for a squatted id');
  // No derived id has a random id's shape, so start_user_run refuses every one of them.
  const [{ n }] = await sql`select count(*)::int as n from generate_series(1, 4000) g
    where switchyard._child_run_id(gen_random_uuid(), 'sub')::text ~ ${v4}`;
  assert.equal(n, 0);
  hostile++;
  const squat = await refusal(() =>
    sql.begin(async (tx) => {
      await tx`select set_config('request.jwt.claim.sub', ${alice}, true)`;
      await tx`select switchyard.start_user_run('squatChild', '{"n": 1}', ${link.run_id}::uuid)`;
    })
  );
  assert.equal(squat.rule, 'run_id_not_random');
});

Deno.test('teardown', async () => {
  console.log(`hostile inputs tried here: ${hostile}`);
  await client.close();
  await db.close();
});
