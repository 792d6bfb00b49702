/**
 * Refusals are seen where operators look (issue 37,
 * docs/design/worker.md#refusals-are-seen-where-operators-look): a refused start
 * and a pause are logged by the function and recorded in switchyard.refusals with the same text,
 * one row per function and kind — against real PostgreSQL with real workers.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { UnsupportedWorkError } from '../../lib/errors.ts';
import { defineDeployedFlow, EdgeWorker, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { createMemoryPlatform } from '../../lib/platform/platform.ts';
import { pauseFunction } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const SECRET = 'refusals-test-secret-5e1d';
const base = { connectionString: db.url, ...FAST };

function env(extra: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    DATABASE_URL: db.url,
    SWITCHYARD_WORKER_SECRET: SECRET,
    SWITCHYARD_MAX_POLL_SECONDS: String(FAST.maxPollSeconds),
    SWITCHYARD_POLL_INTERVAL_MS: String(FAST.pollIntervalMs),
    SWITCHYARD_HEARTBEAT_INTERVAL_MS: String(FAST.heartbeatIntervalMs),
    ...extra,
  };
}

const bearer = { headers: { Authorization: `Bearer ${SECRET}` } };

/** v1 and v2 of alias `<prefix>` on queue `<prefix>_q`, and the queue's default function. */
function versions(prefix: string) {
  const queue = `${prefix}_q`;
  const make = (v: string) =>
    defineDeployedFlow(
      routeFlow(
        new Flow<{ n: number }>({ slug: `${prefix}${v}` }).step({ slug: 'work' }, (i) => i.n),
        { queues: { work: queue } },
      ),
      { alias: prefix },
    );
  return { queue, fn: `${prefix}-q-worker`, v1: make('V1'), v2: make('V2') };
}

function memoryLog() {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      info: (m: string) => lines.push(`info ${m}`),
      warn: (m: string) => lines.push(`warn ${m}`),
      error: (m: string) => lines.push(`error ${m}`),
    },
  };
}

type Refusal = { refusal: string; message: string; count: number; first_at: Date; last_at: Date };

async function refusals(fn: string): Promise<Refusal[]> {
  return await db.sql<Refusal[]>`
    select refusal, message, count::int as count, first_at, last_at from switchyard.refusals
     where function_name = ${fn} order by refusal`;
}

Deno.test('a refused start is recorded with the text the function logs; a repeat counts in the same row', async () => {
  const { v1, v2, queue, fn } = versions('refcov');
  // A newer deployment moved the alias to v2: a v1-only function is refused (coverage).
  const newer = await startWorker([v1, v2], { ...base, queueName: queue });
  await newer.stop();
  const platform = createMemoryPlatform(env());
  const log = memoryLog();
  const handle = EdgeWorker.start([v1], { queueName: queue, platform, logger: log.logger });
  try {
    const first = await platform.fetch('http://local/', bearer);
    assert.equal(first.status, 409);
    const [row] = await refusals(fn);
    assert.equal(row.refusal, 'coverage');
    assert.deepEqual(log.lines, [`error worker start refused (409 coverage): ${row.message}`]);
    assert.match(row.message, /refcovV2\/work/);
    assert.equal(row.count, 1);
    assert.equal((await platform.fetch('http://local/', bearer)).status, 409);
    const after = await refusals(fn);
    assert.equal(after.length, 1, 'one row per function and kind');
    assert.equal(after[0].count, 2);
    assert.ok(
      after[0].last_at >= row.last_at && after[0].first_at.getTime() === row.first_at.getTime(),
    );
  } finally {
    await handle.stop();
  }

  // A paused function's refusal carries the reason, as its answer and its log do.
  await pauseFunction(client, fn, 'operator: investigating ticket 7');
  const paused = createMemoryPlatform(env());
  const pausedLog = memoryLog();
  const h2 = EdgeWorker.start([v1, v2], {
    queueName: queue,
    platform: paused,
    logger: pausedLog.logger,
  });
  try {
    assert.equal((await paused.fetch('http://local/', bearer)).status, 409);
    const row = (await refusals(fn)).find((r) => r.refusal === 'function_paused');
    assert.ok(row, 'the paused refusal is recorded');
    assert.match(row.message, /; reason: operator: investigating ticket 7$/);
    assert.deepEqual(pausedLog.lines, [
      `error worker start refused (409 function_paused): ${row.message}`,
    ]);
  } finally {
    await h2.stop();
  }
});

Deno.test('bad settings and disabled auth on the hosted runtime are recorded as worker_config, the auth refusal once per instance', async () => {
  const { v1, queue, fn } = versions('refcfg');
  const bad = createMemoryPlatform(env({ SWITCHYARD_POLL_INTERVAL_MS: 'fast' }));
  const h1 = EdgeWorker.start([v1], {
    queueName: queue,
    platform: bad,
    logger: memoryLog().logger,
  });
  try {
    assert.equal((await bad.fetch('http://local/', bearer)).status, 500);
  } finally {
    await h1.stop();
  }
  const [row] = await refusals(fn);
  assert.equal(row.refusal, 'worker_config');
  assert.match(row.message, /^SWITCHYARD_POLL_INTERVAL_MS "fast" is invalid/);

  const hostedFn = 'refcfg-hosted-worker';
  const hosted = createMemoryPlatform(env({ SWITCHYARD_AUTH: 'disabled', SB_REGION: 'eu-west-1' }));
  const log = memoryLog();
  const h2 = EdgeWorker.start([v1], {
    queueName: queue,
    functionName: hostedFn,
    platform: hosted,
    logger: log.logger,
  });
  try {
    for (let i = 0; i < 3; i++) assert.equal((await hosted.fetch('http://local/')).status, 500);
  } finally {
    await h2.stop();
  }
  const [auth] = await refusals(hostedFn);
  assert.equal(auth.refusal, 'worker_config');
  assert.equal(auth.count, 1, 'once per instance, whoever asks');
  assert.equal(log.lines[0], `error ${auth.message}`);
});

Deno.test('a start refused because the database is unreachable is logged only, and answers at once', async () => {
  const { v1, queue } = versions('refdown');
  const unreachable = 'postgres://postgres@127.0.0.1:1/none?sslmode=disable';
  const platform = createMemoryPlatform(env({ DATABASE_URL: unreachable }));
  const log = memoryLog();
  const handle = EdgeWorker.start([v1], { queueName: queue, platform, logger: log.logger });
  try {
    const started = Date.now();
    const r = await platform.fetch('http://local/', bearer);
    assert.equal(r.status, 500);
    assert.ok(Date.now() - started < 4_000, 'no attempt to record it');
    assert.equal(log.lines.length, 1, log.lines.join('\n'));
    assert.match(log.lines[0], /^error worker start refused \(500 start_failed\): /);
  } finally {
    await handle.stop();
  }
});

Deno.test('a pause on unsupported work is logged and recorded with the same text', async () => {
  const { v1, v2, queue, fn } = versions('refuns');
  const log = memoryLog();
  const old = await startWorker([v1], { ...base, queueName: queue, logger: log.logger });
  try {
    await db.sql`select switchyard.ensure_flow(${
      db.sql.json(toPlacement(v2).shape as never)
    }::jsonb)`;
    await client.activateAlias('refuns', 'refunsV2');
    await client.startFlow('refuns', { n: 1 });
    const err = await within(
      30_000,
      'the v1-only worker to stop',
      old.done.then(() => null, (e) => e),
    );
    assert.ok(err instanceof UnsupportedWorkError, String(err));
    const [row] = await refusals(fn);
    assert.equal(row.refusal, 'unsupported_work');
    assert.equal(row.message, err.message);
    assert.ok(log.lines.includes(`error ${err.message}`), log.lines.join('\n'));
  } finally {
    await old.stop();
  }
});

Deno.test("an operator's pause of a running worker is logged with its reason", async () => {
  const { v1, queue, fn } = versions('refop');
  const log = memoryLog();
  const worker = await startWorker([v1], { ...base, queueName: queue, logger: log.logger });
  try {
    await pauseFunction(client, fn, 'operator: disk almost full');
    await within(30_000, 'the paused worker to stop', worker.done.catch(() => {}));
    await waitFor('the stop line', () => log.lines.some((l) => l.includes('is paused')));
    assert.ok(
      log.lines.includes(`warn stopping: function "${fn}" is paused: operator: disk almost full`),
      log.lines.join('\n'),
    );
  } finally {
    await worker.stop();
  }
});

Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
