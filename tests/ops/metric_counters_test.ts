/**
 * Counters, histograms and levels (issue 42;
 * docs/design/observability.md#counters-histograms-and-levels) against a workload run
 * by real workers on real PostgreSQL: every counter equals what the workload's own rows say
 * (attempts, failed attempts, completed tasks and their durations bucketed here, runs by
 * outcome, signals), pruning the history never lowers one, folding keeps every sum, sessions
 * racing on the same label set lose no count and never deadlock, and the Prometheus text has
 * counter and histogram families that agree with the snapshot.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import {
  dashboardSnapshot,
  metrics,
  type MetricSnapshot,
  metricSnapshot,
  prometheusText,
} from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

const RUNS = 16;
const FLAKY = 4;
const DOOMED = 3;
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

const work = new Flow<{ n: number; flaky: boolean }>({ slug: 'countWorkV1', baseDelay: 0 })
  .step({ slug: 'work' }, async (input, ctx) => {
    await new Promise((r) => setTimeout(r, (input.n % 4) * 15));
    if (input.flaky && ctx.attempt === 1) throw new Error(`flaky ${input.n}`);
    return input.n;
  })
  .step({ slug: 'finish', dependsOn: ['work'] }, (input) => input.work * 2);
const doomed = new Flow<{ n: number }>({ slug: 'countFailV1', maxAttempts: 2, baseDelay: 0 })
  .step({ slug: 'doomed' }, (input) => {
    throw new Error(`always ${input.n}`);
  });
const waiting = new Flow<{ n: number }>({ slug: 'countWaitV1' })
  .wait({ slug: 'approval', timeout: 3600 });
const tenant = new Flow<{ tenant: string; n: number }>({ slug: 'countTenantV1' })
  .step({ slug: 'work', rateLimit: { name: 'count-api' } }, (input) => input.n);

/** Prometheus' bucket of a duration: the first bound at or above it (le is inclusive). */
function bucketOf(seconds: number): number {
  const i = BOUNDS.findIndex((b) => seconds <= b);
  return i === -1 ? BOUNDS.length : i;
}

function counter(s: MetricSnapshot, metric: string, match: Record<string, string> = {}): number {
  return s.counters
    .filter((c) =>
      c.metric === metric &&
      Object.entries(match).every(([k, v]) => (c as unknown as Record<string, string>)[k] === v)
    )
    .reduce((a, c) => a + c.n, 0);
}

// The workload, once. The rate-limited runs wait on their queue before their worker starts, so
// its first batch of 4 meets a burst of 2: the claim holds two back at least.
await sql`select switchyard.set_rate_limit('count-api', 20, 1, 2)`;
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(tenant).shape as never)}::jsonb)`;
for (let n = 0; n < 8; n++) {
  await sql`select switchyard.start_flow('countTenantV1', ${sql.json({ tenant: 't', n })}::jsonb)`;
}
const workers = await Promise.all([
  startWorker(work, { connectionString: db.url, ...FAST, logger: SILENT }),
  startWorker(doomed, { connectionString: db.url, ...FAST, logger: SILENT }),
  startWorker(tenant, {
    connectionString: db.url,
    ...FAST,
    maxConcurrent: 4,
    batchSize: 4,
    logger: SILENT,
  }),
]);
try {
  for (let n = 0; n < RUNS; n++) {
    await sql`select switchyard.start_flow('countWorkV1',
      ${sql.json({ n, flaky: n < FLAKY })}::jsonb)`;
  }
  for (let n = 0; n < DOOMED; n++) {
    await sql`select switchyard.start_flow('countFailV1', ${sql.json({ n })}::jsonb)`;
  }
  await waitFor('every run to finish', async () => {
    const [{ open }] = await sql`select count(*)::int as open from switchyard.runs
                                  where status = 'started'`;
    return open === 0;
  }, { timeoutMs: 60_000 });
} finally {
  await within(30_000, 'the workers to stop', Promise.all(workers.map((w) => w.stop())));
}
// Wait steps: three runs; one signalled (delivered), one cancelled, one left waiting.
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(waiting).shape as never)}::jsonb)`;
const waitRuns: string[] = [];
for (let n = 0; n < 3; n++) {
  const [{ id }] = await sql`select switchyard.start_flow('countWaitV1',
    ${sql.json({ n })}::jsonb) as id`;
  waitRuns.push(id);
}
await sql`select switchyard.signal_run(${waitRuns[0]}::uuid, 'approval', '{"ok":true}'::jsonb)`;
await sql`select switchyard.cancel_run(${waitRuns[1]}::uuid, 'not needed')`;

Deno.test('task counters equal the rows: claims, retries, failed attempts, completions', async () => {
  const s = await metricSnapshot(client);
  for (
    const [version, step] of [
      ['countWorkV1', 'work'],
      ['countWorkV1', 'finish'],
      ['countFailV1', 'doomed'],
      ['countTenantV1', 'work'],
    ]
  ) {
    const [raw] = await sql`select coalesce(sum(attempts_count), 0)::int as claims,
        coalesce(sum(greatest(attempts_count - 1, 0)), 0)::int as retries,
        count(*) filter (where status = 'completed')::int as completions,
        (select count(*)::int from switchyard.failed_attempts f
          where f.flow_slug = ${version} and f.step_slug = ${step}) as failed
      from switchyard.step_tasks where flow_slug = ${version} and step_slug = ${step}`;
    const at = { version, step };
    assert.deepEqual(
      {
        claims: counter(s, 'claims', at),
        retries: counter(s, 'retries', at),
        completions: counter(s, 'task_duration', at),
        failed: counter(s, 'failed_attempts', at),
      },
      raw,
      `${version} ${step}`,
    );
  }
  const W = { version: 'countWorkV1' };
  // And the workload's own arithmetic.
  assert.equal(counter(s, 'claims', { ...W, step: 'work' }), RUNS + FLAKY);
  assert.equal(counter(s, 'retries', { ...W, step: 'work' }), FLAKY);
  assert.equal(counter(s, 'failed_attempts', { step: 'doomed' }), 2 * DOOMED);
  assert.equal(counter(s, 'task_duration', { ...W, step: 'finish' }), RUNS);
  const c = s.counters.find((x) =>
    x.metric === 'claims' && x.version === 'countWorkV1' &&
    x.step === 'work'
  )!;
  assert.deepEqual([c.queueName, c.flow, c.version], ['countworkv1', 'countWorkV1', 'countWorkV1']);
  // The tenant's batches of 4 with a concurrency of 1: the claim held some back.
  assert.ok(counter(s, 'throttled', { queueName: 'counttenantv1' }) > 0, 'throttled claims');
});

Deno.test("histograms: the completed tasks' durations, bucketed here, and their sum", async () => {
  const s = await metricSnapshot(client);
  for (const step of ['work', 'finish']) {
    const rows = await sql`select extract(epoch from completed_at - started_at)::float8 as secs
        from switchyard.step_tasks
       where flow_slug = 'countWorkV1' and step_slug = ${step} and status = 'completed'`;
    const secs = rows.map((r) => r.secs as number);
    const buckets = s.histograms.filter((h) =>
      h.metric === 'task_duration' && h.version === 'countWorkV1' && h.step === step
    );
    assert.equal(buckets.length, BOUNDS.length + 1);
    assert.deepEqual(buckets.map((b) => b.le), [...BOUNDS, Infinity]);
    const expected = [...BOUNDS, Infinity].map((_, i) =>
      secs.filter((x) => bucketOf(x) <= i).length
    );
    assert.deepEqual(buckets.map((b) => b.count), expected, `cumulative buckets of ${step}`);
    const total = s.counters.find((x) =>
      x.metric === 'task_duration' && x.version === 'countWorkV1' && x.step === step
    )!.total;
    assert.ok(
      Math.abs(
        total - secs.reduce((a, b) =>
          a + b, 0),
      ) < 1e-6,
      `sum of ${step}`,
    );
  }
  // Queue waits of first attempts: finish never retries, so every claim is a first attempt.
  const waits = await sql`select extract(epoch from t.started_at - t.queued_at)::float8 as secs
      from switchyard.step_tasks t where t.flow_slug = 'countWorkV1' and t.step_slug = 'finish'`;
  const qw = s.counters.find((x) => x.metric === 'queue_wait' && x.step === 'finish')!;
  assert.equal(qw.n, RUNS);
  assert.ok(Math.abs(qw.total - waits.reduce((a, r) => a + (r.secs as number), 0)) < 1e-6);
  assert.equal(
    counter(s, 'queue_wait', { version: 'countWorkV1', step: 'work' }),
    RUNS,
    'first attempts only',
  );
});

Deno.test('the upgrade step seeds the counters from the history the rows hold, and samples', async () => {
  // Run on this database's rows in a transaction rolled back: the counters the workload left are
  // what the step must find again from the rows (nothing was pruned), but the ones nothing
  // recorded (throttled claims, retried runs, signals) and retried tasks' first waits.
  const step = await Deno.readTextFile(
    new URL(
      '../../supabase/upgrades/unreleased/after/045_metric_counters_from_history.sql',
      import.meta.url,
    ),
  );
  const grouped = `select metric, queue_name, flow_slug, step_slug, outcome, bucket,
                          sum(n)::int as n, sum(total)::float8 as total
                     from switchyard.metric_counters group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`;
  type Row = { metric: string; n: number; total: number; [k: string]: unknown };
  const ROLLBACK = new Error('rolled back');
  let before: Row[] = [], after: Row[] = [];
  let sampled: { n: number; back: number } = { n: 0, back: 0 };
  let onceClaimed = 0;
  await sql.begin(async (tx) => {
    before = (await tx.unsafe(grouped)) as unknown as Row[];
    await tx`delete from switchyard.metric_counters`;
    await tx`delete from switchyard.metric_samples`;
    await tx.unsafe(step);
    after = (await tx.unsafe(grouped)) as unknown as Row[];
    [sampled] = await tx`select count(*)::int as n,
        extract(epoch from date_trunc('minute', now()) - min(minute))::int / 60 as back
        from switchyard.metric_samples` as unknown as { n: number; back: number }[];
    [{ n: onceClaimed }] = await tx`select count(*)::int as n from switchyard.step_tasks
                                     where attempts_count = 1`;
    throw ROLLBACK;
  }).catch((e) => {
    if (e !== ROLLBACK) throw e;
  });
  const key = (r: Row) =>
    [r.metric, r.queue_name, r.flow_slug, r.step_slug, r.outcome, r.bucket].join('/');
  const seeded = ['claims', 'retries', 'task_duration', 'failed_attempts', 'run_duration'];
  const pick = (rows: Row[]) => rows.filter((r) => seeded.includes(r.metric));
  assert.deepEqual(pick(after).map(key), pick(before).map(key));
  pick(after).forEach((r, i) => {
    assert.equal(r.n, pick(before)[i].n, key(r));
    assert.ok(Math.abs(r.total - pick(before)[i].total) < 1e-6, `the sum of ${key(r)}`);
  });
  assert.deepEqual(
    after.filter((r) => ['throttled', 'runs_retried', 'signals'].includes(r.metric)),
    [],
    'never recorded, so not seeded',
  );
  const waits = (rows: Row[]) =>
    rows.filter((r) => r.metric === 'queue_wait').reduce((a, r) => a + r.n, 0);
  assert.equal(waits(after), onceClaimed, 'the waits of tasks claimed once');
  assert.ok(waits(after) < waits(before), "a retried task's first wait is not in its row");
  assert.ok(sampled.n > 0, 'a sample for every queue');
  assert.equal(sampled.back, 1440, "the sample of the charts' oldest minute");
});

Deno.test('run counters by version and outcome; signals; run durations', async () => {
  const s = await metricSnapshot(client);
  const byOutcome = await sql`select flow_slug, status, count(*)::int as n,
      sum(extract(epoch from coalesce(completed_at, failed_at, cancelled_at) - started_at))::float8
        as secs
      from switchyard.runs group by 1, 2`;
  for (const r of byOutcome) {
    if (r.status === 'started') continue;
    const c = s.counters.find((x) =>
      x.metric === 'run_duration' && x.version === r.flow_slug && x.outcome === r.status
    );
    assert.ok(c, `run_duration ${r.flow_slug} ${r.status}`);
    assert.equal(c.n, r.n);
    assert.ok(Math.abs(c.total - r.secs) < 1e-6);
  }
  assert.equal(counter(s, 'runs_started', { version: 'countWorkV1' }), RUNS);
  assert.equal(counter(s, 'run_duration', { version: 'countWorkV1', outcome: 'completed' }), RUNS);
  assert.equal(counter(s, 'run_duration', { version: 'countFailV1', outcome: 'failed' }), DOOMED);
  assert.equal(counter(s, 'runs_started', { version: 'countWaitV1' }), 3);
  assert.equal(counter(s, 'run_duration', { version: 'countWaitV1', outcome: 'cancelled' }), 1);
  assert.equal(counter(s, 'signals', { version: 'countWaitV1', outcome: 'delivered' }), 1);
  const g = (gauge: string, version: string) =>
    s.gauges.find((x) => x.gauge === gauge && x.version === version)?.value ?? 0;
  assert.equal(g('runs_active', 'countWaitV1'), 1);
  assert.equal(g('runs_waiting', 'countWaitV1'), 1);
  assert.equal(g('waits_overdue', 'countWaitV1'), 0);
  // Its deadline passed and nothing expired it: overdue.
  await sql`update switchyard.step_states
             set wait_deadline = now() - interval '1 minute', wait_due = now() - interval '1 minute'
             where run_id = ${waitRuns[2]}::uuid and step_slug = 'approval'`;
  const later = await metricSnapshot(client);
  assert.equal(
    later.gauges.find((x) => x.gauge === 'waits_overdue' && x.version === 'countWaitV1')?.value,
    1,
  );
});

Deno.test('levels: live workers and paused functions per queue function', async () => {
  await sql`select switchyard.pause_function('countfailv1-worker', 'metrics test')`;
  try {
    const s = await metricSnapshot(client);
    const paused = s.gauges.filter((g) => g.gauge === 'function_paused');
    assert.equal(
      paused.find((g) => g.functionName === 'countfailv1-worker')?.value,
      1,
      JSON.stringify(paused),
    );
    assert.equal(paused.find((g) => g.functionName === 'countworkv1-worker')?.value, 0);
    // Every worker stopped: none live.
    const live = s.gauges.filter((g) => g.gauge === 'workers_live');
    assert.ok(live.length >= 3 && live.every((g) => g.value === 0), JSON.stringify(live));
  } finally {
    await sql`select switchyard.resume_function('countfailv1-worker')`;
  }
});

Deno.test('pruning the history never lowers a counter; folding keeps every sum', async () => {
  const before = await metricSnapshot(client);
  const [{ rows: rowsBefore }] = await sql`select count(*)::int as rows
      from switchyard.metric_counters`;
  // Every finished run is two hours old, then pruned.
  await sql`update switchyard.runs set completed_at = completed_at - interval '2 hours',
                   failed_at = failed_at - interval '2 hours',
                   cancelled_at = cancelled_at - interval '2 hours'
             where status <> 'started'`;
  const [pruned] = await sql`select (switchyard.prune(interval '1 hour', 10000)).*`;
  const [{ left }] = await sql`select count(*)::int as left from switchyard.step_tasks`;
  assert.equal(Number(pruned.runs), RUNS + DOOMED + 8 + 2, JSON.stringify(pruned));
  assert.equal(left, 0, 'every task was pruned (the waiting run has none)');
  const after = await metricSnapshot(client);
  // Counts exactly; sums of seconds up to the order of a floating-point addition.
  const rounded = (x: MetricSnapshot) =>
    x.counters.map((c) => ({ ...c, total: Math.round(c.total * 1e6) }));
  assert.deepEqual(rounded(after), rounded(before));
  assert.deepEqual(after.histograms, before.histograms);
  // Prune folded every session's rows into shard 0.
  const [{ rows, shards }] = await sql`select count(*)::int as rows,
      count(*) filter (where shard <> 0)::int as shards from switchyard.metric_counters`;
  assert.equal(shards, 0);
  assert.ok(rows <= rowsBefore, `${rows} rows after folding ${rowsBefore}`);
});

Deno.test('sessions racing on one label set lose no count and never deadlock; a fold runs among them', async () => {
  const SESSIONS = 8;
  const EACH = 40;
  const before = counter(await metricSnapshot(client), 'claims', { queueName: 'race' });
  const racers = Array.from({ length: SESSIONS }, (_, i) =>
    (async () => {
      for (let k = 0; k < EACH; k++) {
        // Two label sets per transaction, in opposite orders on odd and even sessions.
        await sql.begin(async (tx) => {
          const sets = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
          for (const step of sets) {
            await tx`select switchyard._count_metrics(array['claims'], array['race'], array['f'],
                       array[${step}], null, array[0.02])`;
          }
        });
        if (k % 10 === 0) await sql`select switchyard.fold_metric_counters()`;
      }
    })());
  await Promise.all(racers);
  await sql`select switchyard.fold_metric_counters()`;
  const s = await metricSnapshot(client);
  assert.equal(counter(s, 'claims', { queueName: 'race' }) - before, SESSIONS * EACH * 2);
  const b = s.histograms.filter((h) => h.metric === 'claims' && h.queueName === 'race');
  assert.equal(b.find((x) => x.step === 'a' && x.le === 0.025)?.count, SESSIONS * EACH);
  assert.equal(b.find((x) => x.step === 'a' && x.le === 0.01)?.count, 0);
});

Deno.test('Prometheus text: counters, histograms and levels as the snapshot has them', async () => {
  const s = await metricSnapshot(client);
  const text = prometheusText(await metrics(client, { windowSeconds: 60 }), s);
  assert.match(text, /^# TYPE switchyard_task_claims_total counter$/m);
  assert.match(text, /^# TYPE switchyard_task_duration_seconds histogram$/m);
  assert.match(text, /^# TYPE switchyard_workers_live gauge$/m);
  assert.match(text, /^# TYPE switchyard_window_step_claims gauge$/m);
  const line = (re: RegExp) => {
    const m = text.match(re);
    assert.ok(m, String(re));
    return Number(m[1]);
  };
  const labels = 'queue="countworkv1",flow="countWorkV1",version="countWorkV1",step="finish"';
  const esc = labels.replace(/[{}]/g, '\\$&');
  assert.equal(
    line(new RegExp(`^switchyard_task_completions_total\\{${esc}\\} (\\S+)$`, 'm')),
    counter(s, 'task_duration', { step: 'finish' }),
  );
  const inf = line(
    new RegExp(`^switchyard_task_duration_seconds_bucket\\{${esc},le="\\+Inf"\\} (\\S+)$`, 'm'),
  );
  const count = line(
    new RegExp(`^switchyard_task_duration_seconds_count\\{${esc}\\} (\\S+)$`, 'm'),
  );
  assert.equal(inf, count);
  assert.equal(count, RUNS);
  assert.equal(
    line(/^switchyard_runs_failed_total\{flow="countFailV1",version="countFailV1"\} (\S+)$/m),
    DOOMED,
  );
  // Buckets never decrease along le.
  const series = [...text.matchAll(
    new RegExp(`^switchyard_task_duration_seconds_bucket\\{${esc},le="([^"]+)"\\} (\\S+)$`, 'gm'),
  )].map((m) => Number(m[2]));
  assert.equal(series.length, BOUNDS.length + 1);
  assert.ok(series.every((v, i) => i === 0 || v >= series[i - 1]));
});

Deno.test("the kit's dashboard shows the same counters per queue", async () => {
  const [overview, s] = await Promise.all([dashboardSnapshot(client), metricSnapshot(client)]);
  const q = overview.queues.find((x) => x.queueName === 'countworkv1');
  assert.ok(q);
  const at = { queueName: 'countworkv1' };
  assert.deepEqual(q.totals, {
    claims: counter(s, 'claims', at),
    completions: counter(s, 'task_duration', at),
    failedAttempts: counter(s, 'failed_attempts', at),
    retries: counter(s, 'retries', at),
    throttled: 0,
  });
  assert.deepEqual(
    [q.totals.claims, q.totals.completions, q.totals.retries],
    [2 * RUNS + FLAKY, 2 * RUNS, FLAKY],
  );
  const tenant = overview.queues.find((x) => x.queueName === 'counttenantv1');
  assert.equal(tenant?.totals.throttled, counter(s, 'throttled', { queueName: 'counttenantv1' }));
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
