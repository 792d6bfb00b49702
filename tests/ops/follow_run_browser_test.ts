/**
 * Following a run from a browser (issue 26, docs/design/observability.md): a plain
 * `<script type="module">` page in headless chromium imports lib/browser.js as it is and follows
 * a run over server-sent events from `createRunEventStream` (mounted in a server of its own, as
 * in an Edge Function) while a real worker's handler reports 100 progress events; the test drops
 * the connection mid-run (and the resumed stream repeats 5 events), and every event arrives
 * once, in order, equal to the database's. The
 * endpoint's authorization: no bearer is 401, a user's JWT follows that user's run and not
 * another user's (404, as an unknown run), a forged or expired JWT is 401; the dashboard's
 * `api/runs/<id>/events` with `required` access does the same.
 */
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { createRunEventStream } from '../../lib/mod.ts';
import { createDashboard, runEvents } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { serveWithTimeouts } from '../../cli/_http_server.ts';
import { startChromium } from '../_helpers/chromium.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const SECRET = 'follow-run-test-secret';
const JWT_SECRET = 'follow-run-test-jwt-secret-of-at-least-32-chars';
const BROWSER_JS = new URL('../../lib/browser.js', import.meta.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const PROGRESS = 100;

function base64Url(bytes: Uint8Array | string): string {
  const b = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes;
  return btoa(String.fromCharCode(...b)).replaceAll('+', '-').replaceAll('/', '_').replace(
    /=+$/,
    '',
  );
}

/** A Supabase-style access token (HS256) for `sub`. */
async function userJwt(sub: string, { secret = JWT_SECRET, expiresIn = 3600 } = {}) {
  const head = base64Url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const claims = base64Url(
    JSON.stringify({ sub, role: 'authenticated', exp: Math.floor(Date.now() / 1000) + expiresIn }),
  );
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const signature = await crypto.subtle.sign(
    'HMAC',
    key,
    new TextEncoder().encode(`${head}.${claims}`),
  );
  return `${head}.${claims}.${base64Url(new Uint8Array(signature))}`;
}

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>follow</title></head><body>
<script type="module">
  import { followRun } from '/browser.js';
  const p = new URLSearchParams(location.hash.slice(1));
  const run = p.get('run');
  window.followed = [];
  window.statuses = [];
  const following = followRun(run, {
    url: '/runs/' + run + '/events',
    token: p.get('token'),
    retryMs: 100,
    onEvent: (e) => window.followed.push(e),
    onStatus: (s) => window.statuses.push(s),
  });
  following.done.then((cursor) => (window.ended = cursor), (e) => (window.failed = String(e)));
</script>
</body></html>`;

/**
 * The page, lib/browser.js and the run event stream on one origin. `drop()` breaks every open
 * stream mid-response, as a lost connection does; a resumed stream starts 5 events early.
 */
function serveFollowPage(source: Parameters<typeof createRunEventStream>[0]['source']) {
  const events = createRunEventStream({
    source,
    auth: { secrets: [SECRET] },
    jwtSecret: JWT_SECRET,
    keepAliveMs: 1000,
  });
  const open = new Set<TransformStreamDefaultController<Uint8Array>>();
  const requests: string[] = [];
  const port = freePort();
  const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === '/') {
      return new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } });
    }
    if (url.pathname === '/browser.js') {
      return new Response(await Deno.readTextFile(BROWSER_JS), {
        headers: { 'content-type': 'text/javascript; charset=utf-8' },
      });
    }
    if (!url.pathname.startsWith('/runs/')) return new Response('not found', { status: 404 });
    requests.push(url.search);
    // A resuming request is answered from 5 events earlier, as a replaying proxy or a
    // Realtime backlog overlapping its subscription would: the page must drop the repeats.
    const after = Number(url.searchParams.get('after') ?? 0);
    if (after > 0) url.searchParams.set('after', String(Math.max(0, after - 5)));
    const response = await events.fetch(new Request(url, { headers: req.headers }));
    if (!response.body) return response;
    let controller!: TransformStreamDefaultController<Uint8Array>;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        start: (c) => void (controller = c, open.add(c)),
        flush: () => void open.delete(controller),
      }),
    );
    return new Response(body, { status: response.status, headers: response.headers });
  });
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    drop() {
      const n = open.size;
      for (const c of open) c.error(new Error('connection dropped by the test'));
      open.clear();
      return n;
    },
    async close() {
      this.drop();
      await events.close();
      await server.shutdown();
    },
  };
}

Deno.test({
  name:
    'a page follows 100 progress events over SSE through a dropped connection: each once, in order',
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cleanups: (() => Promise<unknown>)[] = [];
    const problems: string[] = [];
    try {
      const browserProcess = await startChromium();
      cleanups.push(() => browserProcess.stop());
      const db = await createTestDatabase();
      cleanups.push(() => db.close());
      const client = untypedClient(db.url);
      cleanups.push(() => client.close());

      let openGate!: () => void, openSecondGate!: () => void, openThirdGate!: () => void;
      const gate = new Promise<void>((r) => (openGate = r));
      const secondGate = new Promise<void>((r) => (openSecondGate = r));
      const thirdGate = new Promise<void>((r) => (openThirdGate = r));
      const flow = new Flow<{ n: number }>({ slug: 'followProgressV1' })
        .step({ slug: 'work' }, async (input, ctx) => {
          await within(60_000, 'the page to follow', gate);
          for (let i = 1; i <= input.n; i++) {
            // Held at 60 until the dashboard shows the run (its live update comes after).
            if (i === 61) await within(60_000, 'the dashboard to show the run', secondGate);
            // Held at 70 until the dashboard showed a later one: the stream moved it, not its end.
            if (i === 71) await within(60_000, 'the dashboard to move live', thirdGate);
            await ctx.progress({ i });
            // Paced under progress_per_second (20 per task per second).
            await new Promise((r) => setTimeout(r, 55));
          }
          return { reported: input.n };
        })
        .step({ slug: 'wrap', dependsOn: ['work'] }, () => 'done');
      await db.sql`select switchyard.ensure_flow(${
        db.sql.json(toPlacement(flow).shape as never)
      }::jsonb)`;
      const worker = await startWorker(flow, { connectionString: db.url, ...FAST, logger: SILENT });
      cleanups.push(() => worker.stop());
      const alice = crypto.randomUUID();
      const [{ id: runId }] = await db.sql<{ id: string }[]>`
        select switchyard.start_flow('followProgressV1', ${
        db.sql.json({ n: PROGRESS } as never)
      }::jsonb, null,
          ${alice}::uuid) as id`;

      const site = serveFollowPage(client);
      cleanups.push(() => site.close());
      const browser = await chromium.connectOverCDP(browserProcess.cdp);
      cleanups.push(() => browser.close().catch(() => {}));
      const context = await browser.newContext();
      const page = await context.newPage();
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      // The signed-in user's own token, as a Supabase page would pass it.
      await page.goto(`${site.url}#run=${runId}&token=${await userJwt(alice)}`);
      await page.waitForFunction(() =>
        (globalThis as unknown as { statuses?: string[] }).statuses?.includes('live')
      );
      openGate();

      // Mid-run: once 40 progress events are committed, break the stream.
      await waitFor('40 progress events', async () => {
        const [{ n }] = await db.sql`select count(*)::int as n from switchyard.run_events
          where run_id = ${runId} and event = 'progress'`;
        return n >= 40;
      }, { timeoutMs: 60_000, intervalMs: 20 });
      assert.equal(site.drop(), 1, 'one stream was open');

      // The dashboard's timeline of the open run shows its latest progress, and then moves
      // live: the page refreshes only every 10 minutes here, so only the stream can move it.
      // Served by the server of `deno task dashboard`, which writes the stream as it comes.
      const dashboard = createDashboard({
        source: client,
        env: () => undefined,
        refreshMs: 600_000,
      });
      const dashServer = await serveWithTimeouts(dashboard.fetch, { port: 0 });
      const dashPort = dashServer.port;
      cleanups.push(async () => {
        await dashboard.close();
        await dashServer.shutdown();
      });
      await waitFor('the handler to hold at 60', async () => {
        const [{ n }] = await db.sql`select count(*)::int as n from switchyard.run_events
          where run_id = ${runId} and event = 'progress'`;
        return n === 60;
      }, { timeoutMs: 60_000, intervalMs: 20 });
      const dash = await context.newPage();
      dash.on('pageerror', (e) => problems.push(`dashboard page error: ${e.message}`));
      await dash.goto(`http://127.0.0.1:${dashPort}/`);
      await dash.waitForSelector('body[data-loaded="1"]');
      await dash.click(`tr.run[data-run="${runId}"]`);
      const line = dash.locator(`[data-progress-of="${runId}"][data-step="work"]`);
      await line.waitFor({ timeout: 30_000 });
      assert.match(await line.innerText(), /^work \{"i":60\}/);
      const shownFirst = Number(await line.getAttribute('data-event-id'));
      openSecondGate();
      await waitFor(
        'the timeline to show a later progress event live',
        async () => Number(await line.getAttribute('data-event-id')) > shownFirst + 5,
        { timeoutMs: 30_000 },
      );
      const shown = await line.innerText();
      assert.match(shown, /^work \{"i":(6[6-9]|70)\}/, `shown: ${shown}`);
      assert.equal(
        await dash.locator(`[data-progress-head="${runId}"]`).innerText(),
        'PROGRESS · LIVE',
      );
      openThirdGate();

      await page.waitForFunction(
        () => {
          const w = globalThis as unknown as { ended?: number; failed?: string };
          return w.ended !== undefined || w.failed !== undefined;
        },
        undefined,
        { timeout: 60_000 },
      );
      const seen = await page.evaluate(() => {
        const w = globalThis as unknown as {
          followed: { eventId: number; stepSlug: string | null; event: string; data?: unknown }[];
          statuses: string[];
          ended?: number;
          failed?: string;
        };
        return { followed: w.followed, statuses: w.statuses, ended: w.ended, failed: w.failed };
      });
      assert.equal(seen.failed, undefined);
      const stored = await runEvents(client, runId);
      assert.equal(stored.at(-1)?.event, 'completed');
      // Every event once, in order: exactly the database's list.
      assert.deepEqual(
        seen.followed.map((e) => e.eventId),
        stored.map((e) => e.eventId),
      );
      assert.deepEqual(
        seen.followed.filter((e) => e.event === 'progress').map((e) => e.data),
        Array.from({ length: PROGRESS }, (_, k) => ({ i: k + 1 })),
      );
      assert.deepEqual(
        seen.followed.filter((e) => e.event !== 'progress').map((e) =>
          `${e.stepSlug ?? 'run'} ${e.event}`
        ),
        [
          'run started',
          'work started',
          'work completed',
          'wrap started',
          'wrap completed',
          'run completed',
        ],
      );
      assert.equal(seen.ended, stored.at(-1)?.eventId);
      assert.ok(seen.statuses.includes('reconnecting'), seen.statuses.join(' '));
      // The second connection resumed from the cursor, past the events already delivered.
      assert.ok(site.requests.length >= 2, site.requests.join(' '));
      assert.equal(site.requests[0], '?after=0');
      const resumedAt = Number(new URLSearchParams(site.requests[1]).get('after'));
      assert.ok(resumedAt > 0, site.requests.join(' '));
      assert.deepEqual(problems, []);
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    }
  },
});

interface Frame {
  eventId: number;
  event: string;
  stepSlug: string | null;
}

/** The run's own last event. */
const runEnd = (e: Frame) => e.event === 'completed' && e.stepSlug === null;

/** The SSE `data:` frames of a response, until `until` matches one (or the stream ends). */
async function readFrames(response: Response, until: (e: Frame) => boolean) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const frames: Frame[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      let at;
      while ((at = text.indexOf('\n\n')) >= 0) {
        const frame = text.slice(0, at);
        text = text.slice(at + 2);
        const data = frame.split('\n').find((l) => l.startsWith('data: '));
        if (!data) continue;
        const e = JSON.parse(data.slice(6));
        frames.push(e);
        if (until(e)) return frames;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return frames;
}

Deno.test("the event stream follows a user's own run only: 401 without a token, 404 for another user's", async () => {
  const db = await createTestDatabase();
  const client = untypedClient(db.url);
  const site = serveFollowPage(client);
  try {
    const flow = new Flow<Record<string, never>>({ slug: 'followAuthV1' })
      .step({ slug: 'only' }, async (_input, ctx) => {
        await ctx.progress({ half: true });
        return null;
      });
    await db.sql`select switchyard.ensure_flow(${
      db.sql.json(toPlacement(flow).shape as never)
    }::jsonb)`;
    const alice = crypto.randomUUID(), bob = crypto.randomUUID();
    const start = async (owner: string) =>
      (await db.sql<{ id: string }[]>`select switchyard.start_flow('followAuthV1', '{}'::jsonb,
        null, ${owner}::uuid) as id`)[0].id;
    const aliceRun = await start(alice), bobRun = await start(bob);
    const worker = await startWorker(flow, { connectionString: db.url, ...FAST, logger: SILENT });
    try {
      for (const id of [aliceRun, bobRun]) await within(30_000, 'runs', client.waitForRun(id));
    } finally {
      await worker.stop();
    }
    const follow = (run: string, token?: string, at = site.url) =>
      fetch(`${at}runs/${run}/events`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    const status = async (r: Promise<Response>) => {
      const response = await r;
      await response.body?.cancel();
      return response.status;
    };
    assert.equal(await status(follow(aliceRun)), 401);
    assert.equal(await status(follow(aliceRun, 'not-the-secret')), 401);
    assert.equal(await status(follow(bobRun, await userJwt(alice))), 404, "bob's run is hidden");
    assert.equal(await status(follow(crypto.randomUUID(), await userJwt(alice))), 404);
    assert.equal(await status(follow(aliceRun, await userJwt(alice, { secret: 'forged' }))), 401);
    assert.equal(await status(follow(aliceRun, await userJwt(alice, { expiresIn: -10 }))), 401);
    const own = await follow(aliceRun, await userJwt(alice));
    assert.equal(own.status, 200);
    assert.match(own.headers.get('content-type') ?? '', /^text\/event-stream/);
    const frames = await readFrames(own, runEnd);
    assert.deepEqual(frames.map((e) => `${e.stepSlug ?? 'run'} ${e.event}`), [
      'run started',
      'only started',
      'only progress',
      'only completed',
      'run completed',
    ]);
    // Without a JWT secret a user's token is refused, saying what to set.
    const noSecret = createRunEventStream({
      source: client,
      auth: { secrets: [SECRET] },
      env: () => undefined,
    });
    try {
      const refused = await noSecret.stream(
        new Request('http://127.0.0.1/', {
          headers: { authorization: `Bearer ${await userJwt(alice)}` },
        }),
        aliceRun,
      );
      assert.equal(refused.status, 401);
      assert.match((await refused.json()).message, /set SWITCHYARD_JWT_SECRET/);
    } finally {
      await noSecret.close();
    }
    // The bearer follows any run, from a cursor.
    const fromCursor = await follow(bobRun, SECRET);
    const bobFrames = await readFrames(fromCursor, runEnd);
    assert.equal(bobFrames.length, 5);

    // The dashboard's route, with required access: the same rules.
    const dashboard = createDashboard({
      source: client,
      access: 'required',
      env: (n) => (n === 'SWITCHYARD_WORKER_SECRET' ? SECRET : undefined),
      jwtSecret: JWT_SECRET,
    });
    try {
      const at = 'http://127.0.0.1/api/';
      const ask = async (run: string, token?: string) => {
        const r = await dashboard.fetch(
          new Request(`${at}runs/${run}/events`, {
            headers: token ? { authorization: `Bearer ${token}` } : {},
          }),
        );
        return r;
      };
      assert.equal(await status(ask(aliceRun)), 401);
      assert.equal(await status(ask(bobRun, await userJwt(alice))), 404);
      const mine = await ask(aliceRun, await userJwt(alice));
      assert.equal(mine.status, 200);
      assert.equal((await readFrames(mine, runEnd)).length, 5);
      const after = frames[2].eventId;
      const rest = await dashboard.fetch(
        new Request(`${at}runs/${aliceRun}/events`, {
          headers: { authorization: `Bearer ${SECRET}`, 'last-event-id': String(after) },
        }),
      );
      assert.deepEqual(
        (await readFrames(rest, runEnd)).map((e) => e.eventId),
        frames.slice(3).map((e) => e.eventId),
        'Last-Event-ID resumes after it',
      );
    } finally {
      await dashboard.close();
    }
  } finally {
    await site.close();
    await client.close();
    await db.close();
  }
});
