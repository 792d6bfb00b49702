/**
 * The run event stream over real HTTP (issue 36, docs/design/observability.md), served as an Edge
 * Function serves it (`Deno.serve`) and as `deno task dashboard` does (`serveWithTimeouts`):
 *
 * - a client that never reads costs the server a bounded number of events, however long the
 *   run's history: the stream reads the next page only when its reader asks for more (the
 *   count is of the events the server read from the database, through a counting source);
 * - a client that reads gets the stream's end right after the run's own `completed`, `failed`
 *   or `cancelled` event (the body finishes), and one that resumes after that end gets 204
 *   (an EventSource stops there instead of reconnecting);
 * - `SWITCHYARD_AUTH=disabled` does not open the stream on the hosted runtime.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow } from '../../lib/mod.ts';
import { createRunEventStream } from '../../lib/mod.ts';
import { cancelRun, createDashboard, runEvents } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import type { Sql } from '../../lib/sql/connection.ts';
import { freePort } from '../../cli/_util.ts';
import { serveWithTimeouts } from '../../cli/_http_server.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { waitFor, within } from '../_helpers/wait.ts';

const SECRET = 'run-event-stream-test-secret';
const EVENTS = 2000;
/** 16 KiB of JSON per progress event: the history is about 32 MiB. */
const DATA_CHARS = 16_000;

/** The hostile clients and requests this file sends, counted as they are sent. */
let hostile = 0;

const db = await createTestDatabase();
const client = untypedClient(db.url);
const flow = new Flow<Record<string, never>>({ slug: 'streamEndV1' })
  .step({ slug: 'work' }, () => null);
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(flow).shape as never)
}::jsonb)`;

/** A started run (no worker: it stays started) with `progress` events of 16 KiB each. */
async function runWithHistory(progress: number): Promise<string> {
  const runId = await client.startFlow('streamEndV1', {});
  await db.sql`insert into switchyard.run_events
      (run_id, owner, flow_slug, step_slug, event, task_index, data)
    select ${runId}::uuid, null, 'streamEndV1', 'work', 'progress', 0,
           jsonb_build_object('i', i, 'pad', repeat('x', ${DATA_CHARS}::int))
      from generate_series(1, ${progress}::int) i`;
  return runId;
}

/**
 * The test's client on a source that counts the run events the stream reads from the database
 * (every row of the stream's `run_events` query): the database is real, only counted.
 */
function countingSource(sql: Sql): { source: Sql; read: () => number } {
  let read = 0;
  const source = new Proxy(sql, {
    apply(target, self, args) {
      const query = Reflect.apply(target, self, args);
      const strings = args[0] as TemplateStringsArray | undefined;
      if (!Array.isArray(strings) || !strings.join('').includes('from switchyard.run_events e')) {
        return query;
      }
      return (query as Promise<unknown[]>).then((rows) => {
        read += rows.length;
        return rows;
      });
    },
  });
  return { source, read: () => read };
}

/** Both servers of the stream: as an Edge Function serves it, and as the dashboard does. */
async function serveBoth(source: Sql, dashboardSource: Sql = source) {
  const events = createRunEventStream({
    source,
    auth: { secrets: [SECRET] },
    env: () => undefined,
    keepAliveMs: 500,
  });
  const edgePort = freePort();
  const edge = Deno.serve(
    { hostname: '127.0.0.1', port: edgePort, onListen: () => {} },
    (r) => events.fetch(r),
  );
  const dashboard = createDashboard({
    source: dashboardSource,
    access: 'required',
    env: (n) => (n === 'SWITCHYARD_WORKER_SECRET' ? SECRET : undefined),
    refreshMs: 600_000,
  });
  const dash = await serveWithTimeouts(dashboard.fetch, { port: 0 });
  return {
    edge: (runId: string) => `http://127.0.0.1:${edgePort}/runs/${runId}/events`,
    dashboard: (runId: string) => `http://127.0.0.1:${dash.port}/api/runs/${runId}/events`,
    async close() {
      await events.close();
      await dashboard.close();
      await edge.shutdown();
      await dash.shutdown();
    },
  };
}

/** Opens a stream over a raw socket and never reads a byte of the answer. */
async function neverRead(url: string): Promise<Deno.TcpConn> {
  const u = new URL(url);
  const conn = await Deno.connect({ hostname: u.hostname, port: Number(u.port) });
  const head = `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n` +
    `Authorization: Bearer ${SECRET}\r\nAccept: text/event-stream\r\n\r\n`;
  await conn.write(new TextEncoder().encode(head));
  hostile++;
  return conn;
}

/** Waits until `read()` stays the same for a second (polled, with a deadline). */
async function settled(what: string, read: () => number): Promise<number> {
  let last = -1, same = 0;
  await waitFor(what, () => {
    const now = read();
    same = now === last && now > 0 ? same + 1 : 0;
    last = now;
    return same >= 5;
  }, { timeoutMs: 60_000, intervalMs: 200 });
  return last;
}

/** The `id:`s of a stream's frames, read until the body ends (within `ms`). */
async function readToEnd(response: Response, ms = 20_000): Promise<number[]> {
  assert.equal(response.status, 200);
  const text = await within(ms, 'the stream to end', response.text());
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

Deno.test('a client that never reads costs the server a bounded number of events, on both servers', async () => {
  const runId = await runWithHistory(EVENTS);
  const edge = countingSource(client.sql), dash = countingSource(client.sql);
  const servers = await serveBoth(edge.source, dash.source);
  const conns: Deno.TcpConn[] = [];
  try {
    // Three clients that never read on each server: each stream stops reading the database
    // when the socket and its queue are full, instead of queueing the whole history.
    for (let i = 0; i < 3; i++) {
      conns.push(await neverRead(servers.edge(runId)));
      conns.push(await neverRead(servers.dashboard(runId)));
    }
    const read = {
      edge: await settled('the Edge-style streams to stop reading', edge.read),
      dashboard: await settled("the dashboard's streams to stop reading", dash.read),
    };
    // 3 streams of 2,000 events would read 6,000; the sockets' buffers (a few MiB each way)
    // take a few hundred 16 KiB events per stream.
    for (const [server, n] of Object.entries(read)) {
      assert.ok(n < 3 * EVENTS / 2, `the ${server} streams read ${n} events of ${3 * EVENTS}`);
    }
  } finally {
    for (const c of conns) c.close();
    await servers.close();
  }
});

Deno.test("a reading client's stream ends after the run's own last event; a resume after it gets 204", async () => {
  const counted = countingSource(client.sql);
  const servers = await serveBoth(counted.source);
  // Ends every request in the end, so that a stream that does not end fails the test instead of
  // holding the servers' shutdown.
  const hangUp = new AbortController();
  const signal = hangUp.signal;
  try {
    const runId = await runWithHistory(3);
    const headers = { authorization: `Bearer ${SECRET}` };
    for (const url of [servers.edge(runId), servers.dashboard(runId)]) {
      // Open while the run is started: the cancellation's event ends it.
      const response = await fetch(url, { headers, signal });
      const ids = readToEnd(response);
      if (url === servers.edge(runId)) {
        await waitFor('the stream to read the history', () => counted.read() >= 4);
        await cancelRun(client, runId, 'the test ends it');
      }
      const stored = await runEvents(client, runId);
      assert.equal(stored.at(-1)?.event, 'cancelled');
      assert.deepEqual(await ids, stored.map((e) => e.eventId));
      // Resuming after the run's end: nothing more will come.
      const after = await fetch(url, {
        headers: { ...headers, 'last-event-id': String(stored.at(-1)!.eventId) },
        signal,
      });
      assert.equal(after.status, 204, url);
      await after.body?.cancel();
      // From a cursor before the end: the rest, then the end.
      const rest = await fetch(`${url}?after=${stored.at(-3)!.eventId}`, { headers, signal });
      assert.deepEqual(await readToEnd(rest), stored.slice(-2).map((e) => e.eventId));
    }
  } finally {
    hangUp.abort();
    await servers.close();
  }
});

Deno.test('SWITCHYARD_AUTH=disabled does not open the stream on the hosted runtime', async () => {
  const runId = await runWithHistory(1);
  const hosted = (vars: Record<string, string>) => (n: string) => vars[n];
  for (
    const options of [
      { env: hosted({ SWITCHYARD_AUTH: 'disabled', SB_REGION: 'eu-west-1' }) },
      { env: hosted({ SWITCHYARD_AUTH: 'disabled', DENO_DEPLOYMENT_ID: 'x' }) },
      { auth: 'disabled' as const, env: hosted({ SB_REGION: 'eu-west-1' }) },
    ]
  ) {
    const events = createRunEventStream({ source: client, ...options });
    hostile++;
    try {
      const response = await events.fetch(new Request(`http://127.0.0.1/runs/${runId}/events`));
      if (response.status !== 500) await response.body?.cancel();
      assert.equal(response.status, 500);
      const body = await response.json();
      assert.equal(body.error, 'stream_config');
      assert.match(body.message, /is refused on Supabase's hosted runtime/);
    } finally {
      await events.close();
    }
  }
  // Locally it is what it says: no bearer asked.
  const local = createRunEventStream({
    source: client,
    env: hosted({ SWITCHYARD_AUTH: 'disabled' }),
  });
  try {
    await cancelRun(client, runId, 'the test ends it');
    const response = await local.fetch(new Request(`http://127.0.0.1/runs/${runId}/events`));
    const stored = await runEvents(client, runId);
    assert.deepEqual(await readToEnd(response), stored.map((e) => e.eventId));
  } finally {
    await local.close();
  }
});

Deno.test('cleanup', { sanitizeOps: false, sanitizeResources: false }, async () => {
  console.log(`hostile clients and requests sent here: ${hostile}`);
  await client.close();
  await db.close();
});
