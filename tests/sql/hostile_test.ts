/**
 * Hostile input: fuzzed queue names through every validator (routeFlow, the scaffold's
 * check, the SQL functions), and forged messages written straight into a queue.
 *
 * The fuzzer is seeded; a failure prints the seed, and `SWITCHYARD_FUZZ_SEED` replays it.
 * `SWITCHYARD_FUZZ_NAMES` sets the count of random names (default 3000).
 *
 * @module
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { describeValue } from '../../lib/_describe_value.ts';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { EXPLICIT_QUEUE_NAME_RULE, QUEUE_NAME_RULE } from '../../lib/dsl/queue_names.ts';
import { InvalidQueueNameError, UnsupportedWorkError } from '../../lib/errors.ts';
import {
  defineDeployedFlow,
  Flow,
  routeFlow,
  startWorker,
  type WorkerLogger,
} from '../../lib/mod.ts';
import { assertQueueName } from '../../lib/dsl/queue_names.ts';
import { UnknownFunctionError } from '../../lib/errors.ts';
import { quarantineMessages } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { deno } from '../_helpers/process.ts';

const db = await createTestDatabase();
const sql = db.sql;
const SILENT: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} };

const SEED = Number(Deno.env.get('SWITCHYARD_FUZZ_SEED') ?? Math.floor(Math.random() * 2 ** 31));
const NAMES = Number(Deno.env.get('SWITCHYARD_FUZZ_NAMES') ?? '3000');

/** mulberry32: a small seeded PRNG, so a failing name set can be replayed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const VALID_REST = `${LOWER}0123456789_`;
const HOSTILE = [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
  "'",
  '"',
  '`',
  '$',
  '$$',
  ';',
  '--',
  '-',
  '/*',
  '*/',
  ' ',
  '\t',
  '\n',
  '\r',
  '\\',
  '/',
  '%',
  '(',
  ')',
  '.',
  ',',
  ':',
  '=',
  '&',
  '|',
  '{',
  '}',
  '[',
  ']',
  'é',
  'ß',
  'İ',
  'ı',
  '\u212a', // KELVIN SIGN: lower-cases to an ASCII "k"
  'ſ',
  'ﬁ',
  'Ω',
  'а', // Cyrillic a
  '日本',
  '🚀',
  '\u200b',
  '\u0301',
  '\ufeff',
  '\u2028',
  '\ud800', // a lone surrogate
];
/** Crafted names: injections, boundary lengths and the `__` rule. */
const CRAFTED = [
  '',
  'a'.repeat(47),
  'a'.repeat(48),
  'a'.repeat(64),
  `q${'_'.repeat(46)}`,
  `${'b'.repeat(46)}1`,
  `${'c'.repeat(47)}é`,
  'a__b',
  '__a',
  'a__',
  '_a',
  '1a',
  'a-b',
  'A',
  'Queue',
  'x; drop table switchyard.queues; --',
  "x'; drop table switchyard.queues; --",
  'x"; drop table pgmq.meta; --',
  "x' or '1'='1",
  '$$; select pg_sleep(5); $$',
  'q_"x"',
  'a b',
  'a\u0000b',
  'pgmq.meta',
  'switchyard.queues',
  'q_meta',
  '\u212aelvin',
  'ſtream',
];

function randomName(rand: () => number): string {
  const roll = rand();
  const pickFrom = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  if (roll < 0.06) {
    // Valid: a letter, then valid characters, at most 47 (some with a forbidden "__").
    const len = 1 + Math.floor(rand() * 47);
    let s = pickFrom([...LOWER]);
    while (s.length < len) s += pickFrom([...VALID_REST]);
    return s;
  }
  if (roll < 0.3) {
    // Near misses: a valid name of a boundary length with one hostile character spliced in.
    const len = pickFrom([46, 47, 48, 63, 64, 65]);
    let s = pickFrom([...LOWER]);
    while (s.length < len) s += pickFrom([...VALID_REST]);
    const at = Math.floor(rand() * s.length);
    return rand() < 0.3 ? s : s.slice(0, at) + pickFrom(HOSTILE) + s.slice(at + 1);
  }
  const len = Math.floor(rand() * 70);
  let s = '';
  while (s.length < len) s += rand() < 0.5 ? pickFrom([...VALID_REST]) : pickFrom(HOSTILE);
  return s;
}

/** The rule a name breaks (explicit names), or null when it is valid: the test's own oracle. */
function brokenRule(name: string): string | null {
  if (!/^[a-z][a-z0-9_]*$/.test(name) || name.length > 47) return QUEUE_NAME_RULE;
  if (name.includes('__')) return EXPLICIT_QUEUE_NAME_RULE;
  return null;
}

/** The same rules in the SQL core's words. */
const SQL_RULES: Record<string, string> = {
  [QUEUE_NAME_RULE]: QUEUE_NAME_RULE,
  [EXPLICIT_QUEUE_NAME_RULE]:
    'explicit queue names must not contain "__" (reserved for generated private step queues)',
};

/** An unpaired UTF-16 surrogate: not representable in PostgreSQL's JSON. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The kit's own SQL errors: invalid value (22023), conflict (23505), state (55000). */
const KIT_CODES = new Set(['22023', '23505', '55000']);

/**
 * The detail of a kit refusal (docs/design/errors.md): a JSON object naming the rule and
 * the argument, with the value echoed as text of at most 200 characters (or null).
 */
function wellFormedDetail(detail: string | undefined): boolean {
  try {
    const d = JSON.parse(String(detail));
    return d !== null && typeof d === 'object' && typeof d.rule === 'string' &&
      typeof d.argument === 'string' &&
      (d.value === null || (typeof d.value === 'string' && [...d.value].length <= 200));
  } catch {
    return false;
  }
}

async function snapshot(conn: postgres.Sql) {
  const [s] = await conn<
    { meta: string[]; queues: string[]; rels: string[]; flows: string[]; runs: number }[]
  >`select
      (select coalesce(array_agg(queue_name::text order by 1), '{}') from pgmq.meta) as meta,
      (select coalesce(array_agg(queue_name order by 1), '{}') from switchyard.queues) as queues,
      (select coalesce(array_agg(c.relname::text order by 1), '{}')
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('pgmq', 'switchyard', 'public')) as rels,
      (select coalesce(array_agg(flow_slug order by 1), '{}') from switchyard.flows) as flows,
      (select count(*)::int from switchyard.runs) as runs`;
  return s;
}

Deno.test({
  name: `fuzzed queue names: every invalid one is rejected with its rule and creates nothing`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const rand = prng(SEED);
    const names = [...CRAFTED, ...Array.from({ length: NAMES }, () => randomName(rand))];
    const flow = new Flow({ slug: 'fuzzTarget' }).step({ slug: 'a' }, () => 1);
    const context = `(seed ${SEED}; replay with SWITCHYARD_FUZZ_SEED=${SEED})`;
    let invalid = 0;

    // TypeScript: routeFlow and the scaffold's validator agree with the oracle, naming value
    // and rule.
    for (const name of names) {
      const rule = brokenRule(name);
      for (
        const check of [
          () => routeFlow(flow, { queues: { a: name } }),
          () => assertQueueName(name, { explicit: true, where: 'scaffold-queue' }),
        ]
      ) {
        if (rule === null) {
          check();
          continue;
        }
        try {
          check();
          assert.fail(`${describeValue(name)} was accepted ${context}`);
        } catch (e) {
          assert.ok(e instanceof InvalidQueueNameError, `${describeValue(name)}: ${e} ${context}`);
          assert.equal(e.value, name);
          assert.equal(e.rule, rule, `${describeValue(name)} ${context}`);
          assert.ok(e.message.includes(`queue name ${describeValue(name)} is invalid: ${rule}`));
        }
      }
      if (rule !== null) invalid++;
    }
    assert.ok(invalid > names.length / 2, `${invalid} of ${names.length} names are invalid`);

    // SQL: the same names straight into the functions, 4 connections at a time.
    const before = await snapshot(sql);
    const valid = new Set<string>();
    const unexpected: string[] = [];
    const conns = Array.from(
      { length: 4 },
      () => postgres(db.url, { max: 1, onnotice: () => {}, prepare: false }),
    );
    // PostgreSQL refuses NUL in text at the protocol level (22021) before any function runs;
    // that is not the kit's check, so NUL names stop at the TypeScript validators above.
    const sqlNames = names.filter((n) => !n.includes('\u0000'));
    try {
      let next = 0;
      let flowNo = 0;
      await Promise.all(conns.map(async (c) => {
        while (next < sqlNames.length) {
          const name = sqlNames[next++];
          const rule = brokenRule(name);
          const expectError = async (what: string, run: () => Promise<unknown>) => {
            try {
              const result = await run();
              return { ok: true as const, result };
            } catch (e) {
              const err = e as { code?: string; message?: string; detail?: string };
              const jsonRefusal = err.code === '22P02' && LONE_SURROGATE.test(name);
              if (!KIT_CODES.has(String(err.code)) && !jsonRefusal) {
                unexpected.push(
                  `${what}(${describeValue(name)}): ${err.code} ${err.message} ${context}`,
                );
              } else if (!jsonRefusal && !wellFormedDetail(err.detail)) {
                unexpected.push(
                  `${what}(${describeValue(name)}): ${err.code} detail ${
                    describeValue(String(err.detail))
                  } is not {rule, argument, value (at most 200 characters)} ${context}`,
                );
              }
              return { ok: false as const, code: err.code, message: String(err.message) };
            }
          };
          // ensure_shared_queue: the exact rule, or provisioning for a valid name.
          const shared = await expectError(
            'ensure_shared_queue',
            () => c`select switchyard.ensure_shared_queue(${name}) as r`,
          );
          if (rule === null) {
            assert.ok(shared.ok, `ensure_shared_queue refused valid ${describeValue(name)}`);
            valid.add(name);
          } else {
            assert.equal(shared.ok, false, `ensure_shared_queue accepted ${describeValue(name)}`);
            assert.equal(shared.code, '22023');
            assert.ok(
              shared.message.startsWith('queue name "') &&
                shared.message.endsWith(`" is invalid: ${SQL_RULES[rule]}`),
              `ensure_shared_queue(${describeValue(name)}) names value and rule: ${shared.message}`,
            );
          }
          // adopt_queue: administrative; never adopts what PGMQ does not have.
          const adopted = await expectError(
            'adopt_queue',
            () => c<{ r: string }[]>`select switchyard.adopt_queue(${name}) as r`,
          );
          if (adopted.ok) {
            const [{ r }] = adopted.result as { r: string }[];
            assert.equal(r, 'already registered', `adopt_queue(${describeValue(name)}) -> ${r}`);
          }
          // ensure_flow with a routed shape placing a step on the name.
          const slug = rule === null ? `fuzzFlow${flowNo++}` : 'fuzzFlowInvalid';
          const shape = {
            slug,
            placement: 'routed',
            options: { maxAttempts: 3, baseDelay: 1, timeout: 60 },
            steps: [{
              slug: 'a',
              index: 0,
              dependsOn: [],
              queue: name,
              options: { maxAttempts: null, baseDelay: null, timeout: null, startDelay: 0 },
            }],
          };
          const compiled = await expectError(
            'ensure_flow',
            () => c`select switchyard.ensure_flow(${c.json(shape)}::jsonb) as r`,
          );
          assert.equal(compiled.ok, rule === null, `ensure_flow on ${describeValue(name)}`);
          if (!compiled.ok && LONE_SURROGATE.test(name)) {
            // JSON.stringify writes a lone surrogate as "\ud800", which PostgreSQL's JSON
            // parser refuses (22P02) before the kit's code runs.
            assert.equal(compiled.code, '22P02', compiled.message);
          } else if (!compiled.ok) {
            assert.equal(compiled.code, '22023');
            assert.ok(compiled.message.endsWith(`" is invalid: ${SQL_RULES[rule!]}`));
          }
          // start_flow with the name as a flow or alias: nothing by that name exists.
          const started = await expectError(
            'start_flow',
            () => c`select switchyard.start_flow(${name}, '{}'::jsonb) as r`,
          );
          assert.equal(started.ok, false, `start_flow(${describeValue(name)}) started a run`);
          assert.equal(started.code, '22023');
          assert.ok(started.message.startsWith('unknown flow or alias '), started.message);
        }
      }));
    } finally {
      await Promise.all(conns.map((c) => c.end()));
    }
    assert.deepEqual(unexpected, [], "only the kit's own errors");

    // Nothing was created for an invalid name: only the valid names' queues and flows appear.
    const after = await snapshot(sql);
    const added = (a: string[], b: string[]) => a.filter((x) => !b.includes(x));
    assert.deepEqual(added(after.meta, before.meta).sort(), [...valid].sort());
    assert.deepEqual(added(after.queues, before.queues).sort(), [...valid].sort());
    assert.deepEqual(added(before.meta, after.meta), [], 'no queue was dropped');
    for (const rel of added(after.rels, before.rels)) {
      assert.ok(
        [...valid].some((v) => rel.includes(v)),
        `relation ${describeValue(rel)} belongs to no valid name`,
      );
    }
    assert.ok(after.rels.every((r) => /^[a-z0-9_]+$/.test(r)), 'no relation with a hostile name');
    assert.ok(!after.flows.includes('fuzzFlowInvalid'), 'no flow compiled on an invalid name');
    assert.equal(after.runs, before.runs, 'no run started');
    console.log(
      `fuzz: ${names.length} names (seed ${SEED}), ${invalid} invalid, ${valid.size} valid ` +
        `provisioned`,
    );
  },
});

// ---------------------------------------------------------------------------------------------

Deno.test('forged messages are refused as unsupported, never executed, and never logged', async () => {
  const executions: string[] = [];
  const flow = new Flow<{ text: string }>({ slug: 'hostileV1', maxAttempts: 3 })
    .step({ slug: 'work' }, (input, ctx) => {
      executions.push(ctx.runId);
      return { echoed: input.text };
    });
  const deployed = defineDeployedFlow(routeFlow(flow, { queues: { work: 'hostile_q' } }), {
    alias: 'hostile',
  });
  const lines: string[] = [];
  const logger: WorkerLogger = {
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  };
  const options = {
    ...FAST,
    connectionString: db.url,
    queueName: 'hostile_q' as const,
    logger,
    maxConcurrent: 50,
    batchSize: 50,
  };

  // One real run, so forged bodies can copy a real task's identity.
  const first = await startWorker([deployed], options);
  let realRun: string;
  try {
    [{ id: realRun }] = await sql<{ id: string }[]>`
      select switchyard.start_flow('hostile', '{"text": "real"}'::jsonb)::text as id`;
    await waitFor(
      'the real run',
      async () =>
        (await sql`select 1 from switchyard.runs where run_id = ${realRun} and status = 'completed'`)
          .length === 1,
    );
  } finally {
    await first.stop();
  }
  assert.deepEqual(executions, [realRun]);
  const [real] = await sql<{ message: Record<string, unknown>; msg_id: string }[]>`
    select message, msg_id::text from pgmq.a_hostile_q`;

  const MARKER = `BODY-MARKER-${crypto.randomUUID()}`;
  const forged: { what: string; body: string | null }[] = [
    { what: 'a JSON string', body: JSON.stringify(MARKER) },
    { what: 'a JSON number', body: '42' },
    { what: 'JSON null', body: 'null' },
    { what: 'JSON true', body: 'true' },
    { what: 'an array', body: JSON.stringify([1, MARKER]) },
    { what: 'an empty object', body: '{}' },
    {
      what: 'wrong types',
      body: JSON.stringify({ run_id: 123, flow_slug: [MARKER], step_slug: { x: MARKER } }),
    },
    {
      what: 'an unknown run id',
      body: JSON.stringify({
        run_id: crypto.randomUUID(),
        flow_slug: 'hostileV1',
        step_slug: 'work',
        note: MARKER,
      }),
    },
    {
      what: 'SQL in the body',
      body: JSON.stringify({
        run_id: `'; drop table switchyard.runs; -- ${MARKER}`,
        flow_slug: "hostileV1' or '1'='1",
        step_slug: '$$work$$',
      }),
    },
    {
      what: 'a megabyte payload with the real identity',
      body: JSON.stringify({ ...real.message, pad: MARKER + 'x'.repeat(1024 * 1024) }),
    },
    { what: "a copy of a real task's body", body: JSON.stringify(real.message) },
    { what: 'SQL NULL (no body at all)', body: null },
  ];

  const taskSnapshot = async () =>
    await sql`select run_id, step_slug, status, attempts_count, message_id
                from switchyard.step_tasks order by run_id, step_slug`;
  const tasksBefore = await taskSnapshot();
  const allIds: bigint[] = [];
  for (const m of forged) {
    const [{ id }] = m.body === null
      ? await sql<{ id: string }[]>`
          insert into pgmq.q_hostile_q (vt, message) values (now(), null) returning msg_id::text as id`
      : await sql<{ id: string }[]>`
          select s::text as id from pgmq.send('hostile_q', ${m.body}::jsonb) s`;
    const msgId = BigInt(id);
    allIds.push(msgId);
    lines.length = 0;

    const worker = await startWorker([deployed], options);
    const err = await within(
      30_000,
      'the worker to stop on the unsupported batch (worker.done)',
      worker.done.then(() => null, (e) => e),
    );
    assert.ok(err instanceof UnsupportedWorkError, `${m.what}: ${err}`);
    assert.deepEqual(err.messageIds, [msgId], m.what);
    assert.deepEqual(err.unsupportedPairs, ['(no task)'], m.what);

    // Not executed, not archived, not charged; visible again for an operator to inspect.
    assert.deepEqual(executions, [realRun], `${m.what} was never executed`);
    assert.deepEqual(await taskSnapshot(), tasksBefore, `${m.what} changed no task`);
    const [msg] = await sql<{ visible: boolean }[]>`
      select vt <= now() as visible from pgmq.q_hostile_q where msg_id = ${id}::bigint`;
    assert.equal(msg?.visible, true, `${m.what} is back in the queue, visible`);
    const [{ archived }] = await sql<{ archived: number }[]>`
      select count(*)::int as archived from pgmq.a_hostile_q where msg_id = ${id}::bigint`;
    assert.equal(archived, 0, `${m.what} was not archived`);

    // The pause reason and every log line name the message id, never its body.
    const [fn] = await sql<{ pause_reason: string }[]>`
      select pause_reason from switchyard.worker_functions where function_name = 'hostile-q-worker'`;
    assert.match(fn.pause_reason, new RegExp(`message ids \\[${id}\\]`));
    const [w] = await sql<{ stop_reason: string }[]>`
      select stop_reason from switchyard.workers where worker_id = ${worker.workerId}`;
    for (const text of [fn.pause_reason, w.stop_reason, ...lines, err.message]) {
      assert.ok(!text.includes(MARKER), `${m.what}: a body leaked into ${text.slice(0, 200)}`);
      assert.ok(!text.includes('drop table'), `${m.what}: a body leaked into ${text}`);
      assert.ok(!text.includes('"text"'), `${m.what}: a body leaked into ${text}`);
    }
    assert.equal(lines.filter((l) => l.startsWith('error ')).length, 1, 'one fatal error line');

    // Out of the way for the next case: resume, and delete the forged message by hand.
    await sql`select switchyard.resume_function('hostile-q-worker')`;
    await sql`select pgmq.delete('hostile_q', ${id}::bigint)`;
  }

  // All of them at once: one refused batch, every id listed in order, still nothing run.
  const again: bigint[] = [];
  for (const m of forged) {
    const [{ id }] = m.body === null
      ? await sql<{ id: string }[]>`
          insert into pgmq.q_hostile_q (vt, message) values (now(), null) returning msg_id::text as id`
      : await sql<
        { id: string }[]
      >`select s::text as id from pgmq.send('hostile_q', ${m.body}::jsonb) s`;
    again.push(BigInt(id));
  }
  const classes = await sql<{ class: string }[]>`
    select class from switchyard.classify_batch('hostile_q', ${pgArray(again)}::bigint[],
      switchyard.pair_set(${pgArray(['hostileV1/work'])}::text[]))`;
  assert.deepEqual(classes.map((c) => c.class), again.map(() => 'unsupported'));
  lines.length = 0;
  const worker = await startWorker([deployed], options);
  const err = await within(
    30_000,
    'the worker to stop on the unsupported batch (worker.done)',
    worker.done.then(() => null, (e) => e),
  );
  assert.ok(err instanceof UnsupportedWorkError);
  assert.deepEqual(err.messageIds, again);
  assert.deepEqual(executions, [realRun]);
  assert.deepEqual(await taskSnapshot(), tasksBefore);
  const [{ queued }] = await sql<{ queued: number }[]>`
    select count(*)::int as queued from pgmq.q_hostile_q where vt <= now()`;
  assert.equal(queued, forged.length, 'every forged message is visible again');
  const [fn] = await sql<{ pause_reason: string }[]>`
    select pause_reason from switchyard.worker_functions where function_name = 'hostile-q-worker'`;
  for (const text of [fn.pause_reason, ...lines]) assert.ok(!text.includes(MARKER));
  assert.equal(fn.pause_reason.match(/message ids \[([^\]]*)\]/)?.[1], again.join(', '));
  assert.ok(allIds.every((id) => !again.includes(id)), 'the earlier, deleted ids are gone');
});

// ---------------------------------------------------------------------------------------------
// Thrown values no formatter can print (docs/design/worker.md#worker-states-and-parts: the
// executor).

Deno.test('a handler throwing an unprintable value fails its attempt; the worker keeps running', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: PromiseRejectionEvent) => {
    e.preventDefault();
    unhandled.push(e.reason);
  };
  globalThis.addEventListener('unhandledrejection', onUnhandled);
  const hostileProxy = new Proxy({}, {
    get() {
      throw new Error('get trap');
    },
    getPrototypeOf() {
      throw new Error('getPrototypeOf trap');
    },
    ownKeys() {
      throw new Error('ownKeys trap');
    },
  });
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const badMessage = new Error('x');
  Object.defineProperty(badMessage, 'message', {
    get() {
      throw new Error('message getter');
    },
  });
  const throws: Record<string, () => unknown> = {
    nullPrototypeBigint: () => Object.assign(Object.create(null), { x: 1n }),
    hostileProxy: () => hostileProxy,
    revokedProxy: () => revoked.proxy,
    throwingMessage: () => badMessage,
    symbol: () => Symbol('s'),
  };
  const flow = new Flow<{ kind: string }>({ slug: 'unprintable', maxAttempts: 1 })
    .step({ slug: 'work' }, (input) => {
      const make = throws[input.kind];
      if (make) throw make();
      return { ok: input.kind };
    });
  const client = untypedClient(db.url);
  const worker = await startWorker(flow, { ...FAST, connectionString: db.url, logger: SILENT });
  try {
    for (const kind of Object.keys(throws)) {
      const run = await client.startFlow('unprintable', { kind });
      const status = await client.waitForRun(run, { timeoutMs: 20_000 });
      assert.equal(status.status, 'failed', kind);
      assert.match(status.error ?? '', /step work failed after 1 attempt\(s\): /, kind);
    }
    // Still running: the same worker completes ordinary work afterwards.
    const fine = await client.startFlow('unprintable', { kind: 'fine' });
    assert.equal((await client.waitForRun(fine)).status, 'completed');
    assert.equal(worker.state, 'running');
    const [row] = await sql`select stopped_at from switchyard.workers
                             where worker_id = ${worker.workerId}`;
    assert.equal(row.stopped_at, null);
    assert.deepEqual(unhandled, [], 'no rejection escaped the worker');
  } finally {
    await worker.stop();
    await client.close();
    globalThis.removeEventListener('unhandledrejection', onUnhandled);
  }
  const [row] = await sql`select stopped_at from switchyard.workers
                           where worker_id = ${worker.workerId}`;
  assert.ok(row.stopped_at, 'the stop is recorded');
});

// ---------------------------------------------------------------------------------------------
// Values JSON allows and PostgreSQL cannot store: U+0000 and lone surrogates.

Deno.test('an output or error PostgreSQL cannot store fails each attempt once, naming the path', async () => {
  const executions: string[] = [];
  const outputs: Record<string, () => unknown> = {
    nulInValue: () => ({ nested: { text: 'a\u0000b' } }),
    nulInKey: () => ({ list: [1, { ['k\u0000']: 1 }] }),
    loneHighSurrogate: () => ({ text: 'x\ud800' }),
    loneLowSurrogateKey: () => ({ ['\udc00']: true }),
    topLevelString: () => '\u0000',
  };
  const expected: Record<string, string> = {
    nulInValue: 'output of storable/work.nested.text',
    nulInKey: 'output of storable/work.list[1]["k\\u0000"]',
    loneHighSurrogate: 'output of storable/work.text',
    loneLowSurrogateKey: 'output of storable/work["\\udc00"]',
    topLevelString: 'output of storable/work',
  };
  const flow = new Flow<{ kind: string }>({ slug: 'storable', maxAttempts: 2, baseDelay: 0 })
    .step({ slug: 'work' }, (input, ctx) => {
      executions.push(`${input.kind}#${ctx.attempt}`);
      if (input.kind === 'badError') throw new Error('half \ud800 and a nul \u0000 here');
      return outputs[input.kind]?.() ?? 'fine';
    });
  const client = untypedClient(db.url);
  const worker = await startWorker(flow, { ...FAST, connectionString: db.url, logger: SILENT });
  try {
    for (const kind of Object.keys(outputs)) {
      const run = await client.startFlow('storable', { kind });
      const status = await client.waitForRun(run, { timeoutMs: 20_000 });
      assert.equal(status.status, 'failed', kind);
      assert.ok(
        status.error?.includes(`${expected[kind]} is not JSON PostgreSQL can store`),
        `${kind}: ${status.error}`,
      );
      assert.deepEqual(
        executions.filter((e) => e.startsWith(`${kind}#`)),
        [`${kind}#1`, `${kind}#2`],
        `${kind}: one execution per attempt, never a rerun after a timeout`,
      );
    }
    // The error text itself is made storable: escaped NUL, replaced lone surrogate.
    const run = await client.startFlow('storable', { kind: 'badError' });
    const status = await client.waitForRun(run, { timeoutMs: 20_000 });
    assert.equal(status.status, 'failed');
    assert.match(status.error ?? '', /Error: half \ufffd and a nul \\u0000 here\n {4}at /);
    assert.deepEqual(executions.filter((e) => e.startsWith('badError#')), [
      'badError#1',
      'badError#2',
    ]);
    // Flow inputs get the same check before they are sent.
    await assert.rejects(
      client.startFlow('storable', { kind: 'x\u0000' }),
      /input\.kind is not JSON PostgreSQL can store/,
    );
    assert.equal(worker.state, 'running');
  } finally {
    await worker.stop();
    await client.close();
  }
});

Deno.test('an output the database refuses for another reason fails its attempt, never a rerun', async () => {
  // A refusal the TypeScript check cannot foresee, here a constraint added for the test.
  await sql`alter table switchyard.step_tasks add constraint test_no_evil
              check (output is null or not output ? 'evil')`;
  const executions: number[] = [];
  const flow = new Flow<{ evil: boolean }>({ slug: 'refusedOutput', maxAttempts: 2, baseDelay: 0 })
    .step({ slug: 'work' }, (input, ctx) => {
      executions.push(ctx.attempt);
      return input.evil ? { evil: true } : { fine: true };
    });
  const client = untypedClient(db.url);
  const worker = await startWorker(flow, {
    ...FAST,
    connectionString: db.url,
    logger: SILENT,
    maxConcurrent: 4,
  });
  try {
    // Alongside good completions, so the batch path falls back to item by item.
    const runs = await Promise.all(
      [true, false, false, false].map((evil) => client.startFlow('refusedOutput', { evil })),
    );
    const statuses = await Promise.all(
      runs.map((r) => client.waitForRun(r, { timeoutMs: 20_000 })),
    );
    assert.deepEqual(statuses.map((s) => s.status), [
      'failed',
      'completed',
      'completed',
      'completed',
    ]);
    assert.match(statuses[0].error ?? '', /the database refused the output: .*test_no_evil/);
    assert.equal(executions.filter((a) => a === 2).length, 1, 'the evil task ran twice in all');
    assert.equal(executions.length, 5, 'one execution per attempt');
  } finally {
    await worker.stop();
    await client.close();
    await sql`alter table switchyard.step_tasks drop constraint test_no_evil`;
  }
});

Deno.test('a handler whose abort listener throws cannot end the process, on timeout or on shutdown', async () => {
  // Seen, not handled, here: an error nobody prevents ends the test process (it did before).
  const reported: ErrorEvent[] = [];
  const onError = (e: ErrorEvent) => void reported.push(e);
  globalThis.addEventListener('error', onError);
  let started = 0;
  // A timeout of 3 s: the stopped instance (which may wait out its 1 s poll) stays well within it,
  // since the time on every instance counts toward the step timeout.
  const flow = new Flow<{ n: number }>({ slug: 'abortListener', maxAttempts: 1, timeout: 3 })
    .step({ slug: 'work' }, async (_input, ctx) => {
      started++;
      ctx.signal.addEventListener('abort', () => {
        throw new Error('the listener throws');
      });
      await new Promise((r) => ctx.signal.addEventListener('abort', r));
      throw ctx.signal.reason;
    });
  const client = untypedClient(db.url);
  const worker = await startWorker(flow, {
    ...FAST,
    connectionString: db.url,
    logger: SILENT,
    shutdownGraceMs: 100,
  });
  try {
    const timedOut = await client.startFlow('abortListener', { n: 1 });
    const status = await client.waitForRun(timedOut, { timeoutMs: 20_000 });
    assert.equal(status.status, 'failed');
    assert.match(status.error ?? '', /timed out after 3s/);
    const cut = await client.startFlow('abortListener', { n: 2 });
    await waitFor('the second handler to run', () => started === 2);
    await worker.stop();
    const [t] = await sql`select status, attempts_count from switchyard.step_tasks
                           where run_id = ${cut}`;
    assert.deepEqual({ ...t }, { status: 'queued', attempts_count: 0 }, 'released on shutdown');
    assert.equal(reported.length, 2, 'the listener threw on timeout and on shutdown');
    assert.ok(reported.every((e) => e.defaultPrevented), 'the worker handled both');
  } finally {
    await worker.stop();
    await client.close();
    globalThis.removeEventListener('error', onError);
  }
});

// ---------------------------------------------------------------------------------------------
// Quarantine: the explicit way past foreign messages that paused a function.

const ROOT = new URL('../..', import.meta.url).pathname;

Deno.test('deno task quarantine moves exactly the foreign messages named in the pause, keeps their bodies, then resumes', async () => {
  const flow = new Flow<{ text: string }>({ slug: 'quarantineV1' })
    .step({ slug: 'work' }, (input) => ({ echoed: input.text }));
  const deployed = defineDeployedFlow(routeFlow(flow, { queues: { work: 'quar_q' } }), {
    alias: 'quarantine',
  });
  const options = {
    ...FAST,
    connectionString: db.url,
    queueName: 'quar_q' as const,
    logger: SILENT,
  };
  // Compile the flow (and register the function) first.
  await (await startWorker([deployed], options)).stop();
  const MARKER = `QUARANTINE-BODY-${crypto.randomUUID()}`;
  const [{ id: a }] = await sql<{ id: string }[]>`
    select s::text as id from pgmq.send('quar_q', ${
    JSON.stringify({ secret: MARKER })
  }::text::jsonb) s`;
  const [{ id: b }] = await sql<{ id: string }[]>`
    insert into pgmq.q_quar_q (vt, message, headers) values (now(), null, '{"h": 1}')
    returning msg_id::text as id`;
  const worker = await startWorker([deployed], options);
  const err = await within(
    30_000,
    'the worker to stop on the unsupported batch (worker.done)',
    worker.done.then(() => null, (e) => e),
  );
  assert.ok(err instanceof UnsupportedWorkError, String(err));
  assert.deepEqual(err.messageIds, [BigInt(a), BigInt(b)]);
  // Never automatic: both are still in the queue, and the pause names them structurally.
  const [fn] = await sql`select paused_at, pause_detail from switchyard.worker_functions
                          where function_name = 'quar-q-worker'`;
  assert.ok(fn.paused_at);
  assert.deepEqual(fn.pause_detail.message_ids, [a, b]);
  const [{ left }] = await sql`select count(*)::int as left from pgmq.q_quar_q`;
  assert.equal(left, 2);
  // A foreign message that arrived after the pause is not named, so it is not moved.
  const [{ id: later }] = await sql<{ id: string }[]>`
    select s::text as id from pgmq.send('quar_q', '{"later": true}'::jsonb) s`;

  const command = (...args: string[]) =>
    deno(['task', 'quarantine', ...args], { cwd: ROOT, env: { DATABASE_URL: db.url } });
  const out = await command('quar-q-worker');
  const text = out.stdout + out.stderr;
  assert.equal(out.code, 0, text);
  assert.match(
    text,
    new RegExp(`quarantined 2 message\\(s\\) of queue "quar_q".*\\[${a}, ${b}\\]`),
  );
  assert.match(text, /resumed function "quar-q-worker"/);
  assert.ok(!text.includes(MARKER), 'a body never reaches the output');

  const moved = await sql`select msg_id::text, message, headers, function_name, pause_reason
                            from switchyard.quarantined_messages where queue_name = 'quar_q'
                           order by msg_id`;
  assert.deepEqual(moved.map((m) => m.msg_id), [a, b]);
  assert.deepEqual(moved[0].message, { secret: MARKER }, 'the body is kept for inspection');
  assert.equal(moved[1].message, null);
  assert.deepEqual(moved[1].headers, { h: 1 });
  assert.ok(moved.every((m) => m.function_name === 'quar-q-worker' && m.pause_reason));
  const inQueue = await sql`select msg_id::text from pgmq.q_quar_q order by msg_id`;
  assert.deepEqual(inQueue.map((m) => m.msg_id), [later], 'only the unnamed message is left');
  const [after] = await sql`select paused_at, pause_reason, pause_detail
                              from switchyard.worker_functions where function_name = 'quar-q-worker'`;
  assert.deepEqual({ ...after }, { paused_at: null, pause_reason: null, pause_detail: null });

  // Run again: nothing is paused, so nothing moves (exit 1, the rule named).
  const again = await command('quar-q-worker');
  assert.equal(again.code, 1);
  assert.match(again.stderr, /is not paused: nothing to quarantine/);

  // The function works again once the later foreign message is out of the way too.
  await sql`select pgmq.delete('quar_q', ${later}::bigint)`;
  const client = untypedClient(db.url);
  const fresh = await startWorker([deployed], options);
  try {
    const run = await client.startFlow('quarantine', { text: 'after' });
    assert.equal((await client.waitForRun(run)).status, 'completed');
  } finally {
    await fresh.stop();
    await client.close();
  }
});

Deno.test("quarantine never moves a real task's message: a registry lacking a version keeps the pause", async () => {
  const v1 = new Flow<{ n: number }>({ slug: 'quarMixV1' }).step({ slug: 'work' }, (i) => i.n);
  const v2 = new Flow<{ n: number }>({ slug: 'quarMixV2' }).step({ slug: 'work' }, (i) => i.n);
  for (const f of [v1, v2]) {
    await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(routeFlow(f, { queues: { work: 'quar_mix_q' } })).shape as never)
    }::jsonb)`;
  }
  // A worker whose registry has v1 only meets a v2 task and a foreign message in one batch.
  const w = crypto.randomUUID();
  await sql`select switchyard.register_worker(${w}::uuid, 'quar_mix_q', 'quar-mix-q-worker',
    array['quarMixV1/work'])`;
  const [{ id: run }] =
    await sql`select switchyard.start_flow('quarMixV2', '{"n": 1}'::jsonb) as id`;
  const [task] = await sql<{ message_id: string }[]>`
    select message_id::text from switchyard.step_tasks where run_id = ${run}`;
  const [{ id: foreign }] = await sql<{ id: string }[]>`
    select s::text as id from pgmq.send('quar_mix_q', '{"x": 1}'::jsonb) s`;
  const claims = await sql`select disposition from switchyard.start_tasks('quar_mix_q',
    ${pgArray([task.message_id, foreign])}::bigint[], ${w}::uuid, null)`;
  assert.deepEqual(claims.map((c) => c.disposition), ['unsupported', 'unsupported']);

  const client = untypedClient(db.url);
  try {
    const result = await quarantineMessages(client, 'quar-mix-q-worker');
    assert.deepEqual(result.quarantined, [BigInt(foreign)]);
    assert.deepEqual(result.withTask, [{
      messageId: BigInt(task.message_id),
      pair: 'quarMixV2/work',
    }]);
    assert.equal(result.resumed, false, 'resuming would pause again on the same task');
    // The task and its message are untouched; the pause stays, with the same reason.
    const [t] = await sql`select status, attempts_count, message_id::text from switchyard.step_tasks
                           where run_id = ${run}`;
    assert.deepEqual({ ...t }, {
      status: 'queued',
      attempts_count: 0,
      message_id: task.message_id,
    });
    const [{ present }] = await sql`select count(*)::int as present from pgmq.q_quar_mix_q
                                     where msg_id = ${task.message_id}::bigint`;
    assert.equal(present, 1);
    const [fn] = await sql`select paused_at from switchyard.worker_functions
                            where function_name = 'quar-mix-q-worker'`;
    assert.ok(fn.paused_at);
    // Again: the foreign message is gone now, the task's stays, still no resume.
    const again = await quarantineMessages(client, 'quar-mix-q-worker');
    assert.deepEqual([again.quarantined, again.gone, again.resumed], [
      [],
      [BigInt(foreign)],
      false,
    ]);
    // An operator's own pause names no messages: nothing to quarantine, the rule named.
    await sql`select switchyard.resume_function('quar-mix-q-worker')`;
    await sql`select switchyard.pause_function('quar-mix-q-worker', 'maintenance')`;
    await assert.rejects(
      quarantineMessages(client, 'quar-mix-q-worker'),
      /paused by an operator \(maintenance\), naming no messages: resume it with deno task resume/,
    );
    await assert.rejects(quarantineMessages(client, 'no-such-worker'), UnknownFunctionError);
  } finally {
    await client.close();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
