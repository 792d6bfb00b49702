/**
 * The dashboard and wait steps (issue 22, docs/design/waits.md): a waiting step is shown
 * with its kind and deadline, and `POST /api/runs/<id>/signal` sends its signal behind the same
 * guard as the other actions (the bearer, POST, JSON, the page's own origin). Refusals map by
 * rule: 422 for a signal the step cannot take by its kind or size, 409 for one the state of
 * the run or step refuses, 404 for an unknown run. Real PostgreSQL, the real handler.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, signalPayload } from '../../lib/mod.ts';
import { createDashboard, type DashboardRunDetail } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const SECRET = 'dashboard-signal-test-secret';
const db = await createTestDatabase();
const client = untypedClient(db.url);

const flow = new Flow({ slug: 'dashWaitV1' })
  .wait({ slug: 'approval', payload: signalPayload<{ ok: boolean }>(), timeout: 3600 })
  .sleep({ slug: 'nap', dependsOn: ['approval'], seconds: 3600 });
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(flow).shape as never)
}::jsonb)`;

const vars: Record<string, string> = { SWITCHYARD_WORKER_SECRET: SECRET };
const dashboard = createDashboard({ source: client, env: (n) => vars[n] });
const port = freePort();
const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
const base = `http://127.0.0.1:${port}`;

async function call(
  path: string,
  init: RequestInit & { bearer?: string; json?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers = new Headers(init.headers);
  if (init.bearer) headers.set('authorization', `Bearer ${init.bearer}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  const response = await fetch(`${base}${path}`, { ...init, headers, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

const signal = (run: string, json: unknown, init: Parameters<typeof call>[1] = {}) =>
  call(`/api/runs/${run}/signal`, { method: 'POST', json, ...init });

Deno.test('a waiting step is shown; Send signal needs the bearer and delivers; refusals map by rule', async () => {
  const runId = await client.startFlow('dashWaitV1', {});
  const detail = (await call(`/api/runs/${runId}`)).body as unknown as DashboardRunDetail;
  assert.deepEqual(
    detail.run.steps.map((s) => [s.stepSlug, s.kind, s.status, s.queueName, !!s.waitDeadline]),
    [['approval', 'wait', 'started', '', true], ['nap', 'sleep', 'created', '', false]],
  );
  assert.ok(detail.events.some((e) => e.stepSlug === 'approval' && e.event === 'waiting'));
  const page = await (await fetch(`${base}/`)).text();
  assert.match(page, /Send signal to/, 'the page draws the action');

  // The guard: no bearer, a wrong one, another origin, a form: refused, nothing delivered.
  assert.equal((await signal(runId, { step: 'approval', payload: { ok: true } })).status, 401);
  assert.equal(
    (await signal(runId, { step: 'approval' }, { bearer: 'not-the-secret' })).status,
    401,
  );
  assert.equal(
    (await signal(runId, { step: 'approval' }, {
      bearer: SECRET,
      headers: { origin: 'https://evil.example' },
    })).status,
    403,
  );
  assert.equal(
    (await call(`/api/runs/${runId}/signal`, {
      method: 'POST',
      bearer: SECRET,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'step=approval',
    })).status,
    415,
  );
  const [before] = await db.sql`select status from switchyard.step_states
    where run_id = ${runId} and step_slug = 'approval'`;
  assert.equal(before.status, 'started');

  // Bad requests: 400 naming the field; the SQL core's refusals by rule.
  const noStep = await signal(runId, { payload: 1 }, { bearer: SECRET });
  assert.deepEqual([noStep.status, noStep.body.parameter], [400, 'step']);
  const unknownField = await signal(runId, { step: 'approval', why: 1 }, { bearer: SECRET });
  assert.deepEqual([unknownField.status, unknownField.body.parameter], [400, 'why']);
  const sleepStep = await signal(runId, { step: 'nap' }, { bearer: SECRET });
  assert.deepEqual([sleepStep.status, sleepStep.body.error, sleepStep.body.rule], [
    422,
    'signal_refused',
    'step_not_wait',
  ]);
  const unknownRun = await signal(crypto.randomUUID(), { step: 'approval' }, { bearer: SECRET });
  assert.equal(unknownRun.status, 404);

  // Delivered with the bearer; the same key again is a no-op; another key is a conflict.
  const sent = await signal(runId, { step: 'approval', payload: { ok: true }, key: 'k' }, {
    bearer: SECRET,
  });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  assert.deepEqual(sent.body.result, { runId, outcome: 'delivered' });
  const again = await signal(runId, { step: 'approval', payload: { ok: false }, key: 'k' }, {
    bearer: SECRET,
  });
  assert.deepEqual(again.body.result, { runId, outcome: 'duplicate' });
  const other = await signal(runId, { step: 'approval', payload: {}, key: 'k2' }, {
    bearer: SECRET,
  });
  assert.deepEqual([other.status, other.body.error, other.body.rule], [
    409,
    'conflict',
    'step_already_signalled',
  ]);
  const after = (await call(`/api/runs/${runId}`)).body as unknown as DashboardRunDetail;
  assert.deepEqual(after.run.steps.map((s) => [s.stepSlug, s.status]), [
    ['approval', 'completed'],
    ['nap', 'started'],
  ]);
});

/** The hostile signal requests this file sends, counted as they are sent (reported at the end). */
let hostile = 0;

Deno.test('malformed signal bodies are 400 naming the field, and leave the step its one signal', async () => {
  const runId = await client.startFlow('dashWaitV1', {});
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  /** Raw JSON texts (not built with JSON.stringify: lone surrogates and 1e400 stay as sent). */
  const bodies: [string, string][] = [
    ['payload', '{"step":"approval","payload":{"note":"a\\u0000b"}}'],
    ['payload', '{"step":"approval","payload":{"note":"\\ud800"}}'],
    ['payload', '{"step":"approval","payload":{"\\udfff":1}}'],
    ['payload', `{"step":"approval","payload":${deep(5000)}}`],
    ['payload', '{"step":"approval","payload":{"n":1e400}}'],
    ['key', '{"step":"approval","payload":{},"key":"k\\u0000"}'],
    ['key', '{"step":"approval","payload":{},"key":"\\ud83d"}'],
    ['key', `{"step":"approval","payload":{},"key":"${'k'.repeat(201)}"}`],
    ['step', '{"step":"appro\\u0000val","payload":{}}'],
    ['step', '{"step":"\\udc00","payload":{}}'],
  ];
  for (const [field, text] of bodies) {
    hostile++;
    const r = await call(`/api/runs/${runId}/signal`, {
      method: 'POST',
      bearer: SECRET,
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    assert.deepEqual([r.status, r.body.error, r.body.parameter], [400, 'bad_request', field], text);
  }
  // A body that is not UTF-8 is refused, not decoded into replacement characters.
  for (const bytes of [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80]]) {
    hostile++;
    const body = new Uint8Array([
      ...new TextEncoder().encode('{"step":"approval","payload":"'),
      ...bytes,
      ...new TextEncoder().encode('"}'),
    ]);
    const r = await call(`/api/runs/${runId}/signal`, {
      method: 'POST',
      bearer: SECRET,
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.deepEqual([r.status, r.body.error, r.body.parameter], [400, 'bad_request', 'body']);
    assert.match(String(r.body.message), /UTF-8/);
  }
  // A key over 200 characters is refused by the SQL core too, with the start keys' rule.
  hostile++;
  await assert.rejects(
    db.sql`select switchyard.signal_run(${runId}::uuid, 'approval', '{}'::jsonb,
      ${'k'.repeat(5 * 1024 * 1024)})`,
    (e: { code?: string; detail?: string }) =>
      e.code === '22023' && JSON.parse(e.detail ?? '{}').rule === 'key_length',
  );
  // Nothing used up the step's one signal: a good one is delivered.
  const good = await signal(runId, {
    step: 'approval',
    payload: { ok: true },
    key: 'k'.repeat(200),
  }, {
    bearer: SECRET,
  });
  assert.deepEqual([good.status, good.body.result], [200, { runId, outcome: 'delivered' }]);
});

Deno.test({
  name: 'teardown',
  async fn() {
    console.log(`hostile signal requests sent here: ${hostile}`);
    await server.shutdown();
    await client.close();
    await db.close();
  },
});
