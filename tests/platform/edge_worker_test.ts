/**
 * `EdgeWorker.start()` behind the in-memory platform: authorization, start-once, pause,
 * disable and coverage refusals, unload and restart — against real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { defineDeployedFlow, EdgeWorker, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { createMemoryPlatform } from '../../lib/platform/platform.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const SECRET = 'edge-test-secret-0123456789';

/** Env for a memory platform: the database, the secret and fast polling (through env tuning). */
function env(extra: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    DATABASE_URL: db.url,
    SWITCHYARD_WORKER_SECRET: SECRET,
    SWITCHYARD_MAX_POLL_SECONDS: String(FAST.maxPollSeconds),
    SWITCHYARD_POLL_INTERVAL_MS: String(FAST.pollIntervalMs),
    SWITCHYARD_HEARTBEAT_INTERVAL_MS: String(FAST.heartbeatIntervalMs),
    SWITCHYARD_STALL_CHECK_INTERVAL_MS: String(FAST.stallCheckIntervalMs),
    ...extra,
  };
}

/** v1 and v2 of alias `<prefix>` on queue `<prefix>_q` (one step each). */
function versions(prefix: string) {
  const v1 = new Flow<{ n: number }>({ slug: `${prefix}V1` })
    .step({ slug: 'work' }, (input) => ({ v1: input.n }));
  const v2 = new Flow<{ n: number }>({ slug: `${prefix}V2` })
    .step({ slug: 'work' }, (input) => ({ v2: input.n }));
  const queue = `${prefix}_q`;
  return {
    queue,
    fn: `${prefix.replaceAll('_', '-')}-q-worker`,
    v1: defineDeployedFlow(routeFlow(v1, { queues: { work: queue } }), { alias: prefix }),
    v2: defineDeployedFlow(routeFlow(v2, { queues: { work: queue } }), { alias: prefix }),
  };
}

const bearer = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });

async function liveWorkers(fn: string): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.workers where function_name = ${fn} and stopped_at is null`;
  return n;
}

async function allWorkers(fn: string): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.workers where function_name = ${fn}`;
  return n;
}

/** A logger that keeps its lines: the function's own log. */
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

Deno.test('401 bodies are exactly {"error":"unauthorized"}; why goes to the function log; nothing starts', async () => {
  const { v1, queue, fn } = versions('authz');
  const platform = createMemoryPlatform(env());
  const log = memoryLog();
  const handle = EdgeWorker.start([v1], { queueName: queue, platform, logger: log.logger });
  try {
    const url = 'http://local/functions/v1/x';
    const refused = async (init: RequestInit, why: RegExp) => {
      log.lines.length = 0;
      const response = await platform.fetch(url, init);
      assert.equal(response.status, 401);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer');
      assert.equal(await response.text(), '{"error":"unauthorized"}');
      assert.equal(log.lines.length, 1, log.lines.join('\n'));
      assert.match(log.lines[0], why);
      assert.ok(!log.lines[0].includes(SECRET), 'the log never shows the secret');
    };
    await refused({}, /^warn unauthorized request: missing bearer/);
    await refused(bearer('not-the-secret'), /not an accepted worker secret/);
    await refused({ headers: { Authorization: `Basic ${SECRET}` } }, /missing bearer/);
    await refused(bearer(`${SECRET}x`), /not an accepted/);
    // With no secret configured at all, nothing is accepted, and the answer does not say so.
    platform.vars.SWITCHYARD_WORKER_SECRET = undefined;
    await refused(bearer(''), /no secret is configured/);
    // An invalid SWITCHYARD_AUTH is not echoed to the caller.
    platform.vars.SWITCHYARD_AUTH = 'off';
    await refused(bearer(SECRET), /SWITCHYARD_AUTH "off" is invalid/);
    assert.equal(await allWorkers(fn), 0, 'no worker row was written');
    assert.equal(handle.worker, null);
    // The service role key is accepted as well as the kit secret.
    platform.vars.SWITCHYARD_AUTH = undefined;
    platform.vars.SUPABASE_SERVICE_ROLE_KEY = 'service-role-key';
    const ok = await platform.fetch(url, bearer('service-role-key'));
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).state, 'started');
  } finally {
    await handle.stop();
  }
});

Deno.test('SWITCHYARD_AUTH=disabled on the hosted runtime answers 500 with the rule and starts nothing', async () => {
  const { v1, queue, fn } = versions('hosted');
  for (
    const [vars, auth, signal] of [
      [{ SWITCHYARD_AUTH: 'disabled', SB_REGION: 'eu-central-1' }, undefined, 'SB_REGION'],
      [
        { SWITCHYARD_AUTH: 'disabled', DENO_DEPLOYMENT_ID: 'abcdefghijklmnopqrst_0f1e_7' },
        undefined,
        'DENO_DEPLOYMENT_ID',
      ],
      [{ SB_REGION: 'us-east-1' }, 'disabled' as const, 'SB_REGION'],
    ] as const
  ) {
    const platform = createMemoryPlatform(env(vars));
    const log = memoryLog();
    const handle = EdgeWorker.start([v1], {
      queueName: queue,
      platform,
      logger: log.logger,
      ...(auth ? { auth } : {}),
    });
    try {
      for (const init of [{}, bearer(SECRET)]) {
        const response = await platform.fetch('http://local/', init);
        assert.equal(response.status, 500);
        const body = await response.json();
        assert.equal(body.error, 'worker_config');
        assert.match(
          body.message,
          new RegExp(
            `^(SWITCHYARD_AUTH=disabled|auth: 'disabled') is refused on Supabase's hosted ` +
              `runtime \\(${signal} is set\\): it is for local runs only`,
          ),
        );
      }
      assert.match(log.lines.join('\n'), /^error .* is refused on Supabase's hosted runtime/);
      assert.equal(handle.worker, null);
      assert.equal(await allWorkers(fn), 0, 'nothing started');
    } finally {
      await handle.stop();
    }
  }
  // Locally (no hosted signal; SB_EXECUTION_ID is set by the local edge runtime too) it is
  // allowed.
  const local = createMemoryPlatform(
    env({ SWITCHYARD_AUTH: 'disabled', SB_EXECUTION_ID: crypto.randomUUID() }),
  );
  const handle = EdgeWorker.start([v1], { queueName: queue, platform: local });
  try {
    const response = await local.fetch('http://local/');
    assert.equal(response.status, 200);
    assert.equal((await response.json()).state, 'started');
  } finally {
    await handle.stop();
  }
});

Deno.test('a 409 carries a long pause reason once, cut at 1000 characters', async () => {
  const { v1, queue, fn } = versions('longpause');
  await db.sql`select switchyard.ensure_shared_queue(${queue})`;
  await db.sql`select switchyard.register_function(${fn}, ${queue})`;
  // Longer than an operator may write: as the unsupported-work pause of a large batch can be.
  const reason = `unsupported work on queue ${queue}: message ids [${
    Array.from({ length: 1000 }, (_, i) => 100000 + i).join(', ')
  }]`;
  await db.sql`update switchyard.worker_functions set paused_at = now(), pause_reason = ${reason}
                where function_name = ${fn}`;
  const platform = createMemoryPlatform(env());
  const log = memoryLog();
  const handle = EdgeWorker.start([v1], { queueName: queue, platform, logger: log.logger });
  try {
    const response = await platform.fetch('http://local/', bearer(SECRET));
    assert.equal(response.status, 409);
    const text = await response.text();
    assert.ok(text.length < 1500, `the body is ${text.length} characters`);
    const body = JSON.parse(text);
    assert.equal(body.error, 'function_paused');
    assert.equal(body.reason, `${reason.slice(0, 1000)}... (${reason.length} characters)`);
    assert.ok(!body.message.includes('message ids'), 'the message does not repeat the reason');
    // The function's own log says the same (the caller may be pg_net, whose answer nobody reads).
    assert.deepEqual(log.lines, [
      `error worker start refused (409 function_paused): ${body.message}; reason: ${body.reason}`,
    ]);
  } finally {
    await handle.stop();
  }
});

Deno.test('the first authorized request starts one worker; later requests report it', async () => {
  const { v1, queue, fn } = versions('startonce');
  const platform = createMemoryPlatform(env());
  const handle = EdgeWorker.start([v1], { queueName: queue, maxConcurrent: 2, platform });
  try {
    const responses = await Promise.all(
      [1, 2, 3].map(() => platform.fetch('http://local/', { method: 'POST', ...bearer(SECRET) })),
    );
    const bodies = await Promise.all(responses.map((r) => r.json()));
    assert.deepEqual(responses.map((r) => r.status), [200, 200, 200]);
    assert.equal(bodies.filter((b) => b.state === 'started').length, 1);
    assert.equal(new Set(bodies.map((b) => b.workerId)).size, 1, 'one worker for all requests');
    assert.deepEqual(
      { queueName: bodies[0].queueName, functionName: bodies[0].functionName },
      { queueName: queue, functionName: fn },
    );
    const later = await (await platform.fetch('http://local/', bearer(SECRET))).json();
    assert.equal(later.state, 'running');
    assert.equal(later.workerId, bodies[0].workerId);
    assert.equal(await liveWorkers(fn), 1);
    assert.equal(platform.waited.length, 1, 'waitUntil keeps the instance alive for the worker');
    const runId = await client.startFlow('startonce', { n: 7 });
    assert.deepEqual((await client.waitForRun(runId)).output, { work: { v1: 7 } });
  } finally {
    await handle.stop();
  }
});

Deno.test('beforeunload stops the worker and marks it stopped; later requests get 503', async () => {
  const { v1, queue, fn } = versions('unload');
  const platform = createMemoryPlatform(env());
  const handle = EdgeWorker.start([v1], { queueName: queue, platform });
  const started = await (await platform.fetch('http://local/', bearer(SECRET))).json();
  assert.equal(started.state, 'started');
  await platform.unload();
  const [row] = await db.sql<{ stopped_at: Date | null; stop_reason: string | null }[]>`
    select stopped_at, stop_reason from switchyard.workers where worker_id = ${started.workerId}`;
  assert.ok(row.stopped_at, 'the worker row is marked stopped');
  assert.equal(row.stop_reason, 'stop requested');
  assert.equal(handle.worker, null);
  const after = await platform.fetch('http://local/', bearer(SECRET));
  assert.equal(after.status, 503);
  assert.equal((await after.json()).error, 'shutting_down');
  assert.equal(await liveWorkers(fn), 0);
  await handle.stop();
});

Deno.test('a paused function answers 409 with the reason; a disabled one 409; neither starts', async () => {
  const { v1, queue, fn } = versions('flags');
  await db.sql`select switchyard.ensure_shared_queue(${queue})`;
  await db.sql`select switchyard.register_function(${fn}, ${queue})`;
  await db.sql`select switchyard.pause_function(${fn}, 'operator: investigating ticket 42')`;
  const platform = createMemoryPlatform(env());
  const handle = EdgeWorker.start([v1], { queueName: queue, platform });
  try {
    const paused = await platform.fetch('http://local/', bearer(SECRET));
    assert.equal(paused.status, 409);
    const body = await paused.json();
    assert.equal(body.error, 'function_paused');
    assert.equal(body.functionName, fn);
    assert.equal(body.reason, 'operator: investigating ticket 42');
    await db.sql`select switchyard.resume_function(${fn})`;
    await db.sql`select switchyard.set_function_enabled(${fn}, false)`;
    const disabled = await platform.fetch('http://local/', bearer(SECRET));
    assert.equal(disabled.status, 409);
    assert.equal((await disabled.json()).error, 'function_disabled');
    assert.equal(await allWorkers(fn), 0);
    await db.sql`select switchyard.set_function_enabled(${fn}, true)`;
    const ok = await platform.fetch('http://local/', bearer(SECRET));
    assert.equal(ok.status, 200);
  } finally {
    await handle.stop();
  }
});

Deno.test('a registry lacking the active version answers 409 with the missing pairs', async () => {
  const { v1, v2, queue, fn } = versions('cover');
  // A newer deployment moved the alias to v2 and started a run of it.
  const newer = await startWorker([v1, v2], {
    queueName: queue,
    connectionString: db.url,
    ...FAST,
  });
  await newer.stop();
  await client.startFlow('cover', { n: 1 });
  const platform = createMemoryPlatform(env());
  const log = memoryLog();
  const handle = EdgeWorker.start([v1], { queueName: queue, platform, logger: log.logger });
  try {
    const response = await platform.fetch('http://local/', bearer(SECRET));
    assert.equal(response.status, 409);
    const body = await response.json();
    assert.equal(body.error, 'coverage');
    assert.ok(
      log.lines.includes(`error worker start refused (409 coverage): ${body.message}`),
      log.lines.join('\n'),
    );
    assert.equal(body.queueName, queue);
    assert.deepEqual(body.missingPairs, ['coverV2/work']);
    assert.match(body.missing[0].reasons, /active target of alias cover/);
    assert.equal(await liveWorkers(fn), 0);
  } finally {
    await handle.stop();
  }
  // The complete registry starts and finishes the run.
  const fixed = EdgeWorker.start([v1, v2], {
    queueName: queue,
    platform: createMemoryPlatform(env()),
  });
  try {
    const ok = await fixed.fetch(new Request('http://local/', bearer(SECRET)));
    assert.equal(ok.status, 200);
    await waitFor('the v2 run to complete', async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.runs where flow_slug = 'coverV2' and status = 'completed'`;
      return n === 1;
    });
  } finally {
    await fixed.stop();
  }
});

Deno.test('after its worker stops (deprecated), the next request starts a new worker', async () => {
  const { v1, queue, fn } = versions('restart');
  const platform = createMemoryPlatform(env());
  const handle = EdgeWorker.start([v1], { queueName: queue, platform });
  try {
    const first = await (await platform.fetch('http://local/', bearer(SECRET))).json();
    await db.sql`select switchyard.deprecate_workers(${fn})`;
    await waitFor('the deprecated worker to stop', () => handle.worker === null);
    const second = await (await platform.fetch('http://local/', bearer(SECRET))).json();
    assert.equal(second.state, 'started');
    assert.notEqual(second.workerId, first.workerId);
    assert.equal(await liveWorkers(fn), 1);
  } finally {
    await handle.stop();
  }
});

Deno.test('auth can be disabled explicitly; bad tuning or no database answer 500', async () => {
  const { v1, queue } = versions('config');
  const open = createMemoryPlatform(env({ SWITCHYARD_AUTH: 'disabled' }));
  const handle = EdgeWorker.start([v1], { queueName: queue, platform: open });
  try {
    assert.equal((await open.fetch('http://local/')).status, 200);
  } finally {
    await handle.stop();
  }
  const badTuning = createMemoryPlatform(env({ SWITCHYARD_POLL_INTERVAL_MS: 'fast' }));
  const h2 = EdgeWorker.start([v1], { queueName: queue, platform: badTuning });
  const r2 = await badTuning.fetch('http://local/', bearer(SECRET));
  assert.equal(r2.status, 500);
  assert.deepEqual(await r2.json(), {
    error: 'worker_config',
    message:
      'SWITCHYARD_POLL_INTERVAL_MS "fast" is invalid: use a non-negative integer (it sets pollIntervalMs)',
  });
  await h2.stop();
  const noDb = createMemoryPlatform(env({ DATABASE_URL: '' }));
  const h3 = EdgeWorker.start([v1], { queueName: queue, platform: noDb });
  const r3 = await noDb.fetch('http://local/', bearer(SECRET));
  assert.equal(r3.status, 500);
  assert.match((await r3.json()).message, /no database connection/);
  await h3.stop();
});

Deno.test('queueName is typed from the registry, as for startWorker', () => {
  // Type-level only: the function is never called.
  const _types = () => {
    const { v1 } = versions('types');
    const routed = defineDeployedFlow(
      routeFlow(new Flow({ slug: 'typedV1' }).step({ slug: 'a' }, () => 1), {
        queues: { a: 'typed_queue' },
      }),
      { alias: 'typed' },
    );
    const registry = [routed] as const;
    EdgeWorker.start(registry, { queueName: 'typed_queue' });
    // @ts-expect-error not a queue of this registry
    EdgeWorker.start(registry, { queueName: 'other_queue' });
    // @ts-expect-error a registry needs queueName
    EdgeWorker.start(registry, {});
    EdgeWorker.start(new Flow({ slug: 'plain' }).step({ slug: 'a' }, () => 1));
    // @ts-expect-error a plain flow takes no queueName
    EdgeWorker.start(new Flow({ slug: 'plain' }), { queueName: 'plain' });
    EdgeWorker.start([v1], { queueName: 'any_string_for_untyped_registries' });
  };
  assert.equal(typeof _types, 'function');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
