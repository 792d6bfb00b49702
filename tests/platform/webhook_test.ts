/**
 * Signed webhooks over real HTTP against a real database (issue 43,
 * docs/design/ingestion.md#signed-webhooks): `createWebhook` served by `Deno.serve` on a free port.
 * A good delivery starts one run
 * with the body as input; the same delivery id again (and ten copies at once) starts nothing
 * more and answers the same run; bad signatures, late timestamps, oversized bodies (with and
 * without Content-Length), non-JSON bodies, wrong methods and missing delivery ids are refused
 * with their rule and start nothing. `serveWebhook` reads its secret from the named variable.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { createWebhook, defineDeployedFlow, Flow, serveWebhook } from '../../lib/mod.ts';
import { createMemoryPlatform } from '../../lib/platform/platform.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const SECRET = 'whsec-http-0123456789';
const LIMIT = 64 * 1024;

const flow = new Flow<Record<string, unknown>>({ slug: 'ordersHookV1' }).step(
  { slug: 'a' },
  () => 1,
);
const deployed = defineDeployedFlow(flow, { alias: 'orders_hook' });
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(deployed).shape as never)
}::jsonb)`;
await db.sql`select switchyard.sync_alias('orders_hook', array['ordersHookV1'])`;

const logged: string[] = [];
const webhook = createWebhook({
  alias: 'orders_hook',
  secret: SECRET,
  connectionString: db.url,
  maxBodyBytes: LIMIT,
  logger: { warn: (m) => logged.push(m), error: (m) => logged.push(m) },
});
const server = Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen() {} },
  (request) => webhook.fetch(request),
);
const url = `http://127.0.0.1:${server.addr.port}/functions/v1/orders-hook`;

async function runs(): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.runs where flow_slug = 'ordersHookV1'`;
  return n;
}

async function hex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(data));
  return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The t= header for `body`, signed `age` seconds ago. */
async function signed(body: string, { age = 0, secret = SECRET } = {}): Promise<string> {
  const t = Math.floor(Date.now() / 1000) - age;
  return `t=${t},v1=${await hex(secret, `${t}.${body}`)}`;
}

async function deliver(
  body: string,
  headers: Record<string, string>,
  method = 'POST',
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url, { method, headers, body: method === 'GET' ? null : body });
  return { status: response.status, json: await response.json() };
}

Deno.test('a good delivery starts one run with the body as input; its replay starts nothing', async () => {
  const before = await runs();
  const body = JSON.stringify({ order: 1001, total: '12.50' });
  const first = await deliver(body, {
    'webhook-signature': await signed(body),
    'webhook-id': 'evt_1001',
  });
  assert.equal(first.status, 202, JSON.stringify(first.json));
  const runId = first.json.runId as string;
  assert.match(runId, /^[0-9a-f-]{36}$/);
  assert.equal(await runs(), before + 1);
  const [run] = await db.sql<{ input: unknown; status: string }[]>`
    select input, status from switchyard.runs where run_id = ${runId}`;
  assert.deepEqual(run.input, { order: 1001, total: '12.50' });
  assert.equal(run.status, 'started');
  // The sender retries (a fresh timestamp), then an attacker replays the captured request.
  for (const header of [await signed(body), await hex(SECRET, body)]) {
    const again = await deliver(body, { 'webhook-signature': header, 'webhook-id': 'evt_1001' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.json, { runId, duplicate: true });
  }
  // x-delivery-id is the second header read.
  const other = JSON.stringify({ order: 1002 });
  const second = await deliver(other, {
    'webhook-signature': await hex(SECRET, other),
    'x-delivery-id': 'evt_1002',
  });
  assert.equal(second.status, 202);
  assert.notEqual(second.json.runId, runId);
  assert.equal(await runs(), before + 2);
});

Deno.test('ten concurrent copies of one delivery start one run; all answer it', async () => {
  const before = await runs();
  const body = JSON.stringify({ order: 2001 });
  const header = await signed(body);
  const answers = await Promise.all(
    Array.from(
      { length: 10 },
      () => deliver(body, { 'webhook-signature': header, 'webhook-id': 'evt_2001' }),
    ),
  );
  const statuses = answers.map((a) => a.status).sort();
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 202]);
  assert.equal(new Set(answers.map((a) => a.json.runId)).size, 1);
  assert.equal(await runs(), before + 1);
  const [{ keys }] = await db.sql<{ keys: number }[]>`
    select count(*)::int as keys from switchyard.start_keys
     where started_as = 'orders_hook' and key = 'evt_2001' and mode = 'dedupe'`;
  assert.equal(keys, 1);
});

Deno.test('refusals name their rule and start nothing', async () => {
  const before = await runs();
  const body = JSON.stringify({ order: 3001 });
  const refused = async (
    expected: [number, string],
    init: { body?: string; headers?: Record<string, string>; method?: string },
  ) => {
    const answer = await deliver(init.body ?? body, {
      'webhook-id': 'evt_3001',
      ...init.headers,
    }, init.method);
    assert.deepEqual([answer.status, answer.json.error], expected, JSON.stringify(answer.json));
    assert.equal(typeof answer.json.message, 'string');
    return answer.json.message as string;
  };
  await refused([401, 'signature_missing'], {});
  await refused([401, 'signature_mismatch'], {
    headers: { 'webhook-signature': await signed(body, { secret: 'wrong' }) },
  });
  await refused([401, 'signature_mismatch'], {
    body: JSON.stringify({ order: 3001, total: 'changed' }),
    headers: { 'webhook-signature': await signed(body) },
  });
  await refused([401, 'signature_malformed'], { headers: { 'webhook-signature': 't=1,v1=zz' } });
  const late = await refused([401, 'timestamp_outside_tolerance'], {
    headers: { 'webhook-signature': await signed(body, { age: 600 }) },
  });
  assert.match(late, /at most 300 s/);
  await refused([401, 'timestamp_outside_tolerance'], {
    headers: { 'webhook-signature': await signed(body, { age: -600 }) },
  });
  await refused([400, 'body_not_json'], {
    body: 'order=3001',
    headers: { 'webhook-signature': await signed('order=3001') },
  });
  await refused([400, 'delivery_id_invalid'], {
    headers: { 'webhook-signature': await signed(body), 'webhook-id': '' },
  });
  const noId = await fetch(url, {
    method: 'POST',
    headers: { 'webhook-signature': await signed(body) },
    body,
  });
  assert.equal(noId.status, 400);
  assert.equal((await noId.json()).error, 'delivery_id_missing');
  await refused([400, 'delivery_id_invalid'], {
    headers: { 'webhook-signature': await signed(body), 'webhook-id': 'x'.repeat(201) },
  });
  const get = await fetch(url);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.equal((await get.json()).error, 'method_not_allowed');
  const big = JSON.stringify({ pad: 'x'.repeat(LIMIT) });
  await refused([413, 'body_too_large'], {
    body: big,
    headers: { 'webhook-signature': await signed(big) },
  });
  assert.equal(await runs(), before, 'no refusal started a run');
  assert.ok(logged.some((m) => m.includes('timestamp_outside_tolerance')), logged.join('\n'));
});

Deno.test('an oversized body without Content-Length is refused at the limit, not read to its end', async () => {
  const before = await runs();
  const chunk = new Uint8Array(16 * 1024).fill(0x20);
  let sent = 0;
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  // A sender that streams past the limit and then holds its body open until the answer came:
  // the answer must come from the bound alone.
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent > LIMIT) {
        await released;
        controller.close();
        return;
      }
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  const body = '';
  const response = await within(
    20_000,
    'the 413 of a body that never ends',
    fetch(url, {
      method: 'POST',
      headers: { 'webhook-signature': await signed(body), 'webhook-id': 'evt_4001' },
      body: stream,
    }),
  );
  assert.equal(response.status, 413);
  assert.equal((await response.json()).error, 'body_too_large');
  assert.ok(sent <= LIMIT + 2 * chunk.byteLength, `read ${sent} bytes`);
  release();
  assert.equal(await runs(), before);
});

Deno.test('a failed start answers 500 and leaves no key; an input mapping refuses with 400', async () => {
  const errors: string[] = [];
  const unknown = createWebhook({
    alias: 'no_such_alias',
    secret: SECRET,
    source: db.sql,
    logger: { warn: (m) => errors.push(m), error: (m) => errors.push(m) },
  });
  const body = JSON.stringify({ order: 5001 });
  const response = await unknown.fetch(
    new Request(url, {
      method: 'POST',
      headers: { 'webhook-signature': await signed(body), 'webhook-id': 'evt_5001' },
      body,
    }),
  );
  assert.equal(response.status, 500);
  const json = await response.json();
  assert.equal(json.error, 'start_failed');
  assert.match(json.message, /no_such_alias/);
  assert.match(errors.join('\n'), /the start failed/);
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.start_keys where key = 'evt_5001'`;
  assert.equal(n, 0, 'the rolled back start left no key');
  const mapped = createWebhook({
    alias: 'orders_hook',
    secret: SECRET,
    source: db.sql,
    input: (payload) => {
      const order = (payload as { order?: unknown }).order;
      if (typeof order !== 'number') throw new Error('order must be a number');
      return { order, source: 'webhook' };
    },
  });
  const before = await runs();
  const bad = JSON.stringify({ order: 'x' });
  const refused = await mapped.fetch(
    new Request(url, {
      method: 'POST',
      headers: { 'webhook-signature': await signed(bad), 'webhook-id': 'evt_5002' },
      body: bad,
    }),
  );
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).error, 'input_refused');
  const good = await mapped.fetch(
    new Request(url, {
      method: 'POST',
      headers: { 'webhook-signature': await signed(body), 'webhook-id': 'evt_5003' },
      body,
    }),
  );
  assert.equal(good.status, 202);
  const [run] = await db.sql<{ input: unknown }[]>`
    select input from switchyard.runs where run_id = ${(await good.json()).runId}`;
  assert.deepEqual(run.input, { order: 5001, source: 'webhook' });
  assert.equal(await runs(), before + 1);
});

Deno.test('serveWebhook reads the secret from secretEnv and the database from the environment', async () => {
  const platform = createMemoryPlatform({ DATABASE_URL: db.url });
  const errors: string[] = [];
  serveWebhook({
    alias: 'orders_hook',
    secretEnv: 'ORDERS_HOOK_SECRET',
    platform,
    logger: { warn: (m) => errors.push(m), error: (m) => errors.push(m) },
  });
  const body = JSON.stringify({ order: 6001 });
  const post = async () =>
    await platform.fetch(url, {
      method: 'POST',
      headers: { 'webhook-signature': await signed(body), 'webhook-id': 'evt_6001' },
      body,
    });
  const unset = await post();
  assert.equal(unset.status, 500);
  const json = await unset.json();
  assert.equal(json.error, 'webhook_config');
  assert.match(json.message, /ORDERS_HOOK_SECRET/);
  assert.deepEqual(errors, ['webhook orders_hook: no shared secret: set ORDERS_HOOK_SECRET']);
  platform.vars.ORDERS_HOOK_SECRET = SECRET;
  const before = await runs();
  assert.equal((await post()).status, 202);
  assert.equal((await post()).status, 200);
  assert.equal(await runs(), before + 1);
  await platform.unload();
});

Deno.test('teardown', async () => {
  await server.shutdown();
  await webhook.close();
  await db.close();
});
