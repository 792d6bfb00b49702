/**
 * The handler context (issue 12): runId, flowSlug, stepSlug, taskIndex, attempt, flowInput,
 * signal (aborted on the step's timeout and on shutdown), env, sql (closed when the worker
 * stops) and supabase — with real workers on real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { WorkerShutdownError } from '../../lib/errors.ts';
import { Flow, startWorker, type StepContext } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { startWorkerImpl } from '../../lib/worker/worker.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const base = { connectionString: db.url, ...FAST };

Deno.test('ctx carries the task identity, the flow input, env and a working sql client', async () => {
  Deno.env.set('SWITCHYARD_CTX_TEST', 'from-env');
  await db.sql`create table public.ctx_log (run_id uuid, step text, note text)`;
  const seen: Record<string, unknown>[] = [];
  let handlerSql: StepContext<unknown>['sql'] | undefined;
  let handlerPid = 0;
  const flow = new Flow<{ label: string }>({ slug: 'ctxFlow', maxAttempts: 2, baseDelay: 0 })
    .step({ slug: 'first' }, async (input, ctx) => {
      if (ctx.attempt === 1) throw new Error('first attempt fails on purpose');
      // The handler's own client: a write and a read in a transaction.
      const note = await ctx.sql.begin(async (tx) => {
        await tx`insert into public.ctx_log values (${ctx.runId}::uuid, ${ctx.stepSlug}, ${input.label})`;
        const [row] = await tx<{ note: string }[]>`
          select note from public.ctx_log where run_id = ${ctx.runId}::uuid`;
        return row.note;
      });
      seen.push({
        runId: ctx.runId,
        flowSlug: ctx.flowSlug,
        stepSlug: ctx.stepSlug,
        taskIndex: ctx.taskIndex,
        attempt: ctx.attempt,
        flowInput: ctx.flowInput,
        env: ctx.env.get('SWITCHYARD_CTX_TEST'),
        unset: ctx.env.get('SWITCHYARD_CTX_UNSET'),
        hasSupabase: 'supabase' in ctx,
        aborted: ctx.signal.aborted,
        note,
      });
      return note;
    })
    .step({ slug: 'second', dependsOn: ['first'] }, async (input, ctx) => {
      handlerSql = ctx.sql;
      const [{ db: name, pid }] = await ctx.sql<{ db: string; pid: number }[]>`
        select current_database() as db, pg_backend_pid() as pid`;
      handlerPid = pid;
      return { echo: input.first, db: name, taskIndex: ctx.taskIndex };
    });
  // The worker's pools and the handlers' pool carry the URL's application_name (the
  // heartbeat its own): the client's connections, which may idle on, are not counted.
  const url = new URL(db.url);
  url.searchParams.set('application_name', 'ctx_worker');
  const worker = await startWorker(flow, { ...base, connectionString: url.toString() });
  const backends = async () => {
    const [{ n }] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
       where application_name in ('ctx_worker', ${`switchyard heartbeat ${worker.workerId}`})`;
    return n;
  };
  try {
    const runId = await client.startFlow('ctxFlow', { label: 'hello' });
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, {
      second: { echo: 'hello', db: new URL(db.url).pathname.slice(1), taskIndex: 0 },
    });
    assert.deepEqual(seen, [{
      runId,
      flowSlug: 'ctxFlow',
      stepSlug: 'first',
      taskIndex: 0,
      attempt: 2,
      flowInput: { label: 'hello' },
      env: 'from-env',
      unset: undefined,
      hasSupabase: false,
      aborted: false,
      note: 'hello',
    }]);
    const [{ n }] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from public.ctx_log where run_id = ${runId}::uuid`;
    assert.equal(n, 1);
  } finally {
    await worker.stop();
    Deno.env.delete('SWITCHYARD_CTX_TEST');
  }
  // Stopping the worker closed the handlers' pool: ended, not merely idle (postgres.js closes
  // idle connections after 30 s but reconnects on the next query), so a query on it fails.
  assert.ok(handlerSql && handlerPid, 'the second handler used ctx.sql');
  await assert.rejects(
    within(10_000, "a query on the stopped handlers' pool", handlerSql`select 1`),
    (e: Error & { code?: string }) => e.code === 'CONNECTION_ENDED',
  );
  // And its connection is gone well before the 30 s idle timeout could have closed it (10 s
  // of room for a loaded machine), as are the worker's own: no connection is left.
  const alive = async () =>
    (await db.sql`select 1 from pg_stat_activity where pid = ${handlerPid}`).length > 0;
  await waitFor("the handlers' connection to close", async () => !(await alive()), {
    timeoutMs: 10_000,
  });
  await waitFor(
    'the worker and handler pools to close',
    async () => (await backends()) === 0,
    {
      timeoutMs: 10_000,
    },
  );
});

Deno.test('ctx.supabase is a service-role supabase-js client when SUPABASE_URL and the key are set', async () => {
  // A stand-in for PostgREST: records what supabase-js sends.
  const requests: { path: string; apikey: string | null; auth: string | null }[] = [];
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    requests.push({
      path: `${url.pathname}${url.search}`,
      apikey: req.headers.get('apikey'),
      auth: req.headers.get('authorization'),
    });
    return Response.json([{ id: 1, name: 'row' }]);
  });
  const supabaseUrl = `http://127.0.0.1:${server.addr.port}`;
  const vars: Record<string, string> = {
    SUPABASE_URL: supabaseUrl,
    SUPABASE_SERVICE_ROLE_KEY: 'service-role-key',
  };
  const flow = new Flow<{ table: string }>({ slug: 'ctxSupabase', maxAttempts: 1 })
    .step({ slug: 'read' }, async (input, ctx) => {
      if (!ctx.supabase) return { present: false };
      const { data, error } = await ctx.supabase.from(input.table).select('id,name');
      if (error) throw new Error(error.message);
      return { present: true, data, env: ctx.env.get('SUPABASE_URL') };
    });
  // startWorkerImpl with `env` is what EdgeWorker.start does with the platform's variables.
  const worker = await startWorkerImpl(flow, { ...base, env: (name) => vars[name] });
  try {
    const runId = await client.startFlow('ctxSupabase', { table: 'profiles' });
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'completed', status.error ?? '');
    assert.deepEqual(status.output, {
      read: { present: true, data: [{ id: 1, name: 'row' }], env: supabaseUrl },
    });
    assert.deepEqual(requests, [{
      path: '/rest/v1/profiles?select=id%2Cname',
      apikey: 'service-role-key',
      auth: 'Bearer service-role-key',
    }]);
  } finally {
    await worker.stop();
    await server.shutdown();
  }
  // Only one of the two variables: no client.
  delete vars.SUPABASE_SERVICE_ROLE_KEY;
  const half = await startWorkerImpl(flow, { ...base, env: (name) => vars[name] });
  try {
    const runId = await client.startFlow('ctxSupabase', { table: 'profiles' });
    assert.deepEqual((await client.waitForRun(runId)).output, { read: { present: false } });
  } finally {
    await half.stop();
  }
});

Deno.test('ctx.signal aborts with WorkerShutdownError when the worker stops; the task is handed back', async () => {
  let entered!: () => void;
  const inHandler = new Promise<void>((r) => entered = r);
  let abortReason: unknown;
  const flow = new Flow({ slug: 'ctxShutdown', maxAttempts: 3, baseDelay: 0 })
    .step({ slug: 'wait' }, (_input, ctx: StepContext<unknown>) =>
      new Promise((_, reject) => {
        entered();
        ctx.signal.addEventListener('abort', () => {
          abortReason = ctx.signal.reason;
          reject(ctx.signal.reason);
        });
      }));
  const worker = await startWorker(flow, base);
  const runId = await client.startFlow('ctxShutdown', {});
  await within(30_000, 'the handler to start', inHandler);
  await worker.stop();
  assert.ok(abortReason instanceof WorkerShutdownError, String(abortReason));
  assert.match(String(abortReason), /the worker is shutting down \(stop requested\)/);
  // The shutdown is not the handler's failure: the task is queued again, the attempt refunded.
  const [task] = await db.sql`
    select status, attempts_count from switchyard.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...task }, { status: 'queued', attempts_count: 0 });
});

Deno.test('ctx.signal aborts on the step timeout with the timeout error, which fails the attempt', async () => {
  let seen: { reason: unknown; aborted: boolean } | undefined;
  const flow = new Flow({ slug: 'ctxTimeout', maxAttempts: 1 })
    .step(
      { slug: 'slow', timeout: 1 },
      (_input, ctx: StepContext<unknown>) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            seen = { reason: ctx.signal.reason, aborted: ctx.signal.aborted };
            reject(ctx.signal.reason);
          });
        }),
    );
  const silent = { info() {}, warn() {}, error() {} };
  const worker = await startWorker(flow, { ...base, logger: silent });
  try {
    const runId = await client.startFlow('ctxTimeout', {});
    const status = await client.waitForRun(runId);
    assert.equal(status.status, 'failed');
    assert.match(status.error ?? '', /step "slow" timed out after 1s/);
    // The handler heard it from its signal (not from the worker stopping: that comes later).
    const heard = await waitFor('the handler to see its signal abort on the timeout', () => seen, {
      timeoutMs: 10_000,
    });
    assert.equal(heard.aborted, true);
    assert.ok(!(heard.reason instanceof WorkerShutdownError), String(heard.reason));
    assert.match(String(heard.reason), /step "slow" timed out after 1s/);
  } finally {
    await worker.stop();
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
