/**
 * Where a run came from (issue 43, docs/design/origins.md): `start_flow`'s `origin`, stored with
 * the run, carried by its `started` event and its status, set by row triggers (insert, update,
 * delete), their backfill and webhooks; a plain start has none; a bad origin is refused with its
 * rule and starts nothing. The dashboard's reads (`dashboard_row_triggers`,
 * `dashboard_run_origins`) and the doctor's row trigger and webhook checks on a copy of the kit's
 * project. Real PostgreSQL, real connections.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError } from '../../lib/errors.ts';
import { createWebhook, defineDeployedFlow, Flow } from '../../lib/mod.ts';
import {
  backfillRowTrigger,
  dashboardSnapshot,
  declareRowTrigger,
  recentRuns,
  removeRowTrigger,
  rowTriggerOverviews,
  runEvents,
  runStatus,
  startRun,
} from '../../lib/ops.ts';
import { copyProject } from '../../cli/_project.ts';
import { diagnose } from '../../cli/doctor.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();

const flow = new Flow<Record<string, unknown>>({ slug: 'originV1' }).step({ slug: 'a' }, () => 1);
const deployed = defineDeployedFlow(flow, { alias: 'origin_flow' });
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(deployed).shape as never)
}::jsonb)`;
await db.sql`select switchyard.sync_alias('origin_flow', array['originV1'])`;

/** The origins of the runs of the flow, oldest first. */
async function origins(): Promise<unknown[]> {
  const rows = await db.sql<{ origin: unknown }[]>`
    select origin from switchyard.runs where flow_slug = 'originV1'
     order by started_at, run_id`;
  return rows.map((r) => r.origin);
}

async function clearRuns() {
  await db.sql`delete from switchyard.runs where flow_slug = 'originV1'`;
  await db.sql`delete from switchyard.start_keys where started_as = 'origin_flow'`;
}

Deno.test('a plain start has no origin; a start with one keeps it in the run, its event and status', async () => {
  const plain = await startRun(db.sql, 'origin_flow', { n: 1 });
  const status = await runStatus(db.sql, plain);
  assert.equal(status!.origin, null);
  const [started] = await runEvents(db.sql, plain);
  assert.equal(started.event, 'started');
  assert.equal(started.data, undefined, 'a plain start: no data');
  const [{ data }] = await db.sql<{ data: unknown }[]>`
    select data from switchyard.run_events where run_id = ${plain} and step_slug is null`;
  assert.equal(data, null);

  const origin = { kind: 'import', file: 'orders.csv', line: 7 };
  const imported = await startRun(db.sql, 'origin_flow', { n: 2 }, { origin });
  assert.deepEqual((await runStatus(db.sql, imported))!.origin, origin);
  const [event] = await runEvents(db.sql, imported);
  assert.deepEqual(event.data, { origin });

  // A keyed start that returns the key's run keeps that run's origin.
  const first = await startRun(db.sql, 'origin_flow', { n: 3 }, {
    key: 'k1',
    mode: 'dedupe',
    origin: { kind: 'webhook', function: 'a', delivery: 'k1' },
  });
  const again = await startRun(db.sql, 'origin_flow', { n: 3 }, {
    key: 'k1',
    mode: 'dedupe',
    origin: { kind: 'webhook', function: 'b', delivery: 'k1' },
  });
  assert.equal(again, first);
  assert.deepEqual((await runStatus(db.sql, first))!.origin, {
    kind: 'webhook',
    function: 'a',
    delivery: 'k1',
  });
  await clearRuns();
});

Deno.test('a bad origin is refused with origin_invalid and starts nothing', async () => {
  const bad: unknown[] = [
    '"text"',
    '[1]',
    '{}',
    '{"kind": 1}',
    '{"kind": "Webhook"}',
    '{"kind": "1x"}',
    `{"kind": "big", "pad": "${'x'.repeat(1100)}"}`,
  ];
  for (const origin of bad) {
    await assert.rejects(
      db.sql`select switchyard.start_flow('origin_flow', '{}'::jsonb, origin => ${origin as string}::jsonb)`,
      (e: Error & { code?: string; detail?: string }) =>
        e.code === '22023' && /origin .* is invalid/.test(e.message) &&
        /origin_invalid/.test(String(e.detail)),
      String(origin),
    );
  }
  // The client refuses what is not an object with a string kind, before the database.
  await assert.rejects(
    startRun(db.sql, 'origin_flow', {}, { origin: 'webhook' as never }),
    /origin "webhook" is invalid: pass an object with a string kind/,
  );
  await assert.rejects(
    startRun(db.sql, 'origin_flow', {}, { origin: { kind: 'Bad Kind' } }),
    (e: Error) =>
      e instanceof OperationError && /origin_invalid|origin .* is invalid/.test(e.message),
  );
  assert.deepEqual(await origins(), [], 'nothing started');
});

Deno.test('row triggers start runs that name the trigger, the table and the write; the backfill its own', async () => {
  await db.sql`create table public.accounts (id bigint primary key, email text not null)`;
  await db.sql`insert into public.accounts values (1, 'old@example.com')`;
  await declareRowTrigger(db.sql, {
    name: 'account_changes',
    table: 'accounts',
    alias: 'origin_flow',
    events: ['insert', 'update', 'delete'],
    inputColumns: ['id'],
    backfill: true,
  });
  await db.sql`insert into public.accounts values (2, 'new@example.com')`;
  await db.sql`update public.accounts set email = 'x@example.com' where id = 2`;
  await db.sql`delete from public.accounts where id = 2`;
  const row = (op: string) => ({
    kind: 'row_trigger',
    trigger: 'account_changes',
    table: 'public.accounts',
    op,
  });
  assert.deepEqual(await origins(), [row('insert'), row('update'), row('delete')]);

  // Before the backfill: pending, nothing passed.
  let [overview] = await rowTriggerOverviews(db.sql);
  assert.equal(overview.name, 'account_changes');
  assert.equal(overview.installed, true);
  assert.equal(overview.backfill?.state, 'pending');
  assert.equal(overview.backfill?.batches, 0);
  assert.equal(overview.runsLastHour, 3);

  const done = await backfillRowTrigger(db.sql, 'account_changes', { batchSize: 10 });
  assert.equal(done.done, true);
  assert.deepEqual((await origins()).at(-1), { kind: 'backfill', trigger: 'account_changes' });
  [overview] = await rowTriggerOverviews(db.sql);
  assert.equal(overview.backfill?.state, 'done');
  assert.equal(overview.backfill?.rows, 1);
  assert.equal(overview.runsLastHour, 4, 'three writes and one backfilled row');

  // The dashboard: the section, and each run's origin in the runs table.
  const snap = await dashboardSnapshot(db.sql, { runs: { limit: 10 } });
  assert.deepEqual(snap.rowTriggers.map((t) => [t.name, t.installed, t.runsLastHour]), [
    ['account_changes', true, 4],
  ]);
  const runs = snap.runs.filter((r) => r.flowSlug === 'originV1');
  assert.equal(runs.length, 4);
  assert.deepEqual(
    runs.map((r) => (r.origin as { kind: string }).kind).sort(),
    ['backfill', 'row_trigger', 'row_trigger', 'row_trigger'],
  );
  const plain = await startRun(db.sql, 'origin_flow', {});
  const [one] = await recentRuns(db.sql, { runId: plain });
  assert.equal(one.origin, null);

  // A run an hour old is not counted.
  await db.sql`update switchyard.runs set started_at = started_at - interval '61 minutes'
                where origin ->> 'op' = 'delete'`;
  [overview] = await rowTriggerOverviews(db.sql);
  assert.equal(overview.runsLastHour, 3);

  // The trigger dropped by hand: the declaration stays, shown missing.
  await db.sql`drop trigger switchyard_account_changes on public.accounts`;
  [overview] = await rowTriggerOverviews(db.sql);
  assert.equal(overview.installed, false);

  assert.equal(await removeRowTrigger(db.sql, 'account_changes'), true);
  assert.deepEqual(await rowTriggerOverviews(db.sql), []);
  await db.sql`drop table public.accounts`;
  await clearRuns();
});

Deno.test('a webhook run names its function and its delivery', async () => {
  const secret = 'whsec-origin';
  const sign = async (body: string) => {
    const key = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(secret),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(body));
    return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, '0')).join('');
  };
  const deliver = async (hook: ReturnType<typeof createWebhook>, url: string, id: string) => {
    const body = JSON.stringify({ id });
    const response = await hook.fetch(
      new Request(url, {
        method: 'POST',
        body,
        headers: { 'webhook-signature': await sign(body), 'webhook-id': id },
      }),
    );
    return (await response.json()) as { runId: string };
  };
  const named = createWebhook({ alias: 'origin_flow', secret, source: db.sql, name: 'orders-in' });
  const a = await deliver(named, 'http://localhost/anything', 'd-1');
  assert.deepEqual((await runStatus(db.sql, a.runId))!.origin, {
    kind: 'webhook',
    function: 'orders-in',
    delivery: 'd-1',
  });
  // Without a name: the function's segment of the path, as the gateway forwards it.
  const unnamed = createWebhook({ alias: 'origin_flow', secret, source: db.sql });
  for (
    const [url, id] of [
      ['http://localhost/functions/v1/hook-a/x', 'd-2'],
      ['http://localhost/hook-b', 'd-3'],
    ]
  ) {
    const { runId } = await deliver(unnamed, url, id);
    const [e] = await runEvents(db.sql, runId);
    assert.deepEqual(e.data, {
      origin: { kind: 'webhook', function: id === 'd-2' ? 'hook-a' : 'hook-b', delivery: id },
    });
  }
  await clearRuns();
});

Deno.test('doctor: a missing trigger is a problem with its fix; an unfinished backfill a notice; a webhook secret unset', async () => {
  const dir = await copyProject('switchyard-origin-doctor-');
  try {
    await db.sql`create table public.invoices (id bigint primary key, total numeric)`;
    await db.sql`insert into public.invoices select g, g from generate_series(1, 5) g`;
    await declareRowTrigger(db.sql, {
      name: 'invoice_paid',
      table: 'public.invoices',
      alias: 'origin_flow',
      events: ['insert', 'update'],
      condition: 'total > 0',
      backfill: true,
    });
    await declareRowTrigger(db.sql, {
      name: 'invoice_gone',
      table: 'public.invoices',
      alias: 'origin_flow',
      events: ['delete'],
    });
    await backfillRowTrigger(db.sql, 'invoice_paid', { batchSize: 2, maxBatches: 1 });
    await db.sql`drop trigger switchyard_invoice_gone on public.invoices`;

    // A webhook function whose secret variable is set nowhere, and one whose is in .env.
    const fn = (name: string, env: string) =>
      Deno.mkdir(join(dir, 'supabase/functions', name), { recursive: true }).then(() =>
        Deno.writeTextFile(
          join(dir, 'supabase/functions', name, 'index.ts'),
          `import { serveWebhook } from 'switchyard';\n` +
            `serveWebhook({ name: '${name}', alias: 'origin_flow', secretEnv: '${env}' });\n`,
        )
      );
    await fn('unset-hook', 'SY_ORIGIN_TEST_UNSET_SECRET');
    await fn('set-hook', 'SY_ORIGIN_TEST_SET_SECRET');
    await Deno.writeTextFile(
      join(dir, 'supabase/functions/.env'),
      'SY_ORIGIN_TEST_SET_SECRET=abc\n',
    );

    const d = await diagnose(db.sql, {
      projectDir: dir,
      stuckAfterSeconds: 300,
      keepAlive: false,
      localDatabase: true,
    });
    const triggers = d.problems.filter((p) => p.check === 'row triggers');
    assert.equal(triggers.length, 1, JSON.stringify(d.problems));
    assert.match(
      triggers[0].problem,
      /row trigger invoice_gone is declared on public\.invoices but its trigger switchyard_invoice_gone is missing/,
    );
    assert.match(triggers[0].fix, /trigger remove invoice_gone/);
    assert.match(
      triggers[0].fix,
      /trigger add invoice_gone --table public\.invoices --alias origin_flow --events delete/,
    );
    const notices = d.notices.filter((n) => n.check === 'row triggers');
    assert.equal(notices.length, 1, JSON.stringify(d.notices));
    assert.match(
      notices[0].notice,
      /row trigger invoice_paid's backfill is unfinished: 2 row\(s\) passed in 1 batch\(es\), 2 run\(s\) started, the cursor at \["2"\]/,
    );
    assert.match(notices[0].fix, /trigger backfill invoice_paid/);
    const hooks = d.problems.filter((p) => p.check === 'webhooks');
    assert.deepEqual(hooks.map((p) => p.problem.split(' ')[2]), ['unset-hook']);
    assert.match(hooks[0].problem, /SY_ORIGIN_TEST_UNSET_SECRET.*500 webhook_config/);
    assert.match(hooks[0].fix, /supabase\/functions\/\.env.*supabase secrets set/);

    // On a remote database the unset secret is a notice: its secrets are not visible here.
    const remote = await diagnose(db.sql, {
      projectDir: dir,
      stuckAfterSeconds: 300,
      keepAlive: false,
      localDatabase: false,
    });
    assert.equal(remote.problems.filter((p) => p.check === 'webhooks').length, 0);
    assert.equal(remote.notices.filter((n) => n.check === 'webhooks').length, 1);

    // Declared again as the fix says (here in SQL), the problem is gone; finished, the notice.
    await removeRowTrigger(db.sql, 'invoice_gone');
    await declareRowTrigger(db.sql, {
      name: 'invoice_gone',
      table: 'public.invoices',
      alias: 'origin_flow',
      events: ['delete'],
    });
    await backfillRowTrigger(db.sql, 'invoice_paid', { batchSize: 10 });
    const fixed = await diagnose(db.sql, {
      projectDir: dir,
      stuckAfterSeconds: 300,
      keepAlive: false,
    });
    assert.deepEqual(fixed.problems.filter((p) => p.check === 'row triggers'), []);
    assert.deepEqual(fixed.notices.filter((n) => n.check === 'row triggers'), []);
    await removeRowTrigger(db.sql, 'invoice_paid');
    await removeRowTrigger(db.sql, 'invoice_gone');
    await db.sql`drop table public.invoices`;
    await clearRuns();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
