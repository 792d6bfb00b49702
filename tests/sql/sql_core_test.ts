/**
 * The SQL core on its own: concurrent compilation, the claim under real races,
 * attempt fencing of completions, backoff, stall recovery and stale messages.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, routeFlow } from '../../lib/mod.ts';
import { WORKER_SETTINGS } from '../../lib/worker/settings.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

type Claim = { disposition: string; message_id: string; attempt: number | null };

const flow = new Flow<{ n: number }>({ slug: 'core', maxAttempts: 2, baseDelay: 3 })
  .step({ slug: 'a' }, (i) => i.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (i) => i.a);
const shape = toPlacement(routeFlow(flow, { queues: { a: 'core_q', b: 'core_q' } })).shape;
const PAIRS = ['core/a', 'core/b'];

async function worker(id = crypto.randomUUID()) {
  await sql`select switchyard.register_worker(${id}::uuid, 'core_q', 'core-q-worker',
    ${pgArray(PAIRS)}::text[])`;
  return id;
}

async function claim(workerId: string, ids: (string | bigint)[], conn = sql): Promise<Claim[]> {
  return await conn<Claim[]>`select disposition, message_id::text, attempt
    from switchyard.start_tasks('core_q', ${pgArray(ids)}::bigint[],
      ${workerId}::uuid, ${pgArray(PAIRS)}::text[])`;
}

async function taskOf(run: string, step = 'a') {
  const [t] =
    await sql`select * from switchyard.step_tasks where run_id = ${run} and step_slug = ${step}`;
  return t;
}

Deno.test('concurrent ensure_flow calls compile once and verify the rest', async () => {
  const clients = Array.from({ length: 8 }, () => postgres(db.url, { max: 1, onnotice: () => {} }));
  try {
    const results = await Promise.all(
      clients.map((c) => c`select switchyard.ensure_flow(${c.json(shape as never)}::jsonb) as r`),
    );
    const outcomes = results.map((r) => r[0].r).sort();
    assert.deepEqual(outcomes, ['created', ...Array(7).fill('verified')]);
    const [{ n }] =
      await sql`select count(*)::int as n from switchyard.steps where flow_slug = 'core'`;
    assert.equal(n, 2);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});

Deno.test('two workers claiming the same message concurrently: exactly one claims it', async () => {
  const runs = await Promise.all(
    Array.from(
      { length: 20 },
      (_, n) => sql`select switchyard.start_flow('core', ${sql.json({ n })}::jsonb) as id`,
    ),
  );
  const ids = await Promise.all(runs.map(async ([r]) => (await taskOf(r.id)).message_id as string));
  const [w1, w2] = [await worker(), await worker()];
  const c1 = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  const c2 = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  try {
    const [a, b] = await Promise.all([claim(w1, ids, c1), claim(w2, ids, c2)]);
    const claimed = [...a, ...b].filter((c) => c.disposition === 'claimed').map((c) =>
      c.message_id
    );
    const dups = [...a, ...b].filter((c) => c.disposition === 'duplicate').map((c) => c.message_id);
    assert.deepEqual([...claimed].sort(), [...ids].sort(), 'every message claimed once');
    assert.equal(new Set(claimed).size, ids.length);
    assert.deepEqual([...dups].sort(), [...ids].sort(), 'the loser saw benign duplicates');
    const [{ attempts }] = await sql`select sum(attempts_count)::int as attempts
      from switchyard.step_tasks where message_id = any(${
      pgArray(ids)
    }::bigint[]) and queue_name = 'core_q'`;
    assert.equal(attempts, ids.length, 'one attempt each');
  } finally {
    await Promise.all([c1.end(), c2.end()]);
  }
});

Deno.test('a claim hides each message for its task timeout plus the margin, in one batch', async () => {
  const runs = await Promise.all(
    [1, 2, 3].map((n) =>
      sql`select switchyard.start_flow('core', ${sql.json({ n })}::jsonb) as id`
    ),
  );
  const tasks = await Promise.all(runs.map(([r]) => taskOf(r.id)));
  // Different timeouts in one batch: each message gets its own task's.
  await sql`update switchyard.step_tasks set timeout = case message_id
              when ${tasks[0].message_id}::bigint then 7 when ${tasks[1].message_id}::bigint then 40
              else timeout end
             where queue_name = 'core_q' and message_id = any(${
    pgArray(tasks.map((t) => t.message_id))
  }::bigint[])`;
  const w = await worker();
  const before = await sql<{ msg_id: string; read_ct: number }[]>`
    select msg_id::text, read_ct from pgmq.q_core_q
     where msg_id = any(${pgArray(tasks.map((t) => t.message_id))}::bigint[]) order by msg_id`;
  // Ordering, not a time window: the claim sets vt between the server's clock just before
  // and just after it, plus the task's timeout and the margin (as text: microseconds kept).
  const [{ before_claim }] = await sql`select clock_timestamp()::text as before_claim`;
  const claims = await claim(w, tasks.map((t) => t.message_id));
  const [{ after_claim }] = await sql`select clock_timestamp()::text as after_claim`;
  assert.deepEqual(claims.map((c) => c.disposition), ['claimed', 'claimed', 'claimed']);
  const [{ margin }] = await sql`select switchyard.claim_margin_seconds() as margin`;
  for (const t of tasks) {
    const [{ timeout }] = await sql`select timeout from switchyard.step_tasks
      where run_id = ${t.run_id} and step_slug = 'a'`;
    const [{ from_before, from_after, read_ct }] = await sql`
      select extract(epoch from vt - ${before_claim}::timestamptz)::float as from_before,
             extract(epoch from vt - ${after_claim}::timestamptz)::float as from_after, read_ct
        from pgmq.q_core_q where msg_id = ${t.message_id}`;
    assert.ok(
      from_before >= timeout + margin && from_after <= timeout + margin,
      `message ${t.message_id}: vt is ${from_before}s after the claim began and ${from_after}s ` +
        `after it ended, expected ${timeout} + ${margin}s after a moment in between`,
    );
    const was = before.find((b) => b.msg_id === String(t.message_id))!;
    assert.equal(read_ct, was.read_ct, 'the claim does not count as a read');
  }
});

Deno.test('a late completion from a superseded attempt changes nothing', async () => {
  const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 1}'::jsonb) as id`;
  const w = await worker();
  const t = await taskOf(run);
  const [c] = await claim(w, [t.message_id]);
  assert.equal(c.attempt, 1);
  const [{ r }] = await sql`select switchyard.complete_task(${run}::uuid, 'a', 2, '5'::jsonb) as r`;
  assert.equal(r, false, 'wrong attempt ignored');
  const [{ ok }] =
    await sql`select switchyard.complete_task(${run}::uuid, 'a', 1, '5'::jsonb) as ok`;
  assert.equal(ok, true);
  const [{ again }] =
    await sql`select switchyard.complete_task(${run}::uuid, 'a', 1, '6'::jsonb) as again`;
  assert.equal(again, false, 'a second completion is ignored');
  const [state] =
    await sql`select output from switchyard.step_states where run_id = ${run} and step_slug = 'a'`;
  assert.equal(state.output, 5);
  const b = await taskOf(run, 'b');
  assert.equal(b.status, 'queued', 'the dependent step was queued exactly once');
});

Deno.test('fail_task retries after base_delay * 2^(attempt-1) seconds, then fails the run', async () => {
  const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 2}'::jsonb) as id`;
  const w = await worker();
  const t = await taskOf(run);
  await claim(w, [t.message_id]);
  const [{ r1 }] = await sql`select switchyard.fail_task(${run}::uuid, 'a', 1, 'first') as r1`;
  assert.equal(r1, 'retrying');
  const [m] =
    await sql`select extract(epoch from vt - now())::float as wait from pgmq.q_core_q where msg_id = ${t.message_id}`;
  assert.ok(m.wait > 2 && m.wait <= 3.1, `visible again after ~3 s, got ${m.wait}`);
  assert.equal((await taskOf(run)).status, 'queued');
  await sql`select pgmq.set_vt('core_q', ${t.message_id}::bigint, 0)`;
  const [c] = await claim(w, [t.message_id]);
  assert.equal(c.attempt, 2);
  const [{ r2 }] = await sql`select switchyard.fail_task(${run}::uuid, 'a', 2, 'second') as r2`;
  assert.equal(r2, 'failed');
  const [runRow] = await sql`select status, error from switchyard.runs where run_id = ${run}`;
  assert.equal(runRow.status, 'failed');
  assert.match(runRow.error as string, /step a failed after 2 attempt\(s\): second/);
  const [{ archived }] =
    await sql`select count(*)::int as archived from pgmq.a_core_q where msg_id = ${t.message_id}`;
  assert.equal(archived, 1);
});

Deno.test("stall recovery requeues a dead worker's task and fails it once attempts are used up", async () => {
  const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 3}'::jsonb) as id`;
  const dead = await worker();
  const t = await taskOf(run);
  await claim(dead, [t.message_id]);
  await sql`update switchyard.workers set last_heartbeat_at = now() - interval '1 minute' where worker_id = ${dead}`;
  const [{ n }] = await sql`select switchyard.recover_stalled('core_q') as n`;
  assert.equal(n, 1);
  const after = await taskOf(run);
  assert.equal(after.status, 'queued');
  assert.equal(after.attempts_count, 1, 'recovery itself uses no attempt');
  const [m] =
    await sql`select vt <= now() as visible from pgmq.q_core_q where msg_id = ${t.message_id}`;
  assert.equal(m.visible, true);
  // Second attempt dies too: attempts are used up, so recovery fails the run (bounded).
  const dead2 = await worker();
  await claim(dead2, [t.message_id]);
  await sql`update switchyard.workers set stopped_at = now() where worker_id = ${dead2}`;
  await sql`select switchyard.recover_stalled('core_q')`;
  const final = await taskOf(run);
  assert.equal(final.status, 'failed');
  assert.equal(final.attempts_count, 2);
  const [r] = await sql`select status from switchyard.runs where run_id = ${run}`;
  assert.equal(r.status, 'failed');
});

Deno.test('a message of a terminal task is stale: archived, not run, not an error', async () => {
  const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 4}'::jsonb) as id`;
  const w = await worker();
  const t = await taskOf(run);
  await claim(w, [t.message_id]);
  await sql`select switchyard.complete_task(${run}::uuid, 'a', 1, '4'::jsonb)`;
  // The archive was lost (say, restored from a backup): the message is back in the queue.
  await sql`insert into pgmq.q_core_q (msg_id, read_ct, enqueued_at, vt, message)
    overriding system value
    select msg_id, read_ct, enqueued_at, now(), message from pgmq.a_core_q where msg_id = ${t.message_id}`;
  await sql`delete from pgmq.a_core_q where msg_id = ${t.message_id}`;
  const claims = await claim(w, [t.message_id]);
  assert.deepEqual(claims.map((c) => c.disposition), ['stale']);
  const [{ left }] =
    await sql`select count(*)::int as left from pgmq.q_core_q where msg_id = ${t.message_id}`;
  assert.equal(left, 0);
  assert.equal((await taskOf(run)).attempts_count, 1);
});

Deno.test('start_tasks refuses unknown workers and a queue the worker does not poll', async () => {
  await assert.rejects(claim(crypto.randomUUID(), [1n]), /worker .* is not registered/);
  const w = await worker();
  await assert.rejects(
    sql`select * from switchyard.start_tasks('other_q', array[1]::bigint[], ${w}::uuid, array[]::text[])`,
    /polls queue "core_q", not "other_q"/,
  );
});

/**
 * Claims and fails one task until its attempts are used up, all inside the database; returns
 * each retry's result and visibility delay in seconds, in attempt order.
 */
async function exhaust(queue: string, runId: string, step: string, workerId: string) {
  await sql`create table if not exists public.delay_log (
              run_id uuid, step_slug text, attempt int, result text, delay float)`;
  await sql.unsafe(`do $$
    declare
      t switchyard.step_tasks;
      r text;
      i int := 0;
    begin
      loop
        select * into t from switchyard.step_tasks
         where run_id = '${runId}' and step_slug = '${step}';
        perform pgmq.set_vt('${queue}', t.message_id, 0);
        perform switchyard.start_tasks('${queue}', array[t.message_id], '${workerId}', null);
        i := i + 1;
        r := switchyard.fail_task('${runId}', '${step}', i, 'failure number ' || i);
        insert into public.delay_log
        select '${runId}', '${step}', i, r,
               (select extract(epoch from q.vt - clock_timestamp()) from pgmq.q_${queue} q
                 where q.msg_id = t.message_id);
        exit when r <> 'retrying';
      end loop;
    end $$`);
  return await sql<{ attempt: number; result: string; delay: number | null }[]>`
    select attempt, result, delay from public.delay_log
     where run_id = ${runId} and step_slug = ${step} order by attempt`;
}

Deno.test('fail_task retries to the last of 1000 attempts with baseDelay 86400: the delay is capped, never overflows', async () => {
  const big = new Flow({ slug: 'overflow', maxAttempts: 1000, baseDelay: 86400 })
    .step({ slug: 'a' }, () => 1);
  await sql`select switchyard.ensure_flow(${
    sql.json(toPlacement(routeFlow(big, { queues: { a: 'overflow_q' } })).shape as never)
  }::jsonb)`;
  const w = crypto.randomUUID();
  await sql`select switchyard.register_worker(${w}::uuid, 'overflow_q', 'overflow-q-worker',
    array['overflow/a'])`;
  const [{ id: run }] = await sql`select switchyard.start_flow('overflow', '{}'::jsonb) as id`;
  const log = await exhaust('overflow_q', run, 'a', w);
  assert.equal(log.length, 1000);
  assert.ok(log.slice(0, 999).every((l) => l.result === 'retrying'), 'every retry is accepted');
  assert.equal(log[999].result, 'failed');
  // 86400 * 2^(attempt - 1), capped at the default maxDelay of 86400 s: one day from the first.
  assert.ok(log.slice(0, 999).every((l) => l.delay! > 86390 && l.delay! <= 86400));
  const [r] = await sql`select status, error from switchyard.runs where run_id = ${run}`;
  assert.equal(r.status, 'failed');
  assert.match(r.error as string, /after 1000 attempt\(s\): failure number 1000$/);
});

Deno.test('maxDelay caps the retry delay, set on the flow and overridden per step', async () => {
  const capped = new Flow({ slug: 'capped', maxAttempts: 70, baseDelay: 1, maxDelay: 600 })
    .step({ slug: 'a' }, () => 1)
    .step({ slug: 'b', maxDelay: 30 }, () => 2)
    .step({ slug: 'c', maxDelay: 0 }, () => 3);
  const placed = toPlacement(
    routeFlow(capped, { queues: { a: 'capped_q', b: 'capped_q', c: 'capped_q' } }),
  );
  assert.deepEqual(placed.shape.options, {
    maxAttempts: 70,
    baseDelay: 1,
    maxDelay: 600,
    timeout: 60,
  });
  await sql`select switchyard.ensure_flow(${sql.json(placed.shape as never)}::jsonb)`;
  const w = crypto.randomUUID();
  await sql`select switchyard.register_worker(${w}::uuid, 'capped_q', 'capped-q-worker',
    array['capped/a', 'capped/b', 'capped/c'])`;
  for (const [step, cap] of [['a', 600], ['b', 30], ['c', 0]] as const) {
    const [{ id: run }] = await sql`select switchyard.start_flow('capped', '{}'::jsonb) as id`;
    const log = await exhaust('capped_q', run, step, w);
    assert.equal(log.length, 70, step);
    assert.equal(log[69].result, 'failed', step);
    const delays = log.slice(0, 69).map((l) => Math.ceil(l.delay!));
    // 1, 2, 4, ... seconds, then the cap.
    const want = log.slice(0, 69).map((l) => Math.min(2 ** (l.attempt - 1), cap));
    assert.ok(
      delays.every((d, i) => d <= want[i] && d >= want[i] - 1),
      `${step}: delays ${delays.slice(0, 12).join(', ')}, ... (cap ${cap})`,
    );
  }
  // A maxDelay outside its range is refused by the DSL and by SQL, naming the rule.
  assert.throws(
    () => new Flow({ slug: 'x', maxDelay: 604801 }),
    /option maxDelay 604801 is invalid: use an integer from 0 to 604800 seconds/,
  );
  const bad = structuredClone(placed.shape) as { slug: string; options: Record<string, unknown> };
  bad.slug = 'cappedBad';
  bad.options.maxDelay = -1;
  await assert.rejects(
    sql`select switchyard.ensure_flow(${sql.json(bad as never)}::jsonb)`,
    /maxDelay -1 is invalid: use an integer from 0 to 604800/,
  );
});

Deno.test('recover_stalled takes no window from its caller: a worker inside its own stored window keeps its tasks', async () => {
  // The caller's window is gone: recover_stalled(queue, -1) no longer exists.
  await assert.rejects(
    sql`select switchyard.recover_stalled('core_q', -1)`,
    (e: { code?: string }) => e.code === '42883',
  );
  // A worker registered with a 60 s window, silent for 20 s (longer than the default 15 s).
  const slow = crypto.randomUUID();
  await sql`select switchyard.register_worker(${slow}::uuid, 'core_q', 'core-q-worker',
    ${pgArray(PAIRS)}::text[], 60)`;
  const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 5}'::jsonb) as id`;
  const t = await taskOf(run);
  await claim(slow, [t.message_id]);
  await sql`update switchyard.workers set last_heartbeat_at = now() - interval '20 seconds'
             where worker_id = ${slow}`;
  // (Other tests' tasks on the queue may be recovered meanwhile: only this task is checked.)
  await sql`select switchyard.recover_stalled('core_q')`;
  assert.equal((await taskOf(run)).status, 'started', 'untouched inside its own window');
  // Past its own window, it is recovered.
  await sql`update switchyard.workers set last_heartbeat_at = now() - interval '61 seconds'
             where worker_id = ${slow}`;
  await sql`select switchyard.recover_stalled('core_q')`;
  assert.equal((await taskOf(run)).status, 'queued', 'recovered past its own window');
});

Deno.test('register_worker refuses a heartbeat window below the floor, naming value and rule', async () => {
  const [{ floor }] = await sql`select switchyard.heartbeat_window_floor_seconds() as floor`;
  assert.equal(floor, WORKER_SETTINGS.heartbeatWindowSeconds.min, 'the settings use the SQL floor');
  for (const bad of [floor - 1, 0, -1, null]) {
    const w = crypto.randomUUID();
    const err = await sql`select switchyard.register_worker(${w}::uuid, 'core_q',
      'core-q-worker', ${pgArray(PAIRS)}::text[], ${bad}::int)`.then(() => null, (e) => e);
    assert.equal(err?.code, '22023', `window ${bad}`);
    assert.match(
      err.message,
      new RegExp(`heartbeat_window_seconds ${bad} is invalid: use at least ${floor}`),
    );
    const detail = JSON.parse(err.detail);
    assert.deepEqual([detail.rule, detail.argument, detail.min], [
      'integer_min',
      'heartbeat_window_seconds',
      floor,
    ]);
    const rows = await sql`select 1 from switchyard.workers where worker_id = ${w}`;
    assert.equal(rows.length, 0, 'nothing registered');
  }
});

Deno.test('a queued task whose message was deleted outside the kit is sent again after the grace period', async () => {
  const [{ grace }] = await sql`select switchyard.lost_message_grace_seconds() as grace`;
  const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 6}'::jsonb) as id`;
  const lost = (await taskOf(run)).message_id as string;
  await sql`select pgmq.delete('core_q', ${lost}::bigint)`;
  // Within the grace period nothing is sent.
  await sql`update switchyard.queues set lost_checked_at = null where queue_name = 'core_q'`;
  await sql`select switchyard.recover_stalled('core_q')`;
  assert.equal((await taskOf(run)).message_id, lost, 'not yet');
  // Past it (the task queued longer ago, the queue not checked within the period either).
  await sql`update switchyard.step_tasks set queued_at = now() - make_interval(secs => ${grace} + 1)
             where run_id = ${run}`;
  await sql`select switchyard.recover_stalled('core_q')`;
  assert.equal((await taskOf(run)).message_id, lost, 'the queue was checked within the period');
  await sql`update switchyard.queues set lost_checked_at = now() - make_interval(secs => ${grace})
             where queue_name = 'core_q'`;
  const [{ n }] = await sql`select switchyard.recover_stalled('core_q') as n`;
  assert.ok(n >= 1, 'counted (with any stalled task of other tests)');
  const task = await taskOf(run);
  assert.notEqual(task.message_id, lost, 'a new message id is recorded');
  assert.deepEqual([task.status, task.attempts_count], ['queued', 0], 'no attempt used');
  const [msg] = await sql`select vt <= now() as visible, message from pgmq.q_core_q
                           where msg_id = ${task.message_id}`;
  assert.equal(msg.visible, true);
  assert.deepEqual(msg.message, { run_id: run, flow_slug: 'core', step_slug: 'a' });
  // The new message is claimed like any other.
  const w = await worker();
  const [c] = await claim(w, [task.message_id]);
  assert.equal(c.disposition, 'claimed');
});

Deno.test('a claim carries the flow input once per run in a batch, never again as a root step input', async () => {
  const fan = new Flow<{ pad: string }>({ slug: 'fanIn' })
    .step({ slug: 'r1' }, () => 1)
    .step({ slug: 'r2' }, () => 2)
    .step({ slug: 'r3' }, () => 3);
  await sql`select switchyard.ensure_flow(${
    sql.json(
      toPlacement(routeFlow(fan, { queues: { r1: 'fan_q', r2: 'fan_q', r3: 'fan_q' } }))
        .shape as never,
    )
  }::jsonb)`;
  const w = crypto.randomUUID();
  await sql`select switchyard.register_worker(${w}::uuid, 'fan_q', 'fan-q-worker',
    array['fanIn/r1', 'fanIn/r2', 'fanIn/r3'])`;
  const pad = 'x'.repeat(100_000);
  const runs: string[] = [];
  for (let i = 0; i < 2; i++) {
    const [{ id }] = await sql`select switchyard.start_flow('fanIn', ${sql.json({ pad })}::jsonb)
                                 as id`;
    runs.push(id);
  }
  const ids = (await sql<{ message_id: string }[]>`
    select message_id::text from switchyard.step_tasks where run_id = any(${
    pgArray(runs)
  }::uuid[])`)
    .map((r) => r.message_id);
  const rows = await sql<
    { run_id: string; input_bytes: number | null; flow_input_bytes: number | null }[]
  >`select run_id::text, octet_length(input::text) as input_bytes,
           octet_length(flow_input::text) as flow_input_bytes
      from switchyard.start_tasks('fan_q', ${pgArray(ids)}::bigint[], ${w}::uuid, null)
     where disposition = 'claimed'`;
  assert.equal(rows.length, 6, 'three root tasks of each of two runs');
  assert.ok(rows.every((r) => r.input_bytes === null), 'a root step input is the flow input');
  for (const run of runs) {
    const carried = rows.filter((r) => r.run_id === run && r.flow_input_bytes !== null);
    assert.equal(carried.length, 1, `run ${run}: its input once`);
  }
  const total = rows.reduce((n, r) => n + (r.input_bytes ?? 0) + (r.flow_input_bytes ?? 0), 0);
  assert.ok(total < 2 * 100_100, `${total} bytes for two runs' inputs of 100 kB`);
});

Deno.test('_hide_messages finds the queue table of a mixed-case PGMQ queue and hides only the given messages', async () => {
  // PGMQ accepts a mixed-case name: pgmq.meta keeps the spelling, the tables are lower-cased.
  await sql`select pgmq.create('Mixed_Hide')`;
  const [{ adopted }] = await sql`select switchyard.adopt_queue('Mixed_Hide') as adopted`;
  assert.equal(adopted, 'adopted');
  const [q] = await sql`select queue_name, pgmq_name from switchyard.queues
    where queue_name = 'mixed_hide'`;
  assert.deepEqual({ ...q }, { queue_name: 'mixed_hide', pgmq_name: 'Mixed_Hide' });
  const mixed = new Flow<{ n: number }>({ slug: 'mixedHide', timeout: 30 })
    .step({ slug: 'a' }, (i) => i.n);
  const mixedShape = toPlacement(routeFlow(mixed, { queues: { a: 'mixed_hide' } })).shape;
  await sql`select switchyard.ensure_flow(${sql.json(mixedShape as never)}::jsonb)`;
  const runs = [];
  for (const n of [1, 2, 3]) {
    const [{ id }] = await sql`select switchyard.start_flow('mixedHide', ${
      sql.json({ n })
    }::jsonb) as id`;
    runs.push(id as string);
  }
  const ids = await Promise.all(runs.map(async (r) => String((await taskOf(r)).message_id)));
  const hidden = async () =>
    Object.fromEntries(
      (await sql<{ msg_id: string; secs: number }[]>`
        select msg_id::text, extract(epoch from vt - clock_timestamp())::float as secs
          from pgmq.q_mixed_hide where msg_id = any(${pgArray(ids)}::bigint[])`)
        .map((r) => [r.msg_id, r.secs]),
    );
  const w = crypto.randomUUID();
  await sql`select switchyard.register_worker(${w}::uuid, 'mixed_hide', 'mixed-hide-worker',
    array['mixedHide/a'])`;
  const claims = await sql`select disposition from switchyard.start_tasks('mixed_hide',
    ${pgArray(ids.slice(0, 2))}::bigint[], ${w}::uuid)`;
  assert.deepEqual(claims.map((c) => c.disposition), ['claimed', 'claimed']);
  const [{ margin }] = await sql`select switchyard.claim_margin_seconds() as margin`;
  let vt = await hidden();
  for (const id of ids.slice(0, 2)) {
    assert.ok(vt[id] > 30 + margin - 2 && vt[id] <= 30 + margin, `claimed ${id}: ${vt[id]} s`);
  }
  assert.ok(vt[ids[2]] <= 0, `unclaimed ${ids[2]} stays visible: ${vt[ids[2]]} s`);
  // Called with PGMQ's own spelling, it reaches the same table.
  await sql`select switchyard._hide_messages('Mixed_Hide', ${pgArray([ids[2]])}::bigint[],
    array[100])`;
  vt = await hidden();
  assert.ok(vt[ids[2]] > 98 && vt[ids[2]] <= 100, `hidden by its spelling: ${vt[ids[2]]} s`);
  for (const id of ids.slice(0, 2)) assert.ok(vt[id] <= 30 + margin && vt[id] > 30, id);
  // A refused batch (a worker whose registry lacks the pair) makes every message visible again.
  const other = crypto.randomUUID();
  await sql`select switchyard.register_worker(${other}::uuid, 'mixed_hide', 'mixed-hide-other',
    array['someoneElse/a'])`;
  const refused = await sql`select disposition from switchyard.start_tasks('mixed_hide',
    ${pgArray(ids)}::bigint[], ${other}::uuid)`;
  assert.deepEqual(refused.map((c) => c.disposition), [
    'unsupported',
    'unsupported',
    'unsupported',
  ]);
  vt = await hidden();
  for (const id of ids) assert.ok(vt[id] <= 0, `refused ${id} visible again: ${vt[id]} s`);
});

Deno.test('function_states counts live workers: not stopped, not deprecated, heart-beat in the window', async () => {
  await sql`select switchyard.register_function('fs-live', 'core_q')`;
  await sql`select switchyard.register_function('fs-idle', 'core_q')`;
  const ids: Record<string, string> = {};
  for (const name of ['live1', 'live2', 'deprecated', 'stopped', 'silent']) {
    ids[name] = crypto.randomUUID();
    await sql`select switchyard.register_worker(${ids[name]}::uuid, 'core_q', 'fs-live',
      ${pgArray(PAIRS)}::text[])`;
  }
  await sql`update switchyard.workers set deprecated_at = now() where worker_id = ${ids.deprecated}`;
  await sql`select switchyard.worker_stopped(${ids.stopped}::uuid, 'done')`;
  await sql`update switchyard.workers set last_heartbeat_at = now() - interval '1 minute'
             where worker_id = ${ids.silent}`;
  const live = async (name: string | null, window = 15) =>
    (await sql<{ function_name: string; live_workers: number }[]>`
      select function_name, live_workers from switchyard.function_states(${name}::text, ${window})`)
      .map((r) => [r.function_name, r.live_workers]);
  assert.deepEqual(await live('fs-live'), [['fs-live', 2]]);
  assert.deepEqual(
    await live('fs-live', 120),
    [['fs-live', 3]],
    'a wider window counts the silent one',
  );
  assert.deepEqual(await live('fs-idle'), [['fs-idle', 0]]);
  assert.deepEqual(await live('fs-nope'), [], 'an unknown name has no row');
  const all = await live(null);
  assert.deepEqual(all.map(([n]) => n), [...all.map(([n]) => n)].sort(), 'ordered by name');
  assert.deepEqual(all.filter(([n]) => String(n).startsWith('fs-')), [['fs-idle', 0], [
    'fs-live',
    2,
  ]]);
  const [row] = await sql`select * from switchyard.function_states('fs-live')`;
  assert.deepEqual(Object.keys(row), [
    'function_name',
    'queue_name',
    'enabled',
    'paused_at',
    'pause_reason',
    'last_woken_at',
    'live_workers',
  ]);
  assert.equal(row.queue_name, 'core_q');

  // The keep-alive uses the same definition: it wakes fs-idle, not fs-live.
  const woken = await sql`select function_name from switchyard.keep_alive(debounce_seconds => 0)
    where function_name like 'fs-%'`;
  assert.deepEqual(woken.map((w) => w.function_name), ['fs-idle']);
  // A fence waits for deprecated workers until they stop: they still run.
  await sql`select * from switchyard.fence_begin(array['fs-live'])`;
  try {
    assert.deepEqual(await live('fs-live'), [['fs-live', 0]], 'fence_begin deprecated them all');
    const [fence] = await sql`select live_workers from switchyard.fence_status()`;
    assert.equal(fence.live_workers, 3, 'live1, live2 and the deprecated one still run');
  } finally {
    await sql`select * from switchyard.fence_end()`;
  }
  await assert.rejects(
    sql`select * from switchyard.function_states(null, 0)`,
    (e: { code?: string; detail?: string }) =>
      e.code === '22023' && JSON.parse(e.detail!).argument === 'heartbeat_window_seconds',
  );
});

Deno.test('fence, keep-alive, function_states and the dashboard judge each worker by its own window; a caller widens it, never narrows it', async () => {
  await sql`select switchyard.ensure_flow(${sql.json(shape as never)}::jsonb)`;
  // One worker per function, each started with a 60 s window (heart-beating every 20 s) and
  // holding a started task: ww-wide heart-beat 30 s ago (longer than the callers' default
  // 15 s, within its own window), ww-lapsed 90 s ago (past its own window).
  const silentFor = { 'ww-wide': 30, 'ww-lapsed': 90 };
  for (const [name, seconds] of Object.entries(silentFor)) {
    await sql`select switchyard.register_function(${name}::text, 'core_q')`;
    const id = crypto.randomUUID();
    await sql`select switchyard.register_worker(${id}::uuid, 'core_q', ${name}::text,
      ${pgArray(PAIRS)}::text[], 60)`;
    const [{ id: run }] = await sql`select switchyard.start_flow('core', '{"n": 8}'::jsonb) as id`;
    const [claimed] = await claim(id, [(await taskOf(run)).message_id]);
    assert.equal(claimed.disposition, 'claimed');
    await sql`update switchyard.workers
                 set last_heartbeat_at = now() - make_interval(secs => ${seconds}::int)
               where worker_id = ${id}`;
  }
  const mine = <T extends { function_name: string }>(rows: T[]) =>
    rows.filter((r) => r.function_name.startsWith('ww-'));

  // function_states: the default window, a narrower and a wider one.
  const states = async (window?: number) =>
    mine(
      await (window === undefined
        ? sql<{ function_name: string; live_workers: number }[]>`
            select function_name, live_workers from switchyard.function_states()`
        : sql<{ function_name: string; live_workers: number }[]>`
            select function_name, live_workers from switchyard.function_states(null, ${window}::int)`),
    ).map((r) => [r.function_name, r.live_workers]);
  assert.deepEqual(await states(), [['ww-lapsed', 0], ['ww-wide', 1]], 'the default 15 s');
  assert.deepEqual(await states(1), [['ww-lapsed', 0], ['ww-wide', 1]], 'never narrowed');
  assert.deepEqual(await states(120), [['ww-lapsed', 1], ['ww-wide', 1]], 'widened');

  // The dashboard: the function's count and each worker's `live` flag.
  const dashboard = async (window?: number) =>
    mine(
      await (window === undefined
        ? sql<{ function_name: string; live_workers: number; workers: { live: boolean }[] }[]>`
            select function_name, live_workers, workers from switchyard.dashboard_functions()`
        : sql<{ function_name: string; live_workers: number; workers: { live: boolean }[] }[]>`
            select function_name, live_workers, workers
              from switchyard.dashboard_functions(${window}::int)`),
    ).map((r) => [r.function_name, r.live_workers, r.workers.map((w) => w.live)]);
  assert.deepEqual(await dashboard(), [['ww-lapsed', 0, [false]], ['ww-wide', 1, [true]]]);
  assert.deepEqual(await dashboard(1), [['ww-lapsed', 0, [false]], ['ww-wide', 1, [true]]]);
  assert.deepEqual(await dashboard(120), [['ww-lapsed', 1, [true]], ['ww-wide', 1, [true]]]);

  // The keep-alive wakes only the function whose worker is past its own window.
  const woken = async (window: number) =>
    mine(
      await sql<{ function_name: string }[]>`select function_name from switchyard.keep_alive(
        debounce_seconds => 0, heartbeat_window_seconds => ${window}::int)`,
    ).map((r) => r.function_name);
  assert.deepEqual(
    mine(
      await sql<{ function_name: string }[]>`
      select function_name from switchyard.keep_alive(debounce_seconds => 0)`,
    )
      .map((r) => r.function_name),
    ['ww-lapsed'],
    'the default 15 s',
  );
  assert.deepEqual(await woken(1), ['ww-lapsed'], 'never narrowed');
  assert.deepEqual(await woken(120), [], 'widened');

  // The fence: ww-wide's worker still runs its task, so the rollout is not quiet; ww-lapsed's
  // task is stalled and does not hold the fence.
  await sql`select * from switchyard.fence_begin(array['ww-wide', 'ww-lapsed'])`;
  try {
    const fence = async (window?: number) =>
      (await (window === undefined
        ? sql`select * from switchyard.fence_status()`
        : sql`select * from switchyard.fence_status(${window}::int)`))
        .map((r) => [r.function_name, r.live_workers, r.started_tasks, r.stalled_tasks, r.quiet]);
    assert.deepEqual(await fence(), [
      ['ww-lapsed', 0, 0, 1, true],
      ['ww-wide', 1, 1, 0, false],
    ], 'the default 15 s');
    assert.deepEqual(await fence(1), [
      ['ww-lapsed', 0, 0, 1, true],
      ['ww-wide', 1, 1, 0, false],
    ], 'never narrowed');
    assert.deepEqual(await fence(120), [
      ['ww-lapsed', 1, 1, 0, false],
      ['ww-wide', 1, 1, 0, false],
    ], 'widened');
    // Once ww-wide's worker is silent past its own window, it no longer holds the fence.
    await sql`update switchyard.workers set last_heartbeat_at = now() - interval '61 seconds'
               where function_name = 'ww-wide'`;
    assert.deepEqual(await fence(), [
      ['ww-lapsed', 0, 0, 1, true],
      ['ww-wide', 0, 0, 1, true],
    ]);
  } finally {
    await sql`select * from switchyard.fence_end()`;
  }
});

Deno.test("one completion batch starts every run's successors in run order: plain runs together, a condition through _start_ready_steps", async () => {
  // Two queues for the successors; on succ_q2 a delayed step and an undelayed one alternate,
  // so the batched sends must keep each queue's ids in (run, step index) order.
  const chain = new Flow<{ n: number }>({ slug: 'succ', maxAttempts: 4, timeout: 40 })
    .step({ slug: 'root' }, (i) => i.n)
    .step({ slug: 'x', dependsOn: ['root'] }, (i) => i.root)
    .step({ slug: 'y', dependsOn: ['root'], startDelay: 30, timeout: 7 }, (i) => i.root)
    .step({ slug: 'z', dependsOn: ['root'] }, (i) => i.root);
  const gated = new Flow<{ n: number }>({ slug: 'succIf' })
    .step({ slug: 'root' }, (i) => i.n)
    .step({ slug: 'c', dependsOn: ['root'], if: { root: 1 } }, (i) => i.root);
  for (
    const shape of [
      toPlacement(
        routeFlow(chain, { queues: { root: 'succ_q0', x: 'succ_q1', y: 'succ_q2', z: 'succ_q2' } }),
      ).shape,
      toPlacement(routeFlow(gated, { queues: { root: 'succ_q0', c: 'succ_q2' } })).shape,
    ]
  ) await sql`select switchyard.ensure_flow(${sql.json(shape as never)}::jsonb)`;
  const w = crypto.randomUUID();
  await sql`select switchyard.register_worker(${w}::uuid, 'succ_q0', 'succ-q0-worker',
    array['succ/root', 'succIf/root'])`;
  // Run ids chosen so that the gated runs sit between the chain's runs in run order.
  const ids = [1, 2, 3, 4, 5].map((k) => `0000000${k}-0000-4000-8000-000000000000`);
  const starts: [string, string, number][] = [
    ['succ', ids[0], 0],
    ['succIf', ids[1], 1], // condition met: c runs
    ['succ', ids[2], 2],
    ['succIf', ids[3], 2], // condition unmet: c is skipped, the run completes
    ['succ', ids[4], 4],
  ];
  for (const [flowSlug, id, n] of starts) {
    await sql`select switchyard.start_flow(${flowSlug}, ${sql.json({ n })}::jsonb, ${id}::uuid)`;
  }
  const roots = await sql<
    { message_id: string }[]
  >`select message_id::text from switchyard.step_tasks
    where run_id = any(${pgArray(ids)}::uuid[])`;
  const claims = await sql<{ run_id: string }[]>`select run_id::text from switchyard.start_tasks(
    'succ_q0', ${pgArray(roots.map((r) => r.message_id))}::bigint[], ${w}::uuid)
    where disposition = 'claimed'`;
  assert.equal(claims.length, 5);
  const oks = await sql<{ ok: boolean }[]>`select ok from switchyard.complete_tasks(${
    sql.json(starts.map(([, id, n]) => ({ run_id: id, step_slug: 'root', attempt: 1, output: n })))
  }::jsonb)`;
  assert.deepEqual(oks.map((o) => o.ok), [true, true, true, true, true]);

  const tasks = await sql<
    {
      run_id: string;
      step_slug: string;
      queue_name: string;
      message_id: string;
      max_attempts: number;
      timeout: number;
      status: string;
      body: Record<string, string>;
      delayed: boolean;
    }[]
  >`select t.run_id::text, t.step_slug, t.queue_name, t.message_id::text, t.max_attempts,
           t.timeout, t.status, coalesce(q1.message, q2.message) as body,
           coalesce(q1.vt, q2.vt) > now() + interval '25 seconds' as delayed
      from switchyard.step_tasks t
      left join pgmq.q_succ_q1 q1 on t.queue_name = 'succ_q1' and q1.msg_id = t.message_id
      left join pgmq.q_succ_q2 q2 on t.queue_name = 'succ_q2' and q2.msg_id = t.message_id
     where t.run_id = any(${pgArray(ids)}::uuid[]) and t.step_slug <> 'root'
     order by t.run_id, t.step_slug`;
  const got = tasks.map((t) => `${t.run_id.slice(0, 8)}/${t.step_slug}@${t.queue_name}`);
  assert.deepEqual(got, [
    '00000001/x@succ_q1',
    '00000001/y@succ_q2',
    '00000001/z@succ_q2',
    '00000002/c@succ_q2',
    '00000003/x@succ_q1',
    '00000003/y@succ_q2',
    '00000003/z@succ_q2',
    '00000005/x@succ_q1',
    '00000005/y@succ_q2',
    '00000005/z@succ_q2',
  ]);
  for (const t of tasks) {
    assert.equal(t.status, 'queued');
    assert.deepEqual(t.body, {
      run_id: t.run_id,
      flow_slug: t.run_id === ids[1] ? 'succIf' : 'succ',
      step_slug: t.step_slug,
    });
    assert.equal(t.delayed, t.step_slug === 'y', `${t.step_slug}: its startDelay only`);
    if (t.run_id !== ids[1]) {
      assert.equal(t.max_attempts, 4);
      assert.equal(t.timeout, t.step_slug === 'y' ? 7 : 40);
    }
  }
  // Each queue numbers the successors in (run, step index) order, as one call per run did.
  for (const queue of ['succ_q1', 'succ_q2']) {
    const inQueue = tasks.filter((t) => t.queue_name === queue).map((t) => BigInt(t.message_id));
    assert.deepEqual(inQueue, [...inQueue].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), queue);
  }
  const states = await sql<{ run_id: string; step_slug: string; status: string }[]>`
    select run_id::text, step_slug, status from switchyard.step_states
     where run_id = any(${pgArray(ids)}::uuid[]) and step_slug <> 'root'
     order by run_id, step_slug`;
  assert.deepEqual(
    states.filter((s) => s.status !== 'started').map((
      s,
    ) => [s.run_id.slice(0, 8), s.step_slug, s.status]),
    [['00000004', 'c', 'skipped']],
  );
  const runs = await sql<{ run_id: string; status: string; output: unknown }[]>`
    select run_id::text, status, output from switchyard.runs
     where run_id = any(${pgArray(ids)}::uuid[]) order by run_id`;
  assert.deepEqual(runs.map((r) => r.status), [
    'started',
    'started',
    'started',
    'completed',
    'started',
  ]);
  assert.deepEqual(runs[3].output, {}, 'its only leaf was skipped');
  // One 'started' event per successor step, after its root's 'completed'.
  const events = await sql<{ run_id: string; step_slug: string | null; event: string }[]>`
    select run_id::text, step_slug, event from switchyard.run_events
     where run_id = ${ids[0]}::uuid order by event_id`;
  assert.deepEqual(events.map((e) => `${e.step_slug ?? 'run'} ${e.event}`), [
    'run started',
    'root started',
    'root completed',
    'x started',
    'y started',
    'z started',
  ]);
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
