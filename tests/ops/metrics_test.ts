/**
 * Metrics (issue 26; docs/design/observability.md): `switchyard.metrics` and the charts' history
 * against known workloads run by real workers on real PostgreSQL — counts from the workload's
 * own arithmetic, percentiles computed here from known durations and from the raw rows —, the
 * Prometheus text of the dashboard's `/metrics` read by a strict parser, and the operator
 * command.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { OperationError } from '../../lib/errors.ts';
import {
  createDashboard,
  type Metrics,
  metrics,
  metricsHistory,
  type StepMetrics,
} from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { parsePrometheus } from '../_helpers/prometheus.ts';
import { deno } from '../_helpers/process.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const SECRET = 'metrics-test-secret';

const RUNS = 20;
const FLAKY = 5; // the first RUNS / 4 runs fail their first attempt of `work`
const DOOMED = 3;

const work = new Flow<{ n: number; flaky: boolean }>({ slug: 'metricsWorkV1', baseDelay: 0 })
  .step({ slug: 'work' }, (input, ctx) => {
    if (input.flaky && ctx.attempt === 1) throw new Error(`flaky ${input.n}`);
    return input.n;
  })
  .step({ slug: 'finish', dependsOn: ['work'] }, (input) => input.work * 2);
const doomed = new Flow<{ n: number }>({ slug: 'metricsFailV1', maxAttempts: 2, baseDelay: 0 })
  .step({ slug: 'doomed' }, (input) => {
    throw new Error(`always ${input.n}`);
  });
const idle = new Flow<{ n: number }>({ slug: 'metricsIdleV1' }).step({ slug: 'wait' }, () => 1);

/** `percentile_cont`: linear interpolation between the closest ranks of the sorted values. */
function percentile(values: number[], q: number): number {
  const v = [...values].sort((a, b) => a - b);
  const pos = q * (v.length - 1);
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

function step(m: Metrics, stepSlug: string): StepMetrics {
  const s = m.steps.find((x) => x.stepSlug === stepSlug);
  assert.ok(s, `a metrics row for step ${stepSlug}`);
  return s;
}

const queue = (m: Metrics, name: string) => {
  const q = m.queues.find((x) => x.queueName === name);
  assert.ok(q, `a metrics row for queue ${name}`);
  return q;
};

// The workload, once: every run of both flows finished by real workers.
const workers = await Promise.all([
  startWorker(work, { connectionString: db.url, ...FAST, logger: SILENT }),
  startWorker(doomed, { connectionString: db.url, ...FAST, logger: SILENT }),
]);
try {
  for (let n = 0; n < RUNS; n++) {
    await sql`select switchyard.start_flow('metricsWorkV1',
      ${sql.json({ n, flaky: n < FLAKY })}::jsonb)`;
  }
  for (let n = 0; n < DOOMED; n++) {
    await sql`select switchyard.start_flow('metricsFailV1', ${sql.json({ n })}::jsonb)`;
  }
  await waitFor('every run to finish', async () => {
    const [{ open }] = await sql`select count(*)::int as open from switchyard.runs
                                  where status = 'started'`;
    return open === 0;
  }, { timeoutMs: 30_000 });
} finally {
  await within(30_000, 'the workers to stop', Promise.all(workers.map((w) => w.stop())));
}
// A queue no worker reads: two runs waiting, their messages visible for 42 s, sent 50 s ago.
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(idle).shape as never)}::jsonb)`;
for (let n = 0; n < 2; n++) {
  await sql`select switchyard.start_flow('metricsIdleV1', ${sql.json({ n })}::jsonb)`;
}
await sql`update pgmq.q_metricsidlev1
             set vt = now() - interval '42 seconds', enqueued_at = now() - interval '50 seconds'`;
await sql`update switchyard.step_tasks set queued_at = now() - interval '90 seconds'
           where flow_slug = 'metricsIdleV1'`;

Deno.test('counts per queue and step follow the workload: claims, completions, failures, retries, attempts', async () => {
  const m = await metrics(client, { windowSeconds: 600 });
  assert.equal(m.windowSeconds, 600);
  const w = step(m, 'work');
  assert.deepEqual(
    [w.claims, w.completions, w.failures, w.retries, w.attemptsMax],
    [RUNS, RUNS, FLAKY, FLAKY, 2],
  );
  assert.equal(w.attemptsAvg, (RUNS - FLAKY + 2 * FLAKY) / RUNS);
  const f = step(m, 'finish');
  assert.deepEqual([f.claims, f.completions, f.failures, f.retries], [RUNS, RUNS, 0, 0]);
  assert.deepEqual([f.attemptsAvg, f.attemptsMax], [1, 1]);
  const d = step(m, 'doomed');
  assert.deepEqual(
    [d.claims, d.completions, d.failures, d.retries, d.attemptsAvg, d.attemptsMax],
    [DOOMED, 0, 2 * DOOMED, DOOMED, 2, 2],
    'failures are attempts: a task that failed twice counts twice (issue 36)',
  );
  assert.equal(d.p50Ms, null, 'no completed task, no duration');
  const q = queue(m, 'metricsworkv1');
  assert.deepEqual(
    [q.claims, q.completions, q.failures, q.retries, q.depth, q.lagSeconds],
    [2 * RUNS, 2 * RUNS, FLAKY, FLAKY, 0, 0],
  );
  assert.deepEqual(q.functions, ['metricsworkv1-worker']);
  assert.equal(q.completionsPerSecond, (2 * RUNS) / 600);
  assert.equal(q.failuresPerSecond, FLAKY / 600);
});

Deno.test('depth and lag of a queue no worker reads come from its messages', async () => {
  const m = await metrics(client);
  const q = queue(m, 'metricsidlev1');
  assert.equal(q.depth, 2);
  assert.equal(q.hidden, 0);
  assert.ok(q.lagSeconds >= 42 && q.lagSeconds < 52, `lag ${q.lagSeconds}`);
  assert.ok(q.oldestAgeSeconds >= 50 && q.oldestAgeSeconds < 60, `age ${q.oldestAgeSeconds}`);
  assert.equal(q.claims, 0);
  assert.equal(m.steps.some((s) => s.queueName === 'metricsidlev1'), false);
  const [h] = (await metricsHistory(client, { minutes: 5 })).filter((x) =>
    x.queueName === 'metricsidlev1'
  );
  assert.equal(h.lagSeconds.length, 5);
  // The chart's lag is the queue's lag gauge: now for the current minute, and at the sample
  // ending each earlier minute (the workers' heartbeats took this minute's, before the wait).
  const now = h.lagSeconds.at(-1)!;
  assert.ok(now >= q.lagSeconds && now < q.lagSeconds + 10, `lag of the waiting tasks now: ${now}`);
  assert.equal(h.lagSeconds[0], null, 'no sample ended the minute of five minutes ago');
});

Deno.test('percentiles: known durations, and the raw durations of a real step', async () => {
  // The `work` step's durations as the rows have them, the percentiles computed here.
  const raw = (await sql<{ ms: number }[]>`
    select extract(epoch from completed_at - started_at)::float8 * 1000 as ms
      from switchyard.step_tasks where flow_slug = 'metricsWorkV1' and step_slug = 'work'`)
    .map((r) => r.ms);
  assert.equal(raw.length, RUNS);
  let m = await metrics(client, { windowSeconds: 600 });
  const w = step(m, 'work');
  for (const [q, got] of [[0.5, w.p50Ms], [0.95, w.p95Ms], [0.99, w.p99Ms]] as const) {
    assert.ok(Math.abs(got! - percentile(raw, q)) < 1e-6, `p${q * 100}: ${got}`);
  }
  // Known durations: the i-th `finish` task took 10 * i ms (10 to 200).
  await sql`update switchyard.step_tasks t
               set started_at = t.completed_at - make_interval(secs => o.i * 0.01)
              from (select run_id, row_number() over (order by run_id) as i
                      from switchyard.step_tasks
                     where flow_slug = 'metricsWorkV1' and step_slug = 'finish') o
             where t.run_id = o.run_id and t.step_slug = 'finish'`;
  const known = Array.from({ length: RUNS }, (_, i) => 10 * (i + 1));
  m = await metrics(client, { windowSeconds: 600 });
  const f = step(m, 'finish');
  assert.ok(Math.abs(f.p50Ms! - percentile(known, 0.5)) < 1e-6, `p50 ${f.p50Ms}`);
  assert.ok(Math.abs(f.p95Ms! - percentile(known, 0.95)) < 1e-6, `p95 ${f.p95Ms}`);
  assert.ok(Math.abs(f.p99Ms! - percentile(known, 0.99)) < 1e-6, `p99 ${f.p99Ms}`);
  assert.equal(f.p50Ms, 105);
});

Deno.test('the window bounds what counts: tasks of two hours ago are history, read by no metric', async () => {
  // The charts are the counters' (docs/design/observability.md#counters-histograms-and-levels):
  // they add up to the workload, and no task row moves them.
  const history = await metricsHistory(client, { minutes: 60 });
  const workQ = history.find((h) => h.queueName === 'metricsworkv1')!;
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  assert.equal(sum(workQ.completions), 2 * RUNS);
  assert.equal(sum(workQ.failures), FLAKY);
  assert.ok(workQ.p95Ms.some((p) => p !== null), 'a p95 where tasks completed');
  const failQ = history.find((h) => h.queueName === 'metricsfailv1')!;
  assert.equal(sum(failQ.failures), 2 * DOOMED, 'failed attempts, two per doomed task');
  // Ten `finish` tasks move two hours back: out of both the window and the charts.
  await sql`update switchyard.step_tasks
               set started_at = started_at - interval '2 hours',
                   completed_at = completed_at - interval '2 hours',
                   queued_at = queued_at - interval '2 hours'
             where (run_id, step_slug) in (
               select run_id, step_slug from switchyard.step_tasks
                where flow_slug = 'metricsWorkV1' and step_slug = 'finish'
                order by run_id limit 10)`;
  const m = await metrics(client, { windowSeconds: 3600 });
  assert.equal(step(m, 'finish').completions, RUNS - 10);
  assert.equal(queue(m, 'metricsworkv1').completions, 2 * RUNS - 10);
  const after = (await metricsHistory(client)).find((h) => h.queueName === 'metricsworkv1')!;
  assert.equal(
    sum(after.completions),
    2 * RUNS,
    'the charts count what happened, whatever the rows',
  );
  // The window's condition is the index's key (a table this small is read whole by the planner
  // anyway; bench figure 12 measures a million rows).
  const plan = await sql.begin(async (tx) => {
    await tx`set local enable_seqscan = off`;
    return (await tx.unsafe(`explain select count(*) from switchyard.step_tasks t
       where t.started_at is not null
         and greatest(t.started_at, t.completed_at, t.last_failed_at) >= now() - interval '60 s'`))
      .map((r) => String(r['QUERY PLAN'])).join('\n');
  });
  assert.match(plan, /step_tasks_recent/, plan);
});

Deno.test('a window out of range is refused with the rule', async () => {
  for (const windowSeconds of [0, 86401]) {
    await assert.rejects(
      metrics(client, { windowSeconds }),
      (e) =>
        e instanceof OperationError && e.code === '22023' &&
        new RegExp(`window_seconds ${windowSeconds} is out of range: use 1 to 86400`).test(
          e.message,
        ),
    );
  }
});

/** One sample of Prometheus' text format. */
Deno.test('the strict reader refuses malformed text', () => {
  const ok = '# HELP a_b x\n# TYPE a_b gauge\na_b{q="x\\"y"} 1.5\n';
  assert.deepEqual(parsePrometheus(ok), [{ name: 'a_b', labels: { q: 'x"y' }, value: 1.5 }]);
  for (
    const bad of [
      'a_b 1\n', // no HELP/TYPE
      '# HELP a_b x\n# TYPE a_b gauge\na_b{q="x} 1\n',
      '# HELP a_b x\n# TYPE a_b gauge\na_b NaN\n',
      '# HELP a_b x\n# TYPE a_b gauge\na_b 1\na_b 2\n',
      '# HELP a_b x\n# TYPE a_b gauge\na_b 1',
    ]
  ) assert.throws(() => parsePrometheus(bad), Error, JSON.stringify(bad));
});

Deno.test('GET /metrics: Prometheus text behind the bearer, equal to the metrics document', async () => {
  const vars: Record<string, string> = { SWITCHYARD_WORKER_SECRET: SECRET };
  const dashboard = createDashboard({ source: client, env: (n) => vars[n] });
  const port = freePort();
  const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
  const base = `http://127.0.0.1:${port}`;
  try {
    const refused = await fetch(`${base}/metrics`);
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).error, 'unauthorized');
    const auth = { authorization: `Bearer ${SECRET}` };
    const bad = await fetch(`${base}/metrics?window=0`, { headers: auth });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).message, /window/);
    const response = await fetch(`${base}/metrics?window=3600`, { headers: auth });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
    const samples = parsePrometheus(await response.text());
    const m = await metrics(client, { windowSeconds: 3600 });
    const get = (name: string, labels: Record<string, string>) =>
      samples.filter((s) =>
        s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
      );
    assert.deepEqual(get('switchyard_window_seconds', {}).map((s) => s.value), [3600]);
    assert.deepEqual(get('switchyard_queue_depth', { queue: 'metricsidlev1' })[0].value, 2);
    assert.deepEqual(
      get('switchyard_queue_function_info', { queue: 'metricsfailv1' }).map((s) => s.labels),
      [{ queue: 'metricsfailv1', function: 'metricsfailv1-worker' }],
    );
    const labels = { queue: 'metricsworkv1', flow: 'metricsWorkV1', step: 'finish' };
    const finish = step(m, 'finish');
    assert.equal(get('switchyard_window_step_completions', labels)[0].value, finish.completions);
    assert.equal(
      get('switchyard_window_step_duration_seconds', { ...labels, quantile: '0.95' })[0].value,
      finish.p95Ms! / 1000,
    );
    // No completed task, no quantile sample (never NaN).
    assert.equal(get('switchyard_window_step_duration_seconds', { step: 'doomed' }).length, 0);
    assert.equal(get('switchyard_window_step_failures', { step: 'doomed' })[0].value, 2 * DOOMED);
    assert.equal(
      get('switchyard_window_queue_failures_per_second', { queue: 'metricsfailv1' })[0].value,
      2 * DOOMED / m.windowSeconds,
    );
    // Every queue has a depth sample.
    assert.equal(get('switchyard_queue_depth', {}).length, m.queues.length);
  } finally {
    await server.shutdown();
  }
});

Deno.test('deno task metrics prints the tables, Prometheus text, and refuses a bad window', async () => {
  const run = (...args: string[]) =>
    deno(['run', '--allow-env', '--allow-net', 'cli/metrics.ts', ...args], {
      env: { DATABASE_URL: db.url },
    });
  const table = await run('--window', '3600');
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^window: the last 3600 s/);
  assert.match(table.stdout, /metricsidlev1 +- +2 +0 /);
  assert.match(table.stdout, /metricsworkv1 +metricsWorkV1 +work +20 +20 +5 +5 /);
  const prom = await run('--prometheus');
  assert.equal(prom.code, 0, prom.stderr);
  assert.ok(parsePrometheus(prom.stdout).length > 0);
  const bad = await run('--window', '90000');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--window 90000 is invalid: use at most 86400 seconds/);
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
