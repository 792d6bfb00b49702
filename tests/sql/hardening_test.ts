/**
 * Hardening, second round (issue 21): the SQL core and the library, against real PostgreSQL.
 * The dashboard's items are in tests/ops/dashboard_hardening_test.ts (raw HTTP).
 *
 * Each test names the item it guards; each failed before its fix.
 *
 * @module
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import {
  DatabaseConnectionError,
  OperationError,
  RunFailedError,
  RunNotFoundError,
  SqlCoreMissingError,
} from '../../lib/errors.ts';
import { cancelRun, pauseFunction, retryRun } from '../../lib/ops.ts';
import { ensurePgmq, isLocalDatabase, pgmqProvider } from '../../lib/sql/migrate.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { startWorkerImpl } from '../../lib/worker/worker.ts';
import { adminUrl, createTestDatabase, urlFor } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

/** The hostile inputs this file tries, counted as they are tried (reported at the end). */
let hostile = 0;

async function compile(flow: Parameters<typeof toPlacement>[0]) {
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(flow).shape as never)}::jsonb)`;
}

async function registerWorker(queue: string, fn: string, pairs: string[]): Promise<string> {
  const id = crypto.randomUUID();
  await sql`select switchyard.register_worker(${id}::uuid, ${queue}, ${fn}, ${
    pgArray(pairs)
  }::text[])`;
  return id;
}

async function tasksOf(runId: string) {
  return await sql<
    { task_index: number; status: string; attempts_count: number; message_id: string }[]
  >`
    select task_index, status, attempts_count, message_id::text as message_id
      from switchyard.step_tasks where run_id = ${runId}::uuid order by step_slug, task_index`;
}

/** The SQLSTATE and message a statement fails with (it must fail). */
async function refusal(
  fn: () => Promise<unknown>,
): Promise<{ code: string; message: string; detail: string }> {
  try {
    await fn();
  } catch (e) {
    const err = e as { code?: string; message: string; detail?: string };
    return { code: err.code ?? '', message: err.message, detail: err.detail ?? '' };
  }
  throw new Error('expected a refusal');
}

Deno.test('item 8: every SQL function clips the values it echoes (100,000 characters in, short refusals out)', async () => {
  // Every function of the SQL core a caller can name (the "_" helpers are internal), each text,
  // jsonb and text[] argument in turn 100,000 characters long, the others a plain value.
  const fns = await sql<{ proname: string; types: string[] }[]>`
    select p.proname, array(select format_type(t, null) from unnest(p.proargtypes::oid[]) t) as types
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'switchyard' and p.prokind = 'f' and p.proname !~ '^_'
       and p.prorettype <> 'trigger'::regtype
     order by p.proname, p.oid`;
  assert.ok(fns.length > 40, `only ${fns.length} functions found`);
  const plain: Record<string, string> = {
    text: `'a'`,
    jsonb: `'{}'::jsonb`,
    uuid: 'gen_random_uuid()',
    integer: '1',
    bigint: '1',
    boolean: 'false',
    interval: `'1 hour'::interval`,
    'text[]': `'{a}'::text[]`,
    'bigint[]': `'{1}'::bigint[]`,
  };
  const long: Record<string, string> = {
    text: `repeat('x', 100000)`,
    jsonb: `to_jsonb(repeat('x', 100000))`,
    'text[]': `array[repeat('x', 100000)]`,
  };
  const overLong: string[] = [];
  let tried = 0;
  for (const f of fns) {
    for (let i = 0; i < f.types.length; i++) {
      if (!long[f.types[i]]) continue;
      const args = f.types.map((t, j) => (j === i ? long[t] : plain[t] ?? `null::${t}`));
      const statement = `select switchyard.${f.proname}(${args.join(', ')})`;
      tried++;
      try {
        // Rolled back whatever it does: the calls must not change the database.
        await sql.begin(async (tx) => {
          await tx.unsafe(statement);
          throw new Error('rolled back');
        });
      } catch (e) {
        const err = e as { message: string; detail?: string };
        if (err.message.length > 1000 || (err.detail ?? '').length > 2000) {
          overLong.push(
            `${f.proname}(${f.types.join(', ')}) argument ${
              i + 1
            }: message ${err.message.length}, ` +
              `detail ${(err.detail ?? '').length} characters: ${err.message.slice(0, 80)}`,
          );
        }
      }
    }
  }
  hostile += tried;
  assert.deepEqual(overLong, [], `${overLong.length} of ${tried} calls echoed their input whole`);
  // The reproduction of the issue, exactly.
  const r = await refusal(() => sql`select switchyard.start_flow(repeat('x', 100000), '{}')`);
  assert.ok(r.message.length < 300, `${r.message.length} characters`);
  assert.match(r.message, /unknown flow or alias "x{80}"\.\.\. \(100000 characters\)/);
});

Deno.test('item 3: a claim that overlaps the failure of its run finds the task stale and starts nothing', async () => {
  const flow = new Flow<number[]>({ slug: 'lateClaimV1', maxAttempts: 1 })
    .map({ slug: 'each' }, (n) => n);
  await compile(flow);
  const worker = await registerWorker('lateclaimv1', 'late-claim-worker', ['lateClaimV1/each']);
  const failing = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  const claiming = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  try {
    for (let round = 0; round < 3; round++) {
      const runId = await client.startFlow('lateClaimV1', [1, 2]);
      const [first, second] = await tasksOf(runId);
      const [claim] = await sql<{ disposition: string }[]>`
        select disposition from switchyard.start_tasks('lateclaimv1',
          ${pgArray([first.message_id])}::bigint[], ${worker}::uuid)`;
      assert.equal(claim.disposition, 'claimed');
      // Element 0 fails for good (its last attempt) in a transaction that has not committed
      // when the claim of element 1 (whose message was read before) arrives.
      const reserved = await failing.reserve();
      await reserved`begin`;
      const [{ outcome }] = await reserved<{ outcome: string }[]>`
        select switchyard.fail_task(${runId}::uuid, 'each', 1, 'boom', 0) as outcome`;
      assert.equal(outcome, 'failed');
      const [{ pid }] = await claiming`select pg_backend_pid() as pid`; // connected already
      let settled = false;
      const late = claiming<{ disposition: string }[]>`
        select disposition from switchyard.start_tasks('lateclaimv1',
          ${pgArray([second.message_id])}::bigint[], ${worker}::uuid)`;
      late.then(() => (settled = true), () => (settled = true));
      // The claim runs while the failure is still open: it has answered, or it waits on a lock.
      await waitFor('the late claim to run into the open failure', async () => {
        if (settled) return true;
        const [a] = await sql`select wait_event_type from pg_stat_activity where pid = ${pid}`;
        return a?.wait_event_type === 'Lock';
      }, { timeoutMs: 10_000, intervalMs: 10 });
      await reserved`commit`;
      reserved.release();
      const dispositions = (await late).map((r) => r.disposition);
      assert.deepEqual(
        dispositions,
        ['stale'],
        `round ${round}: the late claim got ${dispositions}`,
      );
      const after = await tasksOf(runId);
      assert.equal(after[1].status, 'queued', 'element 1 never started');
      assert.equal(after[1].attempts_count, 0, 'and used no attempt');
      const [run] = await sql`select status from switchyard.runs where run_id = ${runId}::uuid`;
      assert.equal(run.status, 'failed');
    }
  } finally {
    await failing.end();
    await claiming.end();
  }
});

Deno.test('item 2: a map whose outputs together exceed max_map_output_bytes fails its run, naming map, size and limit; no element re-runs', async () => {
  const flow = new Flow<number[]>({ slug: 'bigMapV1', maxAttempts: 3 })
    .map({ slug: 'blow' }, (n) => n)
    .step({ slug: 'after', dependsOn: ['blow'] }, (input) => input.blow.length);
  await compile(flow);
  const worker = await registerWorker('bigmapv1', 'big-map-worker', ['bigMapV1/blow']);
  await sql`select switchyard.set_setting('max_map_output_bytes', '65536')`;
  try {
    const [{ limits }] = await sql`select switchyard.limits() as limits`;
    assert.equal(limits.max_map_output_bytes, 65536);
    const runId = await client.startFlow('bigMapV1', [0, 1, 2]);
    const tasks = await tasksOf(runId);
    const claimed = await sql<{ disposition: string }[]>`
      select disposition from switchyard.start_tasks('bigmapv1',
        ${pgArray(tasks.map((t) => t.message_id))}::bigint[], ${worker}::uuid)`;
    assert.deepEqual(claimed.map((c) => c.disposition), ['claimed', 'claimed', 'claimed']);
    const output = 'y'.repeat(30_000); // 30,002 bytes of JSON text each
    const complete = (indexes: number[]) =>
      sql<{ ok: boolean }[]>`select ok from switchyard.complete_tasks(${
        sql.json(indexes.map((i) => ({
          run_id: runId,
          step_slug: 'blow',
          task_index: i,
          attempt: 1,
          output,
        })) as never)
      }::jsonb)`;
    assert.deepEqual((await complete([0, 1])).map((r) => r.ok), [true, true]);
    const [mid] = await sql`select status from switchyard.runs where run_id = ${runId}::uuid`;
    assert.equal(mid.status, 'started', 'two of three: under the limit, nothing decided yet');
    assert.deepEqual(
      (await complete([2])).map((r) => r.ok),
      [true],
      'the last element is accepted',
    );
    const [run] = await sql<{ status: string; error: string }[]>`
      select status, error from switchyard.runs where run_id = ${runId}::uuid`;
    assert.equal(run.status, 'failed');
    const bytes = 3 * 30_002 + 6;
    assert.match(
      run.error,
      new RegExp(
        `map step blow: its 3 outputs are ${bytes} bytes of JSON text together, over the limit of 65536 bytes \\(setting max_map_output_bytes\\); no element is run again`,
      ),
    );
    const states = await sql<{ step_slug: string; status: string; output: unknown }[]>`
      select step_slug, status, output from switchyard.step_states
       where run_id = ${runId}::uuid order by step_slug`;
    assert.deepEqual(states.map((s) => [s.step_slug, s.status, s.output]), [
      ['after', 'created', null],
      ['blow', 'failed', null],
    ]);
    // Every element kept its output; none was queued again; the successor never started.
    const after = await tasksOf(runId);
    assert.deepEqual(after.map((t) => [t.status, t.attempts_count]), [
      ['completed', 1],
      ['completed', 1],
      ['completed', 1],
    ]);
    // Under the limit the same map completes (the default, 16 MiB).
    await sql`select switchyard.set_setting('max_map_output_bytes', null)`;
    const ok = await client.startFlow('bigMapV1', [0, 1, 2]);
    const okTasks = await tasksOf(ok);
    await sql`select switchyard.start_tasks('bigmapv1',
      ${pgArray(okTasks.map((t) => t.message_id))}::bigint[], ${worker}::uuid)`;
    await sql`select ok from switchyard.complete_tasks(${
      sql.json([0, 1, 2].map((i) => ({
        run_id: ok,
        step_slug: 'blow',
        task_index: i,
        attempt: 1,
        output,
      })) as never)
    }::jsonb)`;
    const [blow] =
      await sql`select status, jsonb_array_length(output) as n from switchyard.step_states
      where run_id = ${ok}::uuid and step_slug = 'blow'`;
    assert.deepEqual({ ...blow }, { status: 'completed', n: 3 });
    // The setting's own bounds.
    const bad = await refusal(() =>
      sql`select switchyard.set_setting('max_map_output_bytes', '300000000')`
    );
    assert.match(
      bad.message,
      /max_map_output_bytes "300000000" is invalid: use a number of bytes from 65536/,
    );
  } finally {
    await sql`select switchyard.set_setting('max_map_output_bytes', null)`;
  }
});

Deno.test('item 9: start_user_run takes only random run ids and at most user_runs_per_minute new runs per user', async () => {
  // A Supabase-like auth.uid() that reads the request's JWT subject.
  await sql.unsafe(`
    create schema if not exists auth;
    create or replace function auth.uid() returns uuid language sql stable as $$
      select nullif(current_setting('request.jwt.claim.sub', true), '')::uuid $$;`);
  const flow = new Flow<{ n: number }>({ slug: 'userRunsV1' }).step({ slug: 'a' }, () => 1);
  await compile(flow);
  await sql`insert into switchyard.user_start_aliases (alias) values ('userRunsV1')`;
  const asUser = <T>(user: string, fn: (tx: postgres.TransactionSql) => Promise<T>) =>
    sql.begin(async (tx) => {
      await tx`select set_config('request.jwt.claim.sub', ${user}, true)`;
      return await fn(tx);
    });
  const alice = crypto.randomUUID();
  const bob = crypto.randomUUID();
  // A server's deterministic id (a version-5 UUID, derived from an order number): a user who
  // can compute it cannot take it first.
  const serverId = '9b2f6c1e-4d3a-5e8f-9a7b-1c2d3e4f5a6b';
  hostile++;
  const taken = await refusal(() =>
    asUser(
      alice,
      (tx) => tx`select switchyard.start_user_run('userRunsV1', '{"n": 1}', ${serverId}::uuid)`,
    )
  );
  assert.equal(taken.code, '22023');
  assert.match(
    taken.message,
    /run id 9b2f6c1e-4d3a-5e8f-9a7b-1c2d3e4f5a6b is invalid: a signed-in user's run id is a random \(version 4\) UUID/,
  );
  assert.equal(JSON.parse(taken.detail).rule, 'run_id_not_random');
  const [{ id }] =
    await sql`select switchyard.start_flow('userRunsV1', '{"n": 1}', ${serverId}::uuid) as id`;
  assert.equal(id, serverId, 'the server still gets its id');
  const [owner] = await sql`select owner from switchyard.runs where run_id = ${serverId}::uuid`;
  assert.equal(owner.owner, null);
  // A server's run id a user learns later is another owner's: refused, and nothing of it shown.
  hostile++;
  const [{ id: serverRandom }] =
    await sql`select switchyard.start_flow('userRunsV1', '{"n": 2}') as id`;
  const other = await refusal(() =>
    asUser(
      alice,
      (tx) => tx`select switchyard.start_user_run('userRunsV1', '{"n": 2}', ${serverRandom}::uuid)`,
    )
  );
  assert.equal(other.code, '23505');
  assert.equal(JSON.parse(other.detail).rule, 'run_id_other_owner');
  // The rate limit, set by the operator.
  await sql`select switchyard.set_setting('user_runs_per_minute', '5')`;
  try {
    const first = crypto.randomUUID();
    for (let i = 0; i < 5; i++) {
      await asUser(
        alice,
        (tx) =>
          tx`select switchyard.start_user_run('userRunsV1', ${tx.json({ n: i })}::jsonb, ${
            i === 0 ? first : crypto.randomUUID()
          }::uuid)`,
      );
    }
    hostile++;
    const sixth = await refusal(() =>
      asUser(alice, (tx) => tx`select switchyard.start_user_run('userRunsV1', '{"n": 6}'::jsonb)`)
    );
    assert.equal(sixth.code, 'PT429', 'PostgREST answers 429');
    assert.match(
      sixth.message,
      new RegExp(
        `user ${alice} started 5 runs in the last minute, the limit \\(setting user_runs_per_minute\\): wait a minute`,
      ),
    );
    // The same start again (a resubscription) is no new run: it passes and counts nothing.
    const [again] = await asUser(
      alice,
      (tx) =>
        tx`select switchyard.start_user_run('userRunsV1', '{"n": 0}'::jsonb, ${first}::uuid) as id`,
    );
    assert.equal(again.id, first);
    // Another user has a budget of their own.
    await asUser(
      bob,
      (tx) => tx`select switchyard.start_user_run('userRunsV1', '{"n": 1}'::jsonb)`,
    );
    const [{ n }] =
      await sql`select count(*)::int as n from switchyard.runs where owner = ${alice}::uuid`;
    assert.equal(n, 5);
    const bad = await refusal(() =>
      sql`select switchyard.set_setting('user_runs_per_minute', '0')`
    );
    assert.match(
      bad.message,
      /user_runs_per_minute "0" is invalid: use a number of runs from 1 to 1000000/,
    );
  } finally {
    await sql`select switchyard.set_setting('user_runs_per_minute', null)`;
  }
});

Deno.test("item 10: the keep-alive base URL names the project's own functions host or one an operator lists", async () => {
  const refused = [
    'https://functions.example.com',
    'https://attacker.example',
    'https://abcd.supabase.co.evil.example',
    'http://intranet',
    'http://metadata',
    'https://kong.example',
  ];
  for (const url of refused) {
    hostile++;
    const r = await refusal(() => sql`select switchyard.set_setting('functions_base_url', ${url})`);
    assert.equal(r.code, '22023', url);
    assert.match(
      r.message,
      /is invalid: (host .* is not the project's own functions host|plain http:\/\/ is allowed only)/,
      url,
    );
  }
  for (
    const url of [
      'https://abcdefghijklmnopqrst.supabase.co',
      'http://kong:8000',
      'http://127.0.0.1:54321',
      'http://host.docker.internal:54321',
    ]
  ) {
    await sql`select switchyard.set_setting('functions_base_url', ${url})`;
  }
  // An operator's list replaces the default: exactly those hosts.
  await sql`select switchyard.set_setting('functions_hosts', 'functions.example.com, edge')`;
  try {
    await sql`select switchyard.set_setting('functions_base_url', 'https://functions.example.com/v1')`;
    await sql`select switchyard.set_setting('functions_base_url', 'http://edge:9000')`;
    const r = await refusal(() =>
      sql`select switchyard.set_setting('functions_base_url', 'https://abcdefghijklmnopqrst.supabase.co')`
    );
    assert.match(
      r.message,
      /host abcdefghijklmnopqrst\.supabase\.co is not in functions_hosts \(functions\.example\.com, edge\)/,
    );
    for (const list of ['https://x.example', 'a.example:443', '*.example.com', '', ' , ']) {
      hostile++;
      const bad = await refusal(() =>
        sql`select switchyard.set_setting('functions_hosts', ${list})`
      );
      assert.match(
        bad.message,
        /setting functions_hosts .* is invalid: (host .* is invalid|list at least one host)/,
        list,
      );
    }
  } finally {
    await sql`select switchyard.set_setting('functions_hosts', null)`;
    await sql`select switchyard.set_setting('functions_base_url', null)`;
  }
});

Deno.test('errors: a wrong database URL names its variable, host and port (never the password) and what to check', async () => {
  hostile += 3;
  const bad = 'postgres://someone:pw-very-secret@127.0.0.1:1/app';
  const c = untypedClient(bad);
  try {
    const e = await c.runStatus(crypto.randomUUID()).then(() => null, (e) => e);
    assert.ok(e instanceof DatabaseConnectionError, String(e));
    assert.match(
      e.message,
      /cannot use the database at 127\.0\.0\.1:1 \(connection string from the connectionString option\): .*ECONNREFUSED.*; check that the server runs/,
    );
    assert.doesNotMatch(e.message, /pw-very-secret/);
  } finally {
    await c.close();
  }
  // A worker reads its URL from the environment: the error names the variable.
  const flow = new Flow({ slug: 'noDbV1' }).step({ slug: 'a' }, () => 1);
  const env = (name: string) => (name === 'DATABASE_URL' ? bad : undefined);
  const started = await startWorkerImpl(flow, { env, logger: SILENT, ...FAST }).then(
    async (w) => {
      await w.stop();
      return null;
    },
    (e) => e,
  );
  assert.ok(started instanceof DatabaseConnectionError, String(started));
  assert.match(started.message, /127\.0\.0\.1:1 \(connection string from DATABASE_URL\)/);
  assert.doesNotMatch(started.message, /pw-very-secret/);
  // A role that does not exist: the server's words and what to check.
  const u = new URL(db.url);
  u.username = 'nosuchuser';
  const wrongUser = untypedClient(u.toString(), { origin: 'SWITCHYARD_DB_URL' });
  try {
    const e = await wrongUser.runStatus(crypto.randomUUID()).then(() => null, (e) => e);
    assert.ok(e instanceof DatabaseConnectionError, String(e));
    assert.match(
      e.message,
      /\(connection string from SWITCHYARD_DB_URL\): .*nosuchuser.*; check the user name and the password/,
    );
  } finally {
    await wrongUser.close();
  }
});

Deno.test('errors: a database without the SQL core says to run supabase db push, from the client, a worker and operator calls', async () => {
  const name = `sy_empty_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const url = urlFor(name);
  try {
    const c = untypedClient(url);
    try {
      const e = await c.runStatus(crypto.randomUUID()).then(() => null, (e) => e);
      assert.ok(e instanceof SqlCoreMissingError, String(e));
      assert.equal(
        e.message,
        'the Switchyard SQL core is not installed here: run `supabase db push --linked` ' +
          '(Supabase CLI 3: `--remote`; or `npx switchyard db:push`) to apply its migrations',
      );
      const paused = await pauseFunction(c, 'a-worker', 'x').then(() => null, (e) => e);
      assert.ok(paused instanceof SqlCoreMissingError, String(paused));
    } finally {
      await c.close();
    }
    const flow = new Flow({ slug: 'noCoreV1' }).step({ slug: 'a' }, () => 1);
    const w = await startWorker(flow, { connectionString: url, logger: SILENT, ...FAST }).then(
      async (w) => {
        await w.stop();
        return null;
      },
      (e) => e,
    );
    assert.ok(w instanceof SqlCoreMissingError, String(w));
    // db:push: the compat layer is loaded on a local server, and says so in one line; a
    // server that is not local is refused unless the layer is asked for (PGMQ_MODE=compat).
    assert.ok(isLocalDatabase(url));
    assert.ok(
      !isLocalDatabase('postgresql://postgres@db.abcdefghijklmnopqrst.supabase.co:5432/postgres'),
    );
    const remote = 'postgresql://postgres@db.abcdefghijklmnopqrst.supabase.co:5432/postgres';
    const none = { hasSchema: false, hasExtension: false };
    assert.throws(
      () => pgmqProvider('auto', none, remote),
      /has no pgmq extension, and it is not local: enable the pgmq extension \(1\.5 or later.*set PGMQ_MODE=compat/,
    );
    assert.equal(pgmqProvider('compat', none, remote), 'compat', 'asked for explicitly');
    assert.equal(
      pgmqProvider('auto', { hasSchema: false, hasExtension: true }, remote),
      'extension',
    );
    assert.equal(pgmqProvider('auto', none, url), 'compat');
    const lines: string[] = [];
    assert.equal(await ensurePgmq(url, 'compat', (l) => lines.push(l)), 'compat');
    assert.equal(lines.length, 1);
    assert.match(
      lines[0],
      /PGMQ is not installed on .*: loaded the kit's PGMQ-compatible layer \(pgmq_compat\/pgmq\.sql; for local runs and tests, never for Supabase\)/,
    );
  } finally {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }
});

Deno.test('errors: one RunNotFoundError for a missing run everywhere; a cancelled run says "cancelled" once', async () => {
  const missing = crypto.randomUUID();
  for (const call of [() => retryRun(client, missing), () => cancelRun(client, missing, 'why')]) {
    const e = await call().then(() => null, (e) => e);
    assert.ok(e instanceof RunNotFoundError, String(e));
    assert.ok(e instanceof OperationError, 'still an OperationError for callers that catch those');
    assert.equal(e.runId, missing);
    assert.equal(e.detail.rule, 'run_unknown');
  }
  const typed = createClient({ connectionString: db.url });
  try {
    const e = await typed.retry(missing).then(() => null, (e) => e);
    assert.ok(e instanceof RunNotFoundError, String(e));
    const out = await typed.run(missing).output({ timeoutMs: 2000 }).then(() => null, (e) => e);
    assert.ok(out instanceof RunNotFoundError, String(out));
    const flow = new Flow({ slug: 'cancelOnceV1' }).step({ slug: 'a', startDelay: 3600 }, () => 1);
    await compile(flow);
    const runId = await client.startFlow('cancelOnceV1', {});
    await cancelRun(client, runId, 'too slow');
    const cancelled = await typed.run(runId).output({ timeoutMs: 5000 }).then(() => null, (e) => e);
    assert.ok(cancelled instanceof RunFailedError, String(cancelled));
    assert.equal(cancelled.message, `run ${runId} was cancelled: too slow`);
    assert.equal(cancelled.error, 'cancelled: too slow', 'the stored error is unchanged');
  } finally {
    await typed.close();
  }
  // NUL in a reason is refused by name before anything is sent.
  hostile += 2;
  await assert.rejects(
    () => cancelRun(client, missing, 'a\0b'),
    /cancel: reason is invalid: it contains a NUL character/,
  );
  await assert.rejects(
    () => pauseFunction(client, 'a-worker', 'a\0b'),
    /pause: reason is invalid: it contains a NUL character/,
  );
});

Deno.test("errors: a handler's error is stored with its stack (bounded)", async () => {
  function deepInside(depth: number): never {
    if (depth > 0) deepInside(depth - 1);
    throw new TypeError('the record has no id');
  }
  const flow = new Flow({ slug: 'stackV1', maxAttempts: 1 }).step(
    { slug: 'a' },
    () => deepInside(40),
  );
  const worker = await startWorker(flow, { connectionString: db.url, logger: SILENT, ...FAST });
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 60; // deeper than what is kept
  try {
    const runId = await client.startFlow('stackV1', {});
    const status = await client.waitForRun(runId, { timeoutMs: 20_000 });
    assert.equal(status.status, 'failed');
    const [task] = await sql<{ error: string }[]>`
      select error from switchyard.step_tasks where run_id = ${runId}::uuid`;
    const lines = task.error.split('\n');
    assert.equal(lines[0], 'TypeError: the record has no id');
    assert.match(lines[1], /^ {4}at deepInside \(.*hardening_test\.ts:\d+:\d+\)$/);
    assert.equal(lines.length, 13, 'the message and at most 12 frames');
    assert.ok(lines.slice(1).every((l) => l.startsWith('    at ') && l.length <= 204));
    assert.match(
      status.error ?? '',
      /step a failed after 1 attempt\(s\): TypeError: the record has no id\n {4}at deepInside/,
    );
  } finally {
    Error.stackTraceLimit = limit;
    await worker.stop();
  }
});

Deno.test('teardown', async () => {
  console.log(`hostile inputs tried here: ${hostile}`);
  await client.close();
  await db.close();
});
