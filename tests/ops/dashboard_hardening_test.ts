/**
 * Hardening, second round (issue 21): the dashboard over raw HTTP, as `deno task dashboard`
 * serves it (the real command in a child process, so its server and its timeouts are the ones
 * tested). Each test names the item it guards; each failed before its fix.
 *
 * @module
 */
import assert from 'node:assert/strict';
import { createDashboard } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { canConnect } from '../../cli/_util.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { waitFor } from '../_helpers/wait.ts';
import { spawnDeno } from '../_helpers/process.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const SECRET = 'dashboard-hardening-secret';
const db = await createTestDatabase();
const client = untypedClient(db.url);
await db.sql`select switchyard.ensure_shared_queue('hardened_q')`;
await db.sql`select switchyard.register_function('hardened-worker', 'hardened_q')`;

/** The hostile requests this file sends, counted as they are sent (reported at the end). */
let hostile = 0;

/** `deno task dashboard` (same permissions as the task) on a free port until `stop()`. */
async function startDashboard(env: Record<string, string>) {
  const port = freePort();
  const child = spawnDeno(
    [
      'run',
      '--allow-env',
      '--allow-net',
      '--allow-read',
      'cli/dashboard.ts',
      '--port',
      String(port),
    ],
    { cwd: ROOT, env: { SWITCHYARD_WORKER_SECRET: SECRET, ...env } },
  );
  await waitFor('deno task dashboard to listen', async () => {
    if (child.exited) throw new Error(`deno task dashboard exited: ${child.output}`);
    return await canConnect(port);
  }, { timeoutMs: 60_000, intervalMs: 100 });
  return {
    port,
    async stop() {
      const out = await child.stop('SIGTERM');
      return `${out.stdout}\n${out.stderr}`;
    },
  };
}

/** One raw HTTP/1.1 exchange: the bytes as given, the answer until the server closes. */
async function raw(
  port: number,
  request: string | Uint8Array,
): Promise<{ status: number; head: string; body: string }> {
  const conn = await Deno.connect({ hostname: '127.0.0.1', port });
  try {
    await conn.write(typeof request === 'string' ? new TextEncoder().encode(request) : request);
    const text = await new Response(conn.readable).text();
    const [head, ...rest] = text.split('\r\n\r\n');
    return { status: Number(head.split(' ')[1]), head, body: rest.join('\r\n\r\n') };
  } catch (e) {
    try {
      conn.close();
    } catch { /* closed already */ }
    throw e;
  }
}

function request(
  method: string,
  target: string,
  headers: Record<string, string>,
  body = '',
): string {
  const lines = [`${method} ${target} HTTP/1.1`, 'connection: close'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body) lines.push(`content-length: ${new TextEncoder().encode(body).length}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

async function pausedAt(): Promise<Date | null> {
  const [row] = await db.sql`select paused_at from switchyard.worker_functions
    where function_name = 'hardened-worker'`;
  return row.paused_at;
}

Deno.test('item 1: DNS rebinding: another Host, an absolute-form target or a foreign Origin gets 421/403 and changes nothing', async () => {
  // Auth disabled: the worst case, where a rebinding page could act if it got through.
  const dashboard = await startDashboard({ DATABASE_URL: db.url, SWITCHYARD_AUTH: 'disabled' });
  try {
    const p = dashboard.port;
    const ok = await raw(p, request('GET', '/api/overview', { host: `127.0.0.1:${p}` }));
    assert.equal(ok.status, 200, ok.body);
    assert.equal((await raw(p, request('GET', '/', { host: `localhost:${p}` }))).status, 200);
    const attacks: [string, string][] = [
      [
        'GET /api/overview, Host evil',
        request('GET', '/api/overview', {
          host: `evil.example:${p}`,
          origin: `http://evil.example:${p}`,
        }),
      ],
      ['GET the page, Host evil', request('GET', '/', { host: `evil.example:${p}` })],
      [
        'GET a run, Host evil',
        request('GET', `/api/runs/${crypto.randomUUID()}`, { host: `evil.example:${p}` }),
      ],
      [
        'absolute-form target',
        request('GET', `http://evil.example:${p}/api/overview`, { host: `127.0.0.1:${p}` }),
      ],
      [
        'absolute-form, both evil',
        request('GET', `http://evil.example:${p}/api/overview`, { host: `evil.example:${p}` }),
      ],
      [
        'Host with a trailing dot name',
        request('GET', '/api/overview', { host: `127.0.0.1.evil.example:${p}` }),
      ],
      [
        'POST pause, Host and Origin evil',
        request('POST', '/api/functions/hardened-worker/pause', {
          host: `evil.example:${p}`,
          origin: `http://evil.example:${p}`,
          'content-type': 'application/json',
        }, '{"reason":"rebound"}'),
      ],
    ];
    for (const [what, text] of attacks) {
      hostile++;
      const r = await raw(p, text);
      assert.equal(r.status, 421, `${what}: ${r.status} ${r.body}`);
      const body = JSON.parse(r.body);
      assert.equal(body.error, 'misdirected_request', what);
      assert.match(
        body.message,
        /is not one this dashboard is served as \(127\.0\.0\.1, localhost, \[::1\]\)/,
        what,
      );
      assert.doesNotMatch(r.body, /hardened/, `${what}: nothing of the database in the answer`);
    }
    // The right Host with a foreign Origin: 403.
    hostile++;
    const cross = await raw(
      p,
      request('POST', '/api/functions/hardened-worker/pause', {
        host: `127.0.0.1:${p}`,
        origin: `http://evil.example:${p}`,
        'content-type': 'application/json',
      }, '{}'),
    );
    assert.equal(cross.status, 403, cross.body);
    assert.equal(await pausedAt(), null, 'nothing paused');
  } finally {
    await dashboard.stop();
  }
});

Deno.test('items 4, 5, 7: NUL reasons, oversized bodies and half-open connections', async () => {
  const dashboard = await startDashboard({ DATABASE_URL: db.url });
  const p = dashboard.port;
  const auth = {
    host: `127.0.0.1:${p}`,
    authorization: `Bearer ${SECRET}`,
    'content-type': 'application/json',
  };
  try {
    // Item 7 first, in the background: sockets that send a partial head, or nothing, are closed.
    const started = Date.now();
    const slow = Array.from({ length: 20 }, async (_, i) => {
      hostile++;
      const conn = await Deno.connect({ hostname: '127.0.0.1', port: p });
      if (i % 2 === 0) {
        await conn.write(
          new TextEncoder().encode(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-a: `),
        );
      }
      const buf = new Uint8Array(64);
      const timer = setTimeout(() => conn.close(), 25_000); // the test's own bound
      try {
        const n = await conn.read(buf).catch(() => null);
        return {
          closed: n === null || n === 0 || Date.now() - started < 25_000,
          ms: Date.now() - started,
        };
      } finally {
        clearTimeout(timer);
        try {
          conn.close();
        } catch { /* closed */ }
      }
    });

    // Item 4: NUL in a reason, pause and cancel.
    for (
      const [target, what] of [['/api/functions/hardened-worker/pause', 'pause'], [
        `/api/runs/${crypto.randomUUID()}/cancel`,
        'cancel',
      ]]
    ) {
      hostile++;
      const r = await raw(p, request('POST', target, auth, '{"reason":"stop\\u0000now"}'));
      assert.equal(r.status, 400, `${what}: ${r.body}`);
      const body = JSON.parse(r.body);
      assert.equal(body.parameter, 'reason', what);
      assert.match(body.message, /field "reason" is invalid: it contains a NUL character/, what);
    }
    assert.equal(await pausedAt(), null);

    // Item 5: a declared size over the limit is refused before the body is read.
    hostile++;
    const declared = await raw(
      p,
      [
        'POST /api/functions/hardened-worker/pause HTTP/1.1',
        ...Object.entries(auth).map(([k, v]) => `${k}: ${v}`),
        `content-length: ${200 * 1024 * 1024}`,
        '',
        '{"reason":"',
      ].join('\r\n'),
    );
    assert.equal(declared.status, 413, declared.body);
    assert.match(
      JSON.parse(declared.body).message,
      /the body is 209715200 bytes, over the limit of 16384 bytes/,
    );
    // An actual size over the limit (chunked, no length): refused once 16 KiB have arrived,
    // while the client still sends.
    hostile++;
    const conn = await Deno.connect({ hostname: '127.0.0.1', port: p });
    const head = [
      'POST /api/runs/' + crypto.randomUUID() + '/cancel HTTP/1.1',
      ...Object.entries(auth).map(([k, v]) => `${k}: ${v}`),
      'transfer-encoding: chunked',
      '',
      '',
    ].join('\r\n');
    await conn.write(new TextEncoder().encode(head));
    const answer = new Response(conn.readable).text();
    let sent = 0;
    const chunk = `${(4096).toString(16)}\r\n${'a'.repeat(4096)}\r\n`;
    let answered = false;
    answer.then(() => (answered = true), () => (answered = true));
    for (let i = 0; i < 2000 && !answered; i++) { // at most 8 MiB
      const ok = await conn.write(new TextEncoder().encode(chunk)).then(() => true, () => false);
      if (!ok) break;
      sent += 4096;
      if (i % 8 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 413/, text.slice(0, 200));
    assert.match(text, /more than 16384 bytes/);
    assert.ok(sent < 4 * 1024 * 1024, `the server read on: ${sent} bytes sent before the answer`);

    const results = await Promise.all(slow);
    for (const r of results) {
      assert.ok(r.closed && r.ms < 20_000, `a half-open socket stayed open ${r.ms} ms`);
    }
  } finally {
    await dashboard.stop();
  }
});

Deno.test("item 6: the database's own words only with the bearer", async () => {
  // A server that is not there, through the real command.
  const dashboard = await startDashboard({
    DATABASE_URL: 'postgres://postgres:hunter2@127.0.0.1:1/app',
  });
  try {
    const p = dashboard.port;
    hostile++;
    const anonymous = await raw(p, request('GET', '/api/overview', { host: `127.0.0.1:${p}` }));
    assert.equal(anonymous.status, 503);
    assert.doesNotMatch(anonymous.body, /ECONNREFUSED|127\.0\.0\.1:1|hunter2/);
    assert.match(
      JSON.parse(anonymous.body).message,
      /the database refused or is unreachable: its words are shown with the bearer/,
    );
    const authorized = await raw(
      p,
      request('GET', '/api/overview', {
        host: `127.0.0.1:${p}`,
        authorization: `Bearer ${SECRET}`,
      }),
    );
    assert.equal(authorized.status, 503);
    const message = JSON.parse(authorized.body).message;
    assert.match(
      message,
      /cannot use the database at 127\.0\.0\.1:1 \(connection string from DATABASE_URL\): .*ECONNREFUSED/,
    );
    assert.doesNotMatch(message, /hunter2/);
  } finally {
    const log = await dashboard.stop();
    assert.match(
      log,
      /dashboard: GET \/api\/overview: .*ECONNREFUSED/,
      'the operator sees it in the log',
    );
  }
  // A role that does not exist, and a database without the SQL core, in process.
  const u = new URL(db.url);
  u.username = 'nosuchuser';
  const wrong = untypedClient(u.toString());
  const env = (n: string) => (n === 'SWITCHYARD_WORKER_SECRET' ? SECRET : undefined);
  const errors = console.error;
  console.error = () => {};
  try {
    const d = createDashboard({ source: wrong, env });
    hostile++;
    const r = await d.fetch(new Request('http://127.0.0.1/api/runs'));
    assert.equal(r.status, 503);
    assert.doesNotMatch(await r.text(), /nosuchuser/);
    const a = await d.fetch(
      new Request('http://127.0.0.1/api/runs', { headers: { authorization: `Bearer ${SECRET}` } }),
    );
    assert.match((await a.json()).message, /nosuchuser/);
  } finally {
    console.error = errors;
    await wrong.close();
  }
});

Deno.test('teardown', async () => {
  console.log(`hostile requests sent here: ${hostile}`);
  await client.close();
  await db.close();
});
