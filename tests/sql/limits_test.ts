/**
 * Access and limits (issue 10, items 10-12, 14, 15; docs/design/limits.md): later routines in
 * schema switchyard stay private; flow input, step output, function names and pause reasons are
 * refused over their limits with their size and the limit; the keep-alive's base URL is https://
 * (http:// for loopback) without userinfo or whitespace, and its bearer goes to the configured
 * host only; alias refusals name the value and the rule; a worker opens `maxConnections`
 * connections and its heartbeat does not starve. Real PostgreSQL, real workers.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { jsonTextBytes } from '../../lib/dsl/json.ts';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError, WorkerConfigError } from '../../lib/errors.ts';
import { Flow, type JsonValue, routeFlow, startWorker } from '../../lib/mod.ts';
import { keepAlive, keepAliveCommand, pauseFunction } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { resolveSettings } from '../../lib/worker/settings.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const base = { connectionString: db.url, ...FAST };
const MiB = 1024 * 1024;

/** The refusal a SQL call raises: SQLSTATE, message, detail (the JSON object in DETAIL). */
async function refusal(
  run: () => Promise<unknown>,
): Promise<{ code: string; message: string; detail: Record<string, unknown> }> {
  try {
    await run();
  } catch (e) {
    const err = e as { code?: string; message?: string; detail?: string };
    let detail: Record<string, unknown> = {};
    if (e instanceof OperationError) detail = { ...e.detail };
    else if (typeof err.detail === 'string' && err.detail.startsWith('{')) {
      detail = JSON.parse(err.detail);
    }
    return { code: String(err.code), message: String(err.message), detail };
  }
  throw new Error('expected a refusal, but the call succeeded');
}

/** Compiles a one-step routed flow (no worker needed to start runs of it). */
async function compiled(slug: string, queue: string) {
  const flow = new Flow<unknown>({ slug, maxAttempts: 2, baseDelay: 1 })
    .step({ slug: 'work' }, () => null);
  const shape = toPlacement(routeFlow(flow, { queues: { work: queue } })).shape;
  await sql`select switchyard.ensure_flow(${sql.json(shape as never)}::jsonb)`;
  return flow;
}

const count = async (q: Promise<{ n: number }[]>) => (await q)[0].n;

// ---------------------------------------------------------------------------------------------
// Item 10: privileges of routines created later

Deno.test('routines created in schema switchyard after the migrations are not executable by anon or authenticated', async () => {
  // As Supabase has them; the test runner creates them too.
  for (const role of ['anon', 'authenticated']) {
    await sql.unsafe(
      `do $$ begin create role ${role} nologin; exception when duplicate_object then null; end $$`,
    );
  }
  await sql.unsafe(`create function switchyard.later_helper(n int) returns int
                      language sql as 'select n + 1'`);
  await sql.unsafe(`create procedure switchyard.later_proc() language sql as 'select 1'`);
  const rows = await sql<{ role: string; routine: string; allowed: boolean }[]>`
    select r.role, p.routine, has_function_privilege(r.role, p.routine, 'execute') as allowed
      from unnest(array['anon', 'authenticated']) as r(role)
     cross join unnest(array['switchyard.later_helper(int)', 'switchyard.later_proc()',
                             'switchyard.start_flow(text, jsonb, uuid, uuid, timestamptz, '
                             'timestamptz, text, text, int, int, int, text, int, text, jsonb)']) as p(routine)`;
  assert.equal(rows.length, 6);
  assert.deepEqual(rows.filter((r) => r.allowed), [], 'anon and authenticated execute nothing');
  const [acl] = await sql<{ acl: string | null }[]>`
    select proacl::text as acl from pg_proc where oid = 'switchyard.later_helper(int)'::regprocedure`;
  assert.ok(acl.acl !== null && !/(^|[{,])=X/.test(acl.acl), `no EXECUTE for PUBLIC: ${acl.acl}`);
  // And calling it as anon fails.
  const asAnon = await refusal(() =>
    sql.begin(async (tx) => {
      await tx`set local role anon`;
      await tx`select switchyard.later_helper(1)`;
    })
  );
  assert.equal(asAnon.code, '42501', asAnon.message);
});

// ---------------------------------------------------------------------------------------------
// Item 11: limits

Deno.test('a flow input over max_input_bytes is refused at start_flow with its size and the limit', async () => {
  await compiled('bigInputV1', 'big_input');
  const runs = () =>
    count(sql`select count(*)::int as n from switchyard.runs
                               where flow_slug = 'bigInputV1'`);
  // A JSON string of n characters is n + 2 bytes of JSON text.
  const atLimit = 'x'.repeat(MiB - 2);
  await client.startFlow('bigInputV1', atLimit);
  assert.equal(await runs(), 1, 'exactly the limit is accepted');
  for (
    const [input, size] of [
      ['x'.repeat(MiB - 1), MiB + 1],
      [{ blob: 'é'.repeat(MiB / 2) }, MiB + 12], // two bytes each, plus {"blob": ""}
      ['x'.repeat(10 * MiB), 10 * MiB + 2],
    ] as const
  ) {
    const r = await refusal(() => client.startFlow('bigInputV1', input));
    assert.equal(r.code, '22023');
    assert.equal(
      r.message,
      `start_flow("bigInputV1"): input is ${size} bytes of JSON, over the limit of ${MiB} bytes ` +
        '(setting max_input_bytes)',
    );
    assert.equal(r.detail.rule, 'max_input_bytes');
    assert.equal(r.detail.argument, 'input');
    assert.equal(r.detail.size, size);
    assert.equal(r.detail.limit, MiB);
    assert.ok(String(r.detail.value).length <= 200, 'the detail carries a bounded excerpt');
  }
  assert.equal(await runs(), 1, 'no refused run was created');

  // The limit is a setting (64 KiB to 100 MiB).
  await sql`select switchyard.set_setting('max_input_bytes', '65536')`;
  try {
    const r = await refusal(() => client.startFlow('bigInputV1', 'y'.repeat(70_000)));
    assert.match(r.message, /input is 70002 bytes of JSON, over the limit of 65536 bytes/);
    for (const bad of ['1', '65535', '104857601', '-1', 'abc', '1e6', ' 65536', '9999999999']) {
      const s = await refusal(() => sql`select switchyard.set_setting('max_input_bytes', ${bad})`);
      assert.equal(s.code, '22023', bad);
      assert.equal(
        s.message,
        `setting max_input_bytes ${JSON.stringify(bad)} is invalid: use a number of bytes from ` +
          '65536 (64 KiB) to 104857600 (100 MiB)',
      );
    }
    const [{ limits }] = await sql<{ limits: Record<string, number> }[]>`
      select switchyard.limits() as limits`;
    assert.deepEqual(limits, {
      max_input_bytes: 65536,
      max_output_bytes: MiB,
      max_function_name_chars: 63,
      max_reason_chars: 1000,
      max_map_output_bytes: 16 * MiB,
      user_runs_per_minute: 60,
      max_progress_bytes: 8192,
      progress_per_second: 20,
    });
  } finally {
    await sql`select switchyard.set_setting('max_input_bytes', null)`;
  }
});

Deno.test('a step output over max_output_bytes fails its attempt with its size and the limit; a smaller retry completes', async () => {
  const attempts: number[] = [];
  const flow = new Flow<{ n: number }>({ slug: 'bigOutputV1', maxAttempts: 2, baseDelay: 1 })
    .step({ slug: 'render' }, (_input, ctx) => {
      attempts.push(ctx.attempt);
      return ctx.attempt === 1 ? { page: 'p'.repeat(MiB) } : { page: 'small' };
    });
  const worker = await startWorker(flow, base);
  try {
    const runId = await client.startFlow('bigOutputV1', { n: 1 });
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { render: { page: 'small' } });
    assert.deepEqual(attempts, [1, 2], 'the big output was never stored; the retry ran once');
    const [task] = await sql<{ error: string; attempts_count: number }[]>`
      select error, attempts_count from switchyard.step_tasks where run_id = ${runId}`;
    assert.equal(task.attempts_count, 2);
    assert.match(
      task.error,
      /^SwitchyardError: the output of step "render" is 1048588 bytes of JSON, over the limit of 1048576 bytes \(setting max_output_bytes\)/,
    );
  } finally {
    await worker.stop();
  }
});

Deno.test('complete_tasks refuses an output over the limit from a caller without the worker check', async () => {
  await compiled('rawOutputV1', 'raw_output');
  const workerId = crypto.randomUUID();
  await sql`select switchyard.register_worker(${workerId}::uuid, 'raw_output', 'raw-output-worker',
    ${pgArray(['rawOutputV1/work'])}::text[])`;
  const [{ id: runId }] = await sql<{ id: string }[]>`
    select switchyard.start_flow('rawOutputV1', '{}'::jsonb)::text as id`;
  const [{ msg }] = await sql<{ msg: string }[]>`
    select message_id::text as msg from switchyard.step_tasks where run_id = ${runId}`;
  const claims = await sql<{ disposition: string }[]>`
    select disposition from switchyard.start_tasks('raw_output', ${pgArray([msg])}::bigint[],
      ${workerId}::uuid, null)`;
  assert.deepEqual(claims.map((c) => c.disposition), ['claimed']);
  const small = { run_id: runId, step_slug: 'work', attempt: 1, output: 'ok' };
  const big = { ...small, output: 'z'.repeat(2 * MiB) };
  for (
    const call of [
      () => sql`select ok from switchyard.complete_tasks(${sql.json([big] as never)}::jsonb)`,
      () =>
        sql`select switchyard.complete_task(${runId}::uuid, 'work', 1,
          ${sql.json(big.output as never)}::jsonb)`,
    ]
  ) {
    const r = await refusal(call);
    assert.equal(r.code, '22023');
    assert.equal(
      r.message,
      `complete_tasks: the output of step "work" of run ${runId} is ${2 * MiB + 2} bytes of ` +
        `JSON, over the limit of ${MiB} bytes (setting max_output_bytes)`,
    );
    assert.equal(r.detail.rule, 'max_output_bytes');
    assert.equal(r.detail.size, 2 * MiB + 2);
    assert.equal(r.detail.limit, MiB);
  }
  const [task] = await sql<{ status: string; output: unknown }[]>`
    select status, output from switchyard.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...task }, { status: 'started', output: null }, 'nothing was written');
  // The same attempt may still complete with a value that fits.
  const [{ ok }] = await sql<{ ok: boolean }[]>`
    select ok from switchyard.complete_tasks(${sql.json([small] as never)}::jsonb)`;
  assert.equal(ok, true);
});

Deno.test('jsonTextBytes counts exactly what octet_length(value::jsonb::text) counts', async () => {
  const values: JsonValue[] = [
    null,
    true,
    false,
    0,
    -0,
    7,
    -12.5,
    0.1,
    1e21,
    -1.5e-7,
    1.7976931348623157e308,
    5e-324,
    123456789012345680000,
    '',
    'plain',
    'é 日本 🚀',
    'quote " backslash \\ slash /',
    '\u0001\u001f\b\f\n\r\t\u007f\u2028',
    [],
    {},
    [1, [2, [3, []]], {}],
    { b: 1, a: { z: [true, null], y: 'x' }, 'ключ': 'значение', '': '' },
    { big: Array.from({ length: 50 }, (_, i) => ({ i, s: 'x'.repeat(i), f: i / 7 })) },
  ];
  for (const value of values) {
    const [{ bytes }] = await sql<{ bytes: number }[]>`
      select octet_length(((${JSON.stringify(value)}::text)::jsonb)::text)::int as bytes`;
    assert.equal(jsonTextBytes(value), bytes, JSON.stringify(value).slice(0, 80));
  }
});

Deno.test('register_function refuses a 100,000-character name and a queue that exists nowhere; pause_function a 1 MB reason', async () => {
  const longName = 'a'.repeat(100_000);
  const tooLong = await refusal(() =>
    sql`select switchyard.register_function(${longName}, 'anything')`
  );
  assert.equal(tooLong.code, '22023');
  assert.equal(
    tooLong.message,
    `function name "${'a'.repeat(80)}"... (100000 characters) is 100000 characters long, over ` +
      'the limit of 63 characters',
  );
  assert.equal(tooLong.detail.rule, 'max_function_name_chars');
  assert.equal(tooLong.detail.size, 100_000);
  assert.equal(tooLong.detail.limit, 63);
  // 63 is fine, 64 is not; the same rule at worker registration and in TypeScript.
  await sql`select switchyard.ensure_shared_queue('named_q')`;
  await sql`select switchyard.register_function(${'f'.repeat(63)}, 'named_q')`;
  assert.match(
    (await refusal(() => sql`select switchyard.register_function(${'f'.repeat(64)}, 'named_q')`))
      .message,
    /is 64 characters long, over the limit of 63 characters/,
  );
  assert.match(
    (await refusal(() =>
      sql`select switchyard.register_worker(gen_random_uuid(), 'named_q', ${longName}, '{}')`
    )).message,
    /is 100000 characters long, over the limit of 63 characters/,
  );
  const flow = await compiled('namedV1', 'named_q');
  await assert.rejects(
    startWorker([routeFlow(flow, { queues: { work: 'named_q' } })], {
      ...base,
      queueName: 'named_q',
      functionName: 'g'.repeat(64),
    }),
    (e) =>
      e instanceof WorkerConfigError &&
      e.message === `functionName "${'g'.repeat(64)}" is 64 characters long, over the limit of ` +
          '63 characters',
  );

  // A queue in no catalog row: not compiled, not provisioned.
  for (const queue of ['nowhere_q', 'classify_threads']) {
    const unknown = await refusal(() =>
      sql`select switchyard.register_function('nowhere-worker', ${queue})`
    );
    assert.equal(unknown.code, '22023');
    assert.match(
      unknown.message,
      new RegExp(
        `^function "nowhere-worker": queue "${queue}" is unknown: it is not in the queue ` +
          'catalog \\(switchyard.queues\\)',
      ),
    );
    assert.equal(unknown.detail.rule, 'queue_unknown');
  }
  // A PGMQ queue the catalog does not know is not enough either.
  await sql`select pgmq.create('foreign_q')`;
  assert.equal(
    (await refusal(() => sql`select switchyard.register_function('foreign-worker', 'foreign_q')`))
      .detail.rule,
    'queue_unknown',
  );
  assert.equal(
    await count(sql`select count(*)::int as n from switchyard.worker_functions
                     where function_name in ('nowhere-worker', 'foreign-worker')`),
    0,
  );

  // Pause reasons: at most 1000 characters; a megabyte is refused with its size.
  await sql`select switchyard.register_function('pausable-limits', 'named_q')`;
  const huge = 'r'.repeat(MiB);
  const r = await refusal(() => pauseFunction(client, 'pausable-limits', huge));
  assert.equal(r.code, '22023');
  assert.equal(
    r.message,
    `pause_function("pausable-limits"): the reason is ${MiB} characters long, over the limit of ` +
      '1000 characters; say why in fewer words and keep the details elsewhere',
  );
  assert.equal(r.detail.rule, 'max_reason_chars');
  assert.ok(r.message.length < 300);
  const [fn] = await sql<{ paused_at: Date | null }[]>`
    select paused_at from switchyard.worker_functions where function_name = 'pausable-limits'`;
  assert.equal(fn.paused_at, null, 'not paused');
  assert.equal((await pauseFunction(client, 'pausable-limits', 'q'.repeat(1000))).changed, true);
});

Deno.test('fuzzed function names and pause reasons: each refused with its rule or stored exactly', async () => {
  const seed = Number(Deno.env.get('SWITCHYARD_FUZZ_SEED') ?? Math.floor(Math.random() * 2 ** 31));
  const context = `(seed ${seed}; replay with SWITCHYARD_FUZZ_SEED=${seed})`;
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const VALID = [...'abcdefghijklmnopqrstuvwxyz0123456789_-'];
  const HOSTILE = [
    ...'AZ \t\n\r\'";%$\\/.@',
    'é',
    'İ',
    '\u212a',
    '🚀',
    '\u200b',
    '\ufeff',
    '\ud800',
  ];
  const name = () => {
    const len = pick([1, 2, 47, 54, 62, 63, 64, 65, 100, 1000, 100_000]);
    let out = pick([...'abcxyz']);
    while (out.length < len) out += rand() < 0.97 ? pick(VALID) : pick(HOSTILE);
    return rand() < 0.2 ? pick(HOSTILE) + out.slice(1) : out;
  };
  await sql`select switchyard.ensure_shared_queue('fuzz_names_q')`;
  const accepted = new Set<string>();
  for (let i = 0; i < 200; i++) {
    // A lone surrogate reaches PostgreSQL as U+FFFD (UTF-8 has no lone surrogates).
    const fn = name().replace(/[\ud800-\udfff]/g, '\ufffd');
    const valid = /^[a-z][a-z0-9_-]*$/.test(fn) && fn.length <= 63;
    try {
      await sql`select switchyard.register_function(${fn}, 'fuzz_names_q')`;
      assert.ok(valid, `${JSON.stringify(fn.slice(0, 80))} was accepted ${context}`);
      accepted.add(fn);
    } catch (e) {
      const err = e as { code?: string; message: string; detail?: string };
      assert.ok(
        !valid,
        `${JSON.stringify(fn.slice(0, 80))} was refused: ${err.message} ${context}`,
      );
      assert.equal(err.code, '22023', `${err.message} ${context}`);
      const rule = JSON.parse(err.detail!).rule;
      assert.equal(
        rule,
        /^[a-z][a-z0-9_-]*$/.test(fn) ? 'max_function_name_chars' : 'function_name_format',
        context,
      );
      // A size refusal shows the value cut; a format refusal names it whole (SQL errors' rule).
      if (rule === 'max_function_name_chars') {
        assert.ok(err.message.length < 300, `a bounded message ${context}`);
      }
    }
  }
  const [{ names }] = await sql<{ names: string[] }[]>`
    select coalesce(array_agg(function_name order by 1), '{}') as names
      from switchyard.worker_functions where queue_name = 'fuzz_names_q'`;
  assert.deepEqual([...names].sort(), [...accepted].sort(), `exactly the valid names ${context}`);

  // Reasons: any non-blank text up to 1000 characters is stored exactly; longer is refused.
  await sql`select switchyard.register_function('fuzz-reasons', 'fuzz_names_q')`;
  for (let i = 0; i < 100; i++) {
    const len = pick([1, 10, 999, 1000, 1001, 5000]);
    let reason = pick([...'rR']);
    while (reason.length < len) reason += rand() < 0.7 ? pick(VALID) : pick(HOSTILE);
    reason = reason.replace(/[\ud800-\udfff]/g, '\ufffd');
    try {
      const result = await pauseFunction(client, 'fuzz-reasons', reason);
      assert.ok(
        reason.length <= 1000,
        `a ${reason.length}-character reason was accepted ${context}`,
      );
      assert.equal(result.reason, reason, context);
      await sql`select switchyard.resume_function('fuzz-reasons')`;
    } catch (e) {
      assert.ok(e instanceof OperationError, `${e} ${context}`);
      assert.ok(reason.length > 1000, `${e.message} ${context}`);
      assert.equal(e.detail.rule, 'max_reason_chars');
      assert.equal(e.detail.size, reason.length);
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Item 12: the keep-alive's URL and bearer

/** Hostile and valid base URLs, with what base_url_problem says (null: accepted). */
const URLS: [string, RegExp | null][] = [
  ['https://abcd.supabase.co', null],
  ['https://abcd.supabase.co/', null],
  ['https://abcd.supabase.co:8443/prefix', null],
  // Another host only once an operator lists it (functions_hosts; tests/sql/hardening_test.ts).
  [
    'https://functions.example.com:8443/prefix',
    /host functions\.example\.com is not the project's own functions host/,
  ],
  ['http://127.0.0.1:54321', null],
  ['http://localhost:8000', null],
  ['http://[::1]:9000', null],
  // A local Supabase stack's database reaches its functions on the Docker network.
  ['http://kong:8000', null],
  ['http://host.docker.internal:54321', null],
  [
    'http://abcd.supabase.co',
    /plain http:\/\/ is allowed only for a loopback or local network host/,
  ],
  ['http://127.0.0.1.evil.example', /plain http:\/\/ is allowed only for a loopback or local/],
  ['http://localhost.evil.example', /plain http:\/\/ is allowed only for a loopback or local/],
  ['http://kong.evil.example', /plain http:\/\/ is allowed only for a loopback or local/],
  ['http://host.docker.internal.evil.example', /plain http:\/\/ is allowed only for a loopback/],
  // Numbers without dots are IPv4 addresses to many resolvers.
  ['http://2130706433', /plain http:\/\/ is allowed only for a loopback or local/],
  ['http://0x7f000001', /plain http:\/\/ is allowed only for a loopback or local/],
  ['https://user:pass@evil.example', /contains "@"/],
  ['https://abcd.supabase.co@evil.example', /contains "@"/],
  ['https://abcd.supabase.co\n@evil.example', /whitespace or a control character/],
  ['https://abcd.supabase.co\nHost: evil.example', /whitespace or a control character/],
  ['https://abcd.supabase.co\r', /whitespace or a control character/],
  [' https://abcd.supabase.co', /whitespace or a control character/],
  ['https://abcd .supabase.co', /whitespace or a control character/],
  ['https://abcd.supabase.co\t', /whitespace or a control character/],
  ['https://abcd.supabase.co/\u0007', /whitespace or a control character/],
  ['ftp://abcd.supabase.co', /use https:\/\/host\[:port\]\[\/path\]/],
  ['https://', /use https:\/\/host/],
  ['https://abcd.supabase.co?x=1', /use https:\/\/host/],
  ['https://abcd.supabase.co#frag', /use https:\/\/host/],
  ['https://abcd.supabase.co\\@evil.example', /contains "@"/],
  ['https://abcd.supabase.co\\evil', /use https:\/\/host/],
  ['https://xn--caf-dma.supabase.co/ok', null],
  ['https://café.example', /use https:\/\/host/],
  ['https://abcd.supabase.co:99999', /port 99999 is out of range/],
  ["https://h.example/o'k", /use https:\/\/host/],
  [`https://${'a'.repeat(2100)}.example`, /2116 characters long; the limit is 2048/],
  ['//abcd.supabase.co', /use https:\/\/host/],
  ['HTTPS://abcd.supabase.co', /use https:\/\/host/],
];

Deno.test('keep-alive base URLs: https:// only (http:// for loopback and local network names), no userinfo, whitespace or control characters', async () => {
  for (const [url, rule] of URLS) {
    const shown = JSON.stringify(url.length > 80 ? url.slice(0, 80) : url);
    const calls = [
      () => sql`select switchyard.set_setting('functions_base_url', ${url})`,
      () => keepAlive(client, { baseUrl: url, debounceSeconds: 3600 }),
      () => keepAliveCommand(client, { baseUrl: url }),
    ];
    if (rule === null) {
      for (const call of calls) await call();
      continue;
    }
    for (const call of calls) {
      const r = await refusal(call);
      assert.equal(r.code, '22023', `${shown}: ${r.message}`);
      assert.ok(r.message.includes(`${shown}`), `${shown} is named: ${r.message}`);
      assert.match(r.message, rule, shown);
      assert.ok(r.message.length < 400, 'a long URL is not echoed whole');
    }
  }
  const [row] = await sql<{ value: string }[]>`
    select value from switchyard.settings where name = 'functions_base_url'`;
  assert.equal(
    row.value,
    'https://xn--caf-dma.supabase.co/ok',
    'the last accepted; no refused one',
  );
  // A bearer with a line break could add headers: refused, and never echoed.
  const bearer = await refusal(() =>
    sql`select switchyard.set_setting('functions_bearer', ${'secret-value\r\nX-Evil: 1'})`
  );
  assert.equal(
    bearer.message,
    'setting functions_bearer (value not shown) is invalid: a bearer contains no whitespace or ' +
      'control characters',
  );
  assert.ok(!JSON.stringify(bearer).includes('secret-value'));
  await sql`select switchyard.set_setting('functions_base_url', null)`;
});

Deno.test('with pg_net the bearer goes to the configured host only', async () => {
  // A stand-in for pg_net's net.http_post that records what would be sent.
  await sql.unsafe(`
    create schema if not exists net;
    create table net.sent (url text, headers jsonb);
    create function net.http_post(url text, body jsonb default null, params jsonb default null,
                                  headers jsonb default null, timeout_milliseconds int default 5000)
    returns bigint language sql as
    $$ insert into net.sent values (url, headers); select count(*) from net.sent $$;`);
  try {
    await sql`select switchyard.ensure_shared_queue('net_q')`;
    await sql`select switchyard.register_function('net-worker', 'net_q')`;
    const sent = () =>
      sql<{ url: string; auth: string }[]>`
      select url, headers ->> 'Authorization' as auth from net.sent
       where url like '%/net-worker' order by 1`;
    const wake = (baseUrl?: string) =>
      keepAlive(client, { baseUrl, debounceSeconds: 0, heartbeatWindowSeconds: 5 });

    // Nothing configured: refused before anything is sent.
    assert.match((await refusal(() => wake())).message, /no base URL is configured/);
    await sql`select switchyard.set_setting('functions_base_url', 'https://proj.supabase.co/')`;
    assert.match((await refusal(() => wake())).message, /no bearer is configured/);
    await sql`select switchyard.set_setting('functions_bearer', 'kit-bearer-123')`;

    // A host that is not the project's own is refused by the host allow-list first
    // (functions_hosts, tests/sql/hardening_test.ts).
    for (const other of ['https://evil.example', 'https://proj.supabase.co.evil.example']) {
      const r = await refusal(() => wake(other));
      assert.equal(r.code, '22023');
      assert.match(r.message, /is invalid: host .* is not the project's own functions host/);
      assert.equal(r.detail.rule, 'url_format');
    }
    for (
      const other of [
        'https://proj.supabase.co:444',
        'http://127.0.0.1:54321',
      ]
    ) {
      const r = await refusal(() => wake(other));
      assert.equal(r.code, '22023');
      assert.equal(
        r.message,
        `keep_alive: base URL ${JSON.stringify(other)} is refused: the bearer goes only to the ` +
          'configured host "https://proj.supabase.co" (setting functions_base_url); pass no ' +
          'base_url, or change the setting',
      );
      assert.equal(r.detail.rule, 'bearer_host');
    }
    for (const hostile of ['https://x@evil.example', 'https://proj.supabase.co\n@evil.example']) {
      assert.equal((await refusal(() => wake(hostile))).detail.rule, 'url_format');
    }
    assert.equal((await sent()).length, 0, 'nothing left for another host');

    // The configured host, and the same origin spelled as an argument, get it.
    const wakes = await wake();
    const mine = wakes.filter((w) => w.functionName === 'net-worker');
    assert.deepEqual(mine.map((w) => [w.url, w.via]), [
      ['https://proj.supabase.co/functions/v1/net-worker', 'pg_net'],
    ]);
    await wake('https://PROJ.supabase.co/');
    assert.deepEqual((await sent()).map((s) => ({ ...s })), [
      { url: 'https://PROJ.supabase.co/functions/v1/net-worker', auth: 'Bearer kit-bearer-123' },
      { url: 'https://proj.supabase.co/functions/v1/net-worker', auth: 'Bearer kit-bearer-123' },
    ]);
  } finally {
    await sql.unsafe(`drop schema net cascade`);
    await sql`select switchyard.set_setting('functions_base_url', null)`;
    await sql`select switchyard.set_setting('functions_bearer', null)`;
  }
});

// ---------------------------------------------------------------------------------------------
// Item 14: alias refusals

Deno.test('sync_alias with a null version and case-colliding aliases are refused naming the value and the rule', async () => {
  await compiled('aliasedV1', 'aliased_q');
  await compiled('aliasedV2', 'aliased_q');
  for (
    const [versions, position] of [['{NULL}', 1], ['{aliasedV1,NULL}', 2], ['{NULL,aliasedV1}', 1]]
  ) {
    const r = await refusal(() => sql`select switchyard.sync_alias('a', ${versions}::text[])`);
    assert.equal(r.code, '22023');
    assert.equal(
      r.message,
      `alias "a": version ${position} of ${
        JSON.stringify(versions)
      } is null: list the concrete flow slugs of ` +
        'the alias, oldest first',
    );
    assert.equal(r.detail.rule, 'version_null');
    assert.equal(r.detail.position, position);
  }
  await sql`select switchyard.sync_alias('aliased', '{aliasedV1}')`;
  for (
    const call of [
      () => sql`select switchyard.activate_alias('Aliased', 'aliasedV1')`,
      () => sql`select switchyard.activate_alias('ALIASED', 'aliasedV2')`,
      () => sql`select switchyard.sync_alias('Aliased', '{aliasedV1}')`,
      () => sql`select switchyard.sync_alias('aliaseD', '{aliasedV2}')`,
      () => client.activateAlias('Aliased', 'aliasedV2'),
    ]
  ) {
    const r = await refusal(call);
    assert.equal(r.code, '23505');
    assert.match(
      r.message,
      /^alias "(Aliased|ALIASED|aliaseD)" collides with alias "aliased": aliases are unique case-insensitively; use "aliased"$/,
    );
    assert.equal(r.detail.rule, 'alias_case_collision');
    assert.equal(r.detail.existing_alias, 'aliased');
    assert.ok(!/duplicate key/.test(r.message));
  }
  const [a] = await sql<{ flow_slug: string; n: number }[]>`
    select flow_slug, (select count(*)::int from switchyard.aliases) as n
      from switchyard.aliases where alias = 'aliased'`;
  assert.deepEqual({ ...a }, { flow_slug: 'aliasedV1', n: 1 }, 'nothing moved or was added');
  // The right spelling still works.
  await sql`select switchyard.activate_alias('aliased', 'aliasedV2')`;
});

// ---------------------------------------------------------------------------------------------
// Item 15: the connection option

Deno.test('maxConnections: default 4, SWITCHYARD_MAX_CONNECTIONS, refused outside 2-100', () => {
  assert.equal(resolveSettings({}).maxConnections, 4);
  assert.equal(resolveSettings({ maxConcurrent: 200 }).maxConnections, 4, 'not tied to slots');
  const env = (v: string) => (name: string) =>
    name === 'SWITCHYARD_MAX_CONNECTIONS' ? v : undefined;
  assert.equal(resolveSettings({}, env('7')).maxConnections, 7);
  assert.equal(resolveSettings({ maxConnections: 3 }, env('7')).maxConnections, 3);
  for (const bad of [1, 0, 101, 2.5]) {
    assert.throws(
      () => resolveSettings({ maxConnections: bad }),
      (e) =>
        e instanceof WorkerConfigError &&
        e.message.startsWith(`maxConnections ${bad} is invalid: use an integer from 2 to 100`),
    );
  }
  assert.throws(() => resolveSettings({}, env('four')), /SWITCHYARD_MAX_CONNECTIONS "four"/);
});

Deno.test('a worker pool has maxConnections connections (plus the heartbeat), and its heartbeat goes on while every write waits on a lock', async () => {
  const app = `sy_pool_${crypto.randomUUID().slice(0, 8)}`;
  const url = new URL(db.url);
  url.searchParams.set('application_name', app);
  const connections = () =>
    count(sql`select count(*)::int as n from pg_stat_activity where application_name = ${app}`);
  const SLOTS = 20;
  let started = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const flow = new Flow<{ n: number }>({ slug: 'poolV1', maxAttempts: 1, timeout: 120 })
    .step({ slug: 'work' }, async () => {
      started++;
      await gate;
      throw new Error('planned failure');
    });
  const worker = await startWorker(flow, {
    ...FAST,
    connectionString: url.toString(),
    maxConcurrent: SLOTS,
    maxConnections: 3,
    heartbeatWindowSeconds: 15,
    logger: { info() {}, warn() {}, error() {} },
  });
  const locker = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  let unlock = () => {};
  const unlocked = new Promise<void>((r) => (unlock = r));
  let holder: Promise<unknown> = Promise.resolve();
  try {
    const runIds: string[] = [];
    for (let i = 0; i < SLOTS; i++) runIds.push(await client.startFlow('poolV1', { n: i }));
    await waitFor('every handler to start', () => started === SLOTS);
    // Lock every task: each failure the handlers report now waits on its row.
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    holder = locker.begin(async (tx) => {
      await tx`select 1 from switchyard.step_tasks
                where run_id = any(${pgArray(runIds)}::uuid[]) for update`;
      locked();
      await unlocked;
    });
    await within(30_000, 'the locker to lock every task', isLocked);
    release();
    await waitFor(
      'the failures to wait on the locks',
      async () =>
        (await count(sql`select count(*)::int as n from pg_stat_activity
                        where application_name = ${app} and wait_event_type = 'Lock'`)) >= 1,
    );
    const [{ at }] = await sql<{ at: Date }[]>`select clock_timestamp() as at`;
    await waitFor(
      'a heartbeat while the writes wait',
      async () =>
        (await count(sql`select count(*)::int as n from switchyard.workers
                          where worker_id = ${worker.workerId} and last_heartbeat_at > ${at}`)) ===
          1,
    );
    assert.ok((await connections()) <= 3, `at most 3 pool connections, saw ${await connections()}`);
    assert.equal(
      await count(sql`select count(*)::int as n from pg_stat_activity
                       where application_name = ${`switchyard heartbeat ${worker.workerId}`}`),
      1,
      'and the heartbeat has one of its own',
    );
    unlock();
    await holder;
    await waitFor(
      'every run to fail',
      async () =>
        (await count(sql`select count(*)::int as n from switchyard.runs
                        where flow_slug = 'poolV1' and status = 'failed'`)) === SLOTS,
    );
    const peak = await connections();
    assert.ok(
      peak <= 3,
      `the pool stayed at 3 connections with ${SLOTS} failures at once: ${peak}`,
    );
  } finally {
    release();
    unlock();
    await holder.catch(() => {});
    await locker.end();
    await worker.stop();
  }
  await waitFor('every connection to close at stop', async () => (await connections()) === 0);
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
