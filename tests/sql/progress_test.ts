/**
 * Progress events (issue 26, docs/design/observability.md) with a real worker on real PostgreSQL:
 * ctx.progress appends `progress` events in the run's event order, with the task's index and
 * the JSON; over 8 KiB or over 20 a second per task it is refused naming the value and the limit
 * and records nothing; a finished attempt may not report; and under the row-level security
 * policy of run_events, with Supabase's real roles, a signed-in user reads the progress rows of
 * their own runs only (what Supabase Realtime checks for each subscriber).
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { runEvents } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { adminUrl } from '../_helpers/db.ts';
import postgres from 'postgres';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const base = { connectionString: db.url, ...FAST, logger: SILENT };

async function compile(flow: Parameters<typeof toPlacement>[0]) {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
}

/** What a refused call threw: its SQLSTATE, rule and message. */
async function refusal(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (e) {
    const err = e as { code?: string; detail?: string; message: string };
    const detail = err.detail?.startsWith('{') ? JSON.parse(err.detail) : {};
    return { code: err.code, rule: detail.rule, limit: detail.limit, message: err.message };
  }
  return assert.fail('expected a refusal');
}

Deno.test('ctx.progress appends progress events in order with the run and step events', async () => {
  const flow = new Flow<{ n: number }>({ slug: 'progressOrderV1' })
    .step({ slug: 'work' }, async (input, ctx) => {
      for (let i = 1; i <= input.n; i++) {
        const id = await ctx.progress({ done: i });
        assert.ok(id > 0);
      }
      return { n: input.n };
    })
    .step({ slug: 'after', dependsOn: ['work'] }, async (_input, ctx) => {
      await ctx.progress('almost');
      return null;
    });
  await compile(flow);
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('progressOrderV1', { n: 5 });
    await within(30_000, 'the run to end', client.waitForRun(runId));
    const events = await runEvents(client, runId);
    assert.deepEqual(
      events.map((e) =>
        `${e.stepSlug ?? 'run'} ${e.event}${
          e.event === 'progress' ? ` ${JSON.stringify(e.data)}` : ''
        }`
      ),
      [
        'run started',
        'work started',
        ...[1, 2, 3, 4, 5].map((i) => `work progress {"done":${i}}`),
        'work completed',
        'after started',
        'after progress "almost"',
        'after completed',
        'run completed',
      ],
    );
    const ids = events.map((e) => e.eventId);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    assert.ok(events.filter((e) => e.event === 'progress').every((e) => e.taskIndex === 0));
    // Without progress, the dashboard's view of the same run.
    const transitions = await runEvents(client, runId, { withoutProgress: true });
    assert.equal(transitions.length, events.length - 6);
  } finally {
    await worker.stop();
  }
});

Deno.test('progress over 8 KiB or over 20 a second per task is refused with its rule and records nothing', async () => {
  const seen: Record<string, unknown> = {};
  const flow = new Flow<Record<string, never>>({ slug: 'progressLimitsV1', maxAttempts: 1 })
    .step({ slug: 'big' }, async (_input, ctx) => {
      seen.big = await refusal(ctx.progress({ text: 'x'.repeat(9000) }));
      seen.fits = await ctx.progress({ text: 'x'.repeat(8000) });
      return null;
    })
    .step({ slug: 'chatty' }, async (_input, ctx) => {
      // One window of one second from the first: 20 pass, the 21st is refused. A slow machine
      // may open a new window in between; then the loop goes on until one is refused.
      let passed = 0;
      for (let k = 0; k < 200; k++) {
        try {
          await ctx.progress({ k });
          passed++;
        } catch (e) {
          seen.chatty = { ...(await refusal(Promise.reject(e))), passed };
          break;
        }
      }
      return null;
    });
  await compile(flow);
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('progressLimitsV1', {});
    const status = await within(30_000, 'the run to end', client.waitForRun(runId));
    assert.equal(status.status, 'completed');
    const big = seen.big as Awaited<ReturnType<typeof refusal>>;
    assert.equal(big.code, '22023');
    assert.equal(big.rule, 'progress_too_large');
    assert.equal(big.limit, 8192);
    assert.match(
      big.message,
      /progress of step "big" is 9012 bytes of JSON, over the limit of 8192 bytes/,
    );
    const chatty = seen.chatty as Awaited<ReturnType<typeof refusal>> & { passed: number };
    assert.equal(chatty.code, 'PT429');
    assert.equal(chatty.rule, 'progress_rate');
    assert.equal(chatty.limit, 20);
    assert.match(chatty.message, /over the limit of 20 events per second \(progress_per_second\)/);
    assert.ok(chatty.passed >= 20, String(chatty.passed));
    const events = await runEvents(client, runId);
    const progress = events.filter((e) => e.event === 'progress');
    // The refused ones left no event: the big step's one that fits, and the chatty ones passed.
    assert.equal(progress.filter((e) => e.stepSlug === 'big').length, 1);
    assert.equal(progress.filter((e) => e.stepSlug === 'chatty').length, chatty.passed);
  } finally {
    await worker.stop();
  }
});

Deno.test('within one transaction (one instant) exactly 20 pass, then the window refuses; other refusals', async () => {
  const flow = new Flow<Record<string, never>>({ slug: 'progressSqlV1' })
    .step({ slug: 'hold' }, () => null);
  await compile(flow);
  const runId = await client.startFlow('progressSqlV1', {});
  // A claim by hand: the task is started, attempt 1, for a registered worker.
  const [{ msg }] = await db.sql<{ msg: string }[]>`
    select message_id::text as msg from switchyard.step_tasks where run_id = ${runId}`;
  const workerId = crypto.randomUUID();
  const pairs = pgArray(['progressSqlV1/hold']);
  await db.sql`select switchyard.register_worker(${workerId}::uuid, 'progresssqlv1',
    'progresssqlv1-worker', ${pairs}::text[])`;
  const [claim] = await db.sql<{ disposition: string }[]>`select disposition
    from switchyard.start_tasks('progresssqlv1', ${pgArray([msg])}::bigint[], ${workerId}::uuid,
      ${pairs}::text[])`;
  assert.equal(claim.disposition, 'claimed');
  const report = (tx: postgres.Sql | postgres.TransactionSql, data: unknown, attempt = 1) =>
    tx`select switchyard.report_progress(${runId}::uuid, 'hold', 0, ${attempt}, ${
      tx.json(data as never)
    }::jsonb) as id`;
  const refused = await refusal(db.sql.begin(async (tx) => {
    for (let k = 0; k < 20; k++) await report(tx, { k });
    const [{ n }] = await tx`select count(*)::int as n from switchyard.run_events
                              where run_id = ${runId} and event = 'progress'`;
    assert.equal(n, 20);
    await report(tx, { k: 20 });
  }));
  assert.equal(refused.rule, 'progress_rate');
  assert.equal(
    (await refusal(report(db.sql, { k: 0 }, 2))).rule,
    'attempt_not_current',
    'attempt 2 does not hold the task',
  );
  assert.equal((await refusal(report(db.sql, null))).rule, 'progress_null');
  assert.equal(
    (await refusal(db.sql`select switchyard.report_progress(${crypto.randomUUID()}::uuid,
      'hold', 0, 1, '1'::jsonb)`)).rule,
    'attempt_not_current',
  );
  // A cancelled run's running task reports nothing more.
  await db.sql`select switchyard.cancel_run(${runId}::uuid, 'test')`;
  const ended = await refusal(report(db.sql, { k: 'late' }));
  assert.equal(ended.code, '55000');
  assert.equal(ended.rule, 'run_not_started');
});

Deno.test('row-level security with real roles: a signed-in user reads the progress rows of their own runs only', async () => {
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
  try {
    for (const role of ['anon', 'authenticated', 'service_role']) {
      await admin.unsafe(
        `do $$ begin create role ${role} nologin noinherit; exception when duplicate_object then null; end $$`,
      );
    }
  } finally {
    await admin.end();
  }
  // The Supabase layout (auth.uid() reading the JWT claims), then the policy and the opt-in read.
  await db.sql.unsafe(`
    create schema auth;
    grant usage on schema auth to anon, authenticated, service_role;
    create function auth.uid() returns uuid language sql stable as $$
      select nullif(current_setting('request.jwt.claim.sub', true), '')::uuid
    $$;
    grant execute on function auth.uid() to anon, authenticated, service_role;
    select switchyard.expose_run_events();
    grant usage on schema switchyard to authenticated;
    grant select on switchyard.run_events to authenticated;
  `);
  const flow = new Flow<{ who: string }>({ slug: 'progressRlsV1' })
    .step({ slug: 'work' }, async (input, ctx) => {
      await ctx.progress({ secret: `${input.who}'s progress` });
      return null;
    });
  await compile(flow);
  const alice = crypto.randomUUID(), bob = crypto.randomUUID();
  const start = async (owner: string | null, who: string) =>
    (await db.sql<{ id: string }[]>`select switchyard.start_flow('progressRlsV1', ${
      db.sql.json({ who } as never)
    }::jsonb, null, ${owner}::uuid) as id`)[0].id;
  const worker = await startWorker(flow, base);
  let runs: string[];
  try {
    runs = [await start(alice, 'alice'), await start(bob, 'bob'), await start(null, 'server')];
    for (const id of runs) await within(30_000, 'the run to end', client.waitForRun(id));
  } finally {
    await worker.stop();
  }
  const readAs = (sub: string | null) =>
    db.sql.begin(async (tx) => {
      await tx.unsafe('set local role authenticated');
      await tx`select set_config('request.jwt.claim.sub', ${sub ?? ''}, true)`;
      return await tx<{ run_id: string; data: { secret: string } }[]>`
        select run_id, data from switchyard.run_events where event = 'progress' order by event_id`;
    });
  assert.deepEqual((await readAs(alice)).map((r) => [r.run_id, r.data.secret]), [
    [runs[0], "alice's progress"],
  ]);
  assert.deepEqual((await readAs(bob)).map((r) => [r.run_id, r.data.secret]), [
    [runs[1], "bob's progress"],
  ]);
  assert.deepEqual([...await readAs(null)], []);
  const owners = await db.sql<{ run_id: string; owner: string | null }[]>`
    select run_id, owner from switchyard.run_events
     where event = 'progress' and run_id = any(${pgArray(runs)}::uuid[])`;
  assert.deepEqual(
    runs.map((id) => owners.find((r) => r.run_id === id)?.owner),
    [alice, bob, null],
    "each progress row carries its run's owner",
  );
  // anon reads nothing at all.
  const anon = await refusal(db.sql.begin(async (tx) => {
    await tx.unsafe('set local role anon');
    await tx`select * from switchyard.run_events`;
  }));
  assert.equal(anon.code, '42501');
});

Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
