/**
 * Traces (issue 26; docs/design/observability.md): with an OpenTelemetry SDK registered (an
 * in-memory exporter), a real worker on real PostgreSQL makes one span per task attempt with
 * its attributes, a child of the trace context the caller gave at `client.start` (explicitly, or
 * its active span), linked to the claim span of its batch; claim and completion batches have
 * spans of their own. A malformed
 * trace context from a caller is logged and the run starts untraced; SQL refuses one with the rule.
 */
import assert from 'node:assert/strict';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { toPlacement } from '../../lib/dsl/placement.ts';
import {
  defineDeployedFlow,
  Flow,
  routeFlow,
  runSpanIdGenerator,
  startWorker,
} from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { formatTraceparent } from '../../lib/tracing.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  idGenerator: runSpanIdGenerator(),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const app = trace.getTracer('the-application');

const db = await createTestDatabase();
const sql = db.sql;
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

const traced = new Flow<{ n: number }>({ slug: 'tracedV1', baseDelay: 0 })
  .step({ slug: 'fetch' }, (input) => input.n)
  .step({ slug: 'flaky', dependsOn: ['fetch'] }, (input, ctx) => {
    if (ctx.attempt === 1) throw new Error(`first attempt of ${input.fetch}`);
    // A span the handler makes is a child of its task's span.
    app.startSpan('inside the handler').end();
    return input.fetch + 1;
  });
const registry = [defineDeployedFlow(traced, { alias: 'traced' })] as const;
const client = createClient(registry, { connectionString: db.url });
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(traced).shape as never)}::jsonb)`;
await sql`select switchyard.sync_alias('traced', array['tracedV1'])`;

const attr = (s: ReadableSpan, k: string) => s.attributes[k];
const parentOf = (s: ReadableSpan) =>
  (s as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId;

Deno.test('one span per task attempt with its attributes, in the trace the caller gave at start', async () => {
  const caller = app.startSpan('checkout request');
  const explicit = await client.start('traced', { n: 1 }, {
    traceparent: formatTraceparent(caller.spanContext())!,
  });
  // Without the option: the caller's active span.
  const active = app.startSpan('another request');
  const implicit = await context.with(
    trace.setSpan(ROOT_CONTEXT, active),
    () => client.start('traced', { n: 2 }),
  );
  const untraced = await context.with(ROOT_CONTEXT, () => client.start('traced', { n: 3 }));
  const [{ stored }] = await sql`select trace_context as stored from switchyard.runs
                                  where run_id = ${explicit.runId}`;
  assert.equal(stored, formatTraceparent(caller.spanContext()));
  const worker = await startWorker(registry, {
    queueName: 'tracedv1',
    connectionString: db.url,
    ...FAST,
    logger: SILENT,
  });
  try {
    for (const h of [explicit, implicit, untraced]) {
      await within(30_000, 'the run to complete', h.output({ timeoutMs: 30_000 }));
    }
    // The last completion's span ends once its batch is written.
    await waitFor(
      'every task span',
      () => exporter.getFinishedSpans().filter((s) => s.name === 'switchyard.task').length === 9,
    );
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
  caller.end();
  active.end();
  const spans = exporter.getFinishedSpans();
  const tasks = spans.filter((s) => s.name === 'switchyard.task');
  // 3 runs x (fetch, flaky twice): one span per attempt, each task's attempts numbered.
  const key = (s: ReadableSpan) =>
    `${attr(s, 'switchyard.run_id')}/${attr(s, 'switchyard.step')}/${
      attr(s, 'switchyard.attempt')
    }`;
  assert.equal(new Set(tasks.map(key)).size, 9, 'no attempt has two spans');
  for (const s of tasks) {
    assert.equal(attr(s, 'switchyard.flow'), 'traced');
    assert.equal(attr(s, 'switchyard.flow.version'), 'tracedV1');
    assert.equal(attr(s, 'switchyard.task_index'), 0);
    assert.equal(attr(s, 'switchyard.queue'), 'tracedv1');
    assert.equal(attr(s, 'switchyard.worker_id'), worker.workerId);
    const failedFirst = attr(s, 'switchyard.step') === 'flaky' &&
      attr(s, 'switchyard.attempt') === 1;
    assert.equal(attr(s, 'switchyard.disposition'), failedFirst ? 'retrying' : 'completed');
    assert.equal(s.status.code, failedFirst ? 2 : 0, 'a failed attempt is an error span');
    // Linked to the claim span of its batch.
    const claims = spans.filter((c) => c.name === 'switchyard.claim');
    assert.equal(s.links.length, 1);
    assert.ok(claims.some((c) => c.spanContext().spanId === s.links[0].context.spanId));
  }
  const ofRun = (id: string) => tasks.filter((s) => attr(s, 'switchyard.run_id') === id);
  // A span per traced run, start to end, a child of the caller's span; its tasks under it.
  await waitFor(
    'the run spans',
    () => exporter.getFinishedSpans().filter((s) => s.name === 'switchyard.run').length === 2,
  );
  const runSpans = exporter.getFinishedSpans().filter((s) => s.name === 'switchyard.run');
  for (const [handle, span] of [[explicit, caller], [implicit, active]] as const) {
    const run = runSpans.find((s) => attr(s, 'switchyard.run_id') === handle.runId);
    assert.ok(run, `the span of run ${handle.runId}`);
    assert.equal(run.spanContext().traceId, span.spanContext().traceId, "the caller's trace");
    assert.equal(parentOf(run), span.spanContext().spanId, "a child of the caller's span");
    assert.equal(attr(run, 'switchyard.run.outcome'), 'completed');
    assert.equal(attr(run, 'switchyard.flow'), 'traced');
    assert.equal(attr(run, 'switchyard.flow.version'), 'tracedV1');
    const [row] = await sql`select started_at, completed_at,
        switchyard.run_span_context(run_id, trace_context) as ctx
        from switchyard.runs where run_id = ${handle.runId}::uuid`;
    assert.equal(row.ctx.split('-')[2], run.spanContext().spanId, 'the id its tasks name');
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    assert.ok(Math.abs(ms(run.startTime) - row.started_at.getTime()) < 1, 'from the run start');
    assert.ok(Math.abs(ms(run.endTime) - row.completed_at.getTime()) < 1, 'to the run end');
    const mine = ofRun(handle.runId);
    assert.equal(mine.length, 3);
    for (const s of mine) {
      assert.equal(s.spanContext().traceId, span.spanContext().traceId, "the caller's trace");
      assert.equal(parentOf(s), run.spanContext().spanId, "a child of the run's span");
      // Within the run's span: its end is the completing transaction's time, a little before the
      // last task's span ends (once its batch is written).
      assert.ok(ms(s.startTime) >= ms(run.startTime), 'a task starts after its run');
      assert.ok(ms(s.endTime) <= ms(run.endTime) + 1000, 'and ends with it');
    }
  }
  assert.ok(
    !runSpans.some((s) => attr(s, 'switchyard.run_id') === untraced.runId),
    'a run started without a trace context has no run span',
  );
  const loose = ofRun(untraced.runId);
  assert.equal(loose.length, 3);
  for (const s of loose) {
    assert.equal(parentOf(s), undefined, 'a run without a trace context: a root span');
    assert.notEqual(s.spanContext().traceId, caller.spanContext().traceId);
  }
  // The handler's own span is a child of its task's span.
  const inner = spans.filter((s) => s.name === 'inside the handler');
  assert.equal(inner.length, 3);
  for (const s of inner) {
    const task = tasks.find((t) => t.spanContext().spanId === parentOf(s));
    assert.ok(task, 'its parent is a task span');
    assert.equal(attr(task, 'switchyard.step'), 'flaky');
  }
  // Batches: the claims counted what they took, the completions what they wrote.
  const claimed = spans.filter((s) => s.name === 'switchyard.claim')
    .reduce((n, s) => n + Number(attr(s, 'switchyard.claimed') ?? 0), 0);
  assert.equal(claimed, 9);
  const written = spans.filter((s) => s.name === 'switchyard.complete')
    .reduce((n, s) => n + Number(attr(s, 'switchyard.tasks')), 0);
  assert.equal(written, 6, 'every accepted output was written in a completion batch');
});

Deno.test("a child flow's run span is under its parent run's span; failed and cancelled runs have theirs", async () => {
  const leaf = defineDeployedFlow(
    routeFlow(
      new Flow<{ n: number }>({ slug: 'leafV1', baseDelay: 0, maxAttempts: 1 }).step(
        { slug: 'square' },
        (input) => {
          if (input.n < 0) throw new Error(`negative ${input.n}`);
          return input.n * input.n;
        },
      ),
      { queues: { square: 'traced_family' } },
    ),
    { alias: 'leaf' },
  );
  const root = defineDeployedFlow(
    routeFlow(
      new Flow<{ n: number }>({ slug: 'rootV1' })
        .childFlow({ slug: 'sub', flow: leaf })
        .step({ slug: 'report', dependsOn: ['sub'] }, (input) => input.sub.square + 1),
      { queues: { report: 'traced_family' } },
    ),
    { alias: 'root' },
  );
  const hold = new Flow<{ n: number }>({ slug: 'holdV1' }).wait({ slug: 'w' });
  for (const target of [leaf, root]) {
    await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(target).shape as never)
    }::jsonb)`;
    await sql`select switchyard.sync_alias(${target.alias}, array[${
      toPlacement(target).flow.slug
    }])`;
  }
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(hold).shape as never)}::jsonb)`;
  const family = createClient([leaf, root] as const, { connectionString: db.url });
  const caller = app.startSpan('family request');
  const traceparent = formatTraceparent(caller.spanContext())!;
  exporter.reset();
  const worker = await startWorker([leaf, root], {
    queueName: 'traced_family',
    connectionString: db.url,
    ...FAST,
    logger: SILENT,
  });
  try {
    const ok = await family.start('root', { n: 3 }, { traceparent });
    const bad = await family.start('leaf', { n: -1 }, { traceparent });
    // Cancelled in SQL, by no worker: a worker's sweep still records its span.
    const [{ held }] = await sql`select switchyard.start_flow('holdV1', '{"n": 0}'::jsonb,
      trace_context => ${traceparent}) as held`;
    await sql`select switchyard.cancel_run(${held}::uuid, 'not needed')`;
    await within(30_000, 'the root run', ok.output({ timeoutMs: 30_000 }));
    await waitFor('the failed run', async () => {
      const [r] = await sql`select status from switchyard.runs where run_id = ${bad.runId}::uuid`;
      return r.status === 'failed';
    });
    await waitFor(
      'four run spans',
      () => exporter.getFinishedSpans().filter((s) => s.name === 'switchyard.run').length === 4,
    );
    const spans = exporter.getFinishedSpans();
    const runSpan = (id: string) =>
      spans.find((s) => s.name === 'switchyard.run' && attr(s, 'switchyard.run_id') === id)!;
    const [{ child }] = await sql`select run_id as child from switchyard.child_runs
                                   where parent_run_id = ${ok.runId}::uuid`;
    const parentSpan = runSpan(ok.runId), childSpan = runSpan(child);
    assert.equal(parentOf(parentSpan), caller.spanContext().spanId);
    assert.equal(
      parentOf(childSpan),
      parentSpan.spanContext().spanId,
      'the child under its parent',
    );
    assert.equal(childSpan.spanContext().traceId, caller.spanContext().traceId);
    assert.equal(attr(childSpan, 'switchyard.flow'), 'leaf');
    const childTasks = spans.filter((s) =>
      s.name === 'switchyard.task' && attr(s, 'switchyard.run_id') === child
    );
    assert.equal(childTasks.length, 1);
    assert.equal(parentOf(childTasks[0]), childSpan.spanContext().spanId);
    const failed = runSpan(bad.runId);
    assert.equal(attr(failed, 'switchyard.run.outcome'), 'failed');
    assert.equal(failed.status.code, 2, 'a failed run is an error span');
    const cancelled = runSpan(held);
    assert.equal(attr(cancelled, 'switchyard.run.outcome'), 'cancelled');
    assert.match(String(attr(cancelled, 'switchyard.run.cancel_reason')), /not needed/);
    assert.equal(parentOf(cancelled), caller.spanContext().spanId);
    // Each run's span is recorded once, whatever the sweeps that follow.
    await new Promise((r) => setTimeout(r, 3 * FAST.heartbeatIntervalMs));
    assert.equal(
      exporter.getFinishedSpans().filter((s) => s.name === 'switchyard.run').length,
      4,
    );
  } finally {
    caller.end();
    await within(30_000, 'the worker to stop', worker.stop());
    await family.close();
  }
});

Deno.test('a run retried after its span was recorded gets a span for its new end, under the first', async () => {
  let failing = true;
  const again = new Flow<{ n: number }>({ slug: 'againV1', baseDelay: 0, maxAttempts: 1 })
    .step({ slug: 'once' }, (input) => {
      if (failing) throw new Error(`down ${input.n}`);
      return input.n;
    });
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(again).shape as never)}::jsonb)`;
  const caller = app.startSpan('retry request');
  const traceparent = formatTraceparent(caller.spanContext())!;
  const runSpans = (id: string) =>
    exporter.getFinishedSpans().filter((s) =>
      s.name === 'switchyard.run' && attr(s, 'switchyard.run_id') === id
    ).sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  const status = async (id: string) =>
    (await sql`select status from switchyard.runs where run_id = ${id}::uuid`)[0].status;
  // Ended while no worker ran: its span is not recorded yet when it is rerun, so the run keeps
  // one span, from its start to its last end.
  const [{ quiet }] = await sql`select switchyard.start_flow('againV1', '{"n": 0}'::jsonb,
    trace_context => ${traceparent}) as quiet`;
  await sql`select switchyard.cancel_run(${quiet}::uuid, 'first end')`;
  await sql`select switchyard.rerun_run(${quiet}::uuid, 'once')`;
  await sql`select switchyard.cancel_run(${quiet}::uuid, 'second end')`;
  const worker = await startWorker(again, { connectionString: db.url, ...FAST, logger: SILENT });
  try {
    const [{ run }] = await sql`select switchyard.start_flow('againV1', '{"n": 1}'::jsonb,
      trace_context => ${traceparent}) as run`;
    await waitFor('the first end', async () => (await status(run)) === 'failed');
    await waitFor('the span of its first end', () => runSpans(run).length === 1);
    failing = false;
    await sql`select switchyard.retry_run(${run}::uuid)`;
    await waitFor('the second end', async () => (await status(run)) === 'completed');
    await waitFor('the span of its second end', () => runSpans(run).length === 2);
    const [first, second] = runSpans(run);
    assert.equal(attr(first, 'switchyard.run.outcome'), 'failed');
    assert.equal(attr(second, 'switchyard.run.outcome'), 'completed');
    assert.equal(parentOf(first), caller.spanContext().spanId);
    assert.equal(parentOf(second), first.spanContext().spanId, 'the new life under the first');
    assert.notEqual(second.spanContext().spanId, first.spanContext().spanId);
    assert.equal(second.spanContext().traceId, caller.spanContext().traceId);
    const ns = (t: [number, number]) => t[0] * 1e9 + t[1];
    assert.ok(ns(second.startTime) >= ns(first.endTime), 'the second starts at the retry');
    // Each attempt's task span is under the span of its life.
    const tasks = exporter.getFinishedSpans().filter((s) =>
      s.name === 'switchyard.task' && attr(s, 'switchyard.run_id') === run
    );
    assert.deepEqual(
      tasks.map((t) => [attr(t, 'switchyard.disposition'), parentOf(t)]).sort(),
      [
        ['completed', second.spanContext().spanId],
        ['failed', first.spanContext().spanId],
      ].sort(),
    );
    await waitFor("the quiet run's span", () => runSpans(quiet).length === 1);
    const [only] = runSpans(quiet);
    assert.equal(parentOf(only), caller.spanContext().spanId);
    assert.match(String(attr(only, 'switchyard.run.cancel_reason')), /second end/);
    // Recorded once each, whatever the sweeps that follow.
    await new Promise((r) => setTimeout(r, 3 * FAST.heartbeatIntervalMs));
    assert.deepEqual([runSpans(run).length, runSpans(quiet).length], [2, 1]);
  } finally {
    caller.end();
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test('a malformed incoming traceparent is logged and the run starts untraced; SQL refuses one with the rule', async () => {
  const warned: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => warned.push(args.join(' '));
  const bad = [
    '00-abc-def-01',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01',
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '\u0000',
    'x'.repeat(10_000),
  ];
  try {
    for (const traceparent of bad) {
      const run = await client.start('traced', { n: 4 }, { traceparent });
      const [row] = await sql`select trace_context from switchyard.runs
                               where run_id = ${run.runId}::uuid`;
      assert.equal(row.trace_context, null, `${traceparent.slice(0, 60)}: started untraced`);
    }
  } finally {
    console.warn = warn;
  }
  assert.ok(warned.length >= 1, 'the first malformed traceparent is logged');
  assert.match(
    warned[0],
    /traceparent "00-abc-def-01" is invalid: use a W3C traceparent, .*; the run starts untraced/,
  );
  assert.ok(warned.every((w) => w.length < 600), 'a long value is clipped in the log');
  const [{ before }] = await sql`select count(*)::int as before from switchyard.runs`;
  await assert.rejects(
    sql`select switchyard.start_flow('traced', '{"n": 5}', trace_context => 'not-a-traceparent')`,
    (e) => {
      const err = e as { code?: string; detail?: string; message?: string };
      return err.code === '22023' && JSON.parse(err.detail!).rule === 'trace_context_format' &&
        /trace context "not-a-traceparent" is invalid/.test(err.message!);
    },
  );
  const [{ after }] = await sql`select count(*)::int as after from switchyard.runs`;
  assert.equal(after, before, 'nothing was started');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
  await provider.shutdown();
});
