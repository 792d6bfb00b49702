/**
 * The charts read the counters (issue 42;
 * docs/design/observability.md#counters-histograms-and-levels): the per-minute samples of
 * `switchyard.sample_metrics` and the charts taken as their differences, on real PostgreSQL with
 * real workers. One workload in three phases, each ended by a sample and a scrape of the
 * dashboard's `/metrics` at the same quiet moment: every chart minute equals the scrapes'
 * difference (completions, failed attempts, and the p95 as Prometheus' histogram_quantile
 * computes it from the bucket differences), and the Grafana view `metrics_minutes`, the
 * dashboard's API and `metricsHistory` give the same figures. Also: the heartbeat and the
 * keep-alive tick sample once a minute, samples and the counters' rows stay bounded without
 * prune, and bad arguments are refused naming the value and the rule.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { createDashboard, type DashboardOverview, metricsHistory } from '../../lib/ops.ts';
import type { QueueHistory } from '../../lib/sql/metrics.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { histogramQuantile, parsePrometheus, type Sample } from '../_helpers/prometheus.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
const SECRET = 'metric-samples-secret';
const WORK = 'sampleworkv1';
const IDLE = 'sampleidlev1';
const LOCK = `hashtextextended('switchyard.sample_metrics', 0)`;

const work = new Flow<{ n: number; ms: number; flaky: boolean }>({
  slug: 'sampleWorkV1',
  baseDelay: 0,
}).step({ slug: 'work' }, async (input, ctx) => {
  await new Promise((r) => setTimeout(r, input.ms));
  if (input.flaky && ctx.attempt === 1) throw new Error(`flaky ${input.n}`);
  return input.n;
});
const idle = new Flow<{ n: number }>({ slug: 'sampleIdleV1' }).step({ slug: 'x' }, () => 1);
for (const f of [work, idle]) {
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(f).shape as never)}::jsonb)`;
}

const dashboard = createDashboard({
  source: client,
  env: (n) => (n === 'SWITCHYARD_WORKER_SECRET' ? SECRET : undefined),
});
const port = freePort();
const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
const base = `http://127.0.0.1:${port}`;

/** One scrape of the dashboard's `/metrics`, with the bearer, read by the strict parser. */
async function scrape(): Promise<Sample[]> {
  const response = await fetch(`${base}/metrics`, {
    headers: { authorization: `Bearer ${SECRET}` },
  });
  assert.equal(response.status, 200);
  return parsePrometheus(await response.text());
}

/** A counter of one queue, summed over its series. */
const counter = (s: Sample[], name: string, queue = WORK) =>
  s.filter((x) => x.name === name && x.labels.queue === queue).reduce((a, x) => a + x.value, 0);

/** The task-duration histogram of one queue: its cumulative buckets summed by `le`. */
function durations(s: Sample[], queue = WORK): { le: number; count: number }[] {
  const by = new Map<number, number>();
  for (const x of s) {
    if (x.name !== 'switchyard_task_duration_seconds_bucket' || x.labels.queue !== queue) continue;
    const le = x.labels.le === '+Inf' ? Infinity : Number(x.labels.le);
    by.set(le, (by.get(le) ?? 0) + x.value);
  }
  return [...by].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count }));
}

/** What two scrapes say of the work between them: completions, failed attempts, p95 in ms. */
function between(before: Sample[], after: Sample[]) {
  const a = durations(after), b = durations(before);
  const diff = a.map((x, i) => ({ le: x.le, count: x.count - (b[i]?.count ?? 0) }));
  const p95 = diff.length ? histogramQuantile(0.95, diff) : null;
  return {
    completions: counter(after, 'switchyard_task_completions_total') -
      counter(before, 'switchyard_task_completions_total'),
    failures: counter(after, 'switchyard_task_failed_attempts_total') -
      counter(before, 'switchyard_task_failed_attempts_total'),
    p95Ms: p95 === null ? null : p95 * 1000,
  };
}

/** Runs of the work flow, to the end, by a real worker stopped afterwards. */
async function phase(runs: { ms: number; flaky: boolean }[]): Promise<void> {
  const worker = await startWorker(work, {
    connectionString: db.url,
    ...FAST,
    maxConcurrent: 4,
    logger: SILENT,
  });
  try {
    const ids: string[] = [];
    for (const [n, r] of runs.entries()) {
      const [{ id }] = await sql`select switchyard.start_flow('sampleWorkV1',
        ${sql.json({ n, ...r })}::jsonb) as id`;
      ids.push(id);
    }
    await waitFor('the phase to complete', async () => {
      const [{ open }] = await sql`select count(*)::int as open from switchyard.runs
                                    where run_id = any (${ids}::uuid[]) and status = 'started'`;
      return open === 0;
    });
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
}

/** One minute's figures of a history, by the minute's start. */
function at(h: QueueHistory, minute: Date) {
  const i = Math.round((minute.getTime() - h.from.getTime()) / 60_000);
  assert.ok(i >= 0 && i < h.completions.length, `minute ${minute.toISOString()} in the history`);
  return {
    completions: h.completions[i],
    failures: h.failures[i],
    p95Ms: h.p95Ms[i],
    lagSeconds: h.lagSeconds[i],
  };
}

const close = (a: number | null, b: number | null, what: string) => {
  assert.ok(
    (a === null && b === null) || (a !== null && b !== null && Math.abs(a - b) < 1e-6),
    `${what}: ${a} and ${b}`,
  );
};

Deno.test('the charts are the counters: /metrics, the Grafana view and the dashboard agree', async () => {
  // One session holds the samplers' lock: the workers' heartbeats skip sampling, and this
  // session (whose tries of the lock succeed) writes the samples of chosen past minutes.
  const sampler = await sql.reserve();
  try {
    await sampler.unsafe(`select pg_advisory_lock(${LOCK})`);
    const [{ t }] = await sampler`select date_trunc('minute', now()) as t`;
    const minute = (back: number) => new Date((t as Date).getTime() - back * 60_000);
    const sample = async (back: number) => {
      const [{ n }] = await sampler`select switchyard.sample_metrics(
        ${minute(back)}::timestamptz + interval '30 seconds') as n`;
      assert.equal(n, 2, 'a row per queue');
    };

    await sample(4);
    const p0 = await scrape();
    await phase(Array.from({ length: 8 }, (_, n) => ({ ms: 5 + n * 12, flaky: n % 3 === 0 })));
    // The idle queue's two messages have been visible for 42 s when the next sample is taken.
    for (let n = 0; n < 2; n++) {
      await sql`select switchyard.start_flow('sampleIdleV1', ${sql.json({ n })}::jsonb)`;
    }
    await sql`update pgmq.q_sampleidlev1 set vt = now() - interval '42 seconds'`;
    await sample(3);
    const p1 = await scrape();
    await phase(Array.from({ length: 12 }, (_, n) => ({ ms: 40 + n * 9, flaky: n % 4 === 1 })));
    await sample(2);
    const p2 = await scrape();
    await phase(Array.from({ length: 5 }, (_, n) => ({ ms: 3 + n, flaky: false })));
    const p3 = await scrape();
    const scraped = Date.now();

    const history = await metricsHistory(client, { minutes: 10 });
    const h = history.find((x) => x.queueName === WORK)!;
    const read = (Date.now() - scraped) / 1000;
    // Each minute is the difference of the sample ending it and the one before.
    for (
      const [back, before, after] of [[4, p0, p1], [3, p1, p2]] as const
    ) {
      const want = between(before, after);
      const got = at(h, minute(back));
      assert.equal(got.completions, want.completions, `completions ${back} min back`);
      assert.equal(got.failures, want.failures, `failed attempts ${back} min back`);
      close(got.p95Ms, want.p95Ms, `p95 ${back} min back`);
    }
    assert.deepEqual([between(p0, p1).completions, between(p0, p1).failures], [8, 3]);
    assert.deepEqual([between(p1, p2).completions, between(p1, p2).failures], [12, 3]);
    // The current minute (the last) is the counters now minus the last sample.
    const last = h.completions.length - 1;
    const now = between(p2, p3);
    assert.deepEqual([h.completions[last], h.failures[last]], [now.completions, now.failures]);
    assert.equal(now.completions, 5);
    close(h.p95Ms[last], now.p95Ms, 'p95 of the current minute');
    // Minutes with no sample at their end: nothing counted, no lag, no p95.
    const quiet = at(h, minute(2));
    assert.deepEqual(quiet, { completions: 0, failures: 0, p95Ms: null, lagSeconds: null });
    // The span adds up to the counters: it reaches the first sample, based on zero.
    const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
    assert.equal(sum(h.completions), counter(p3, 'switchyard_task_completions_total'));
    assert.equal(sum(h.failures), counter(p3, 'switchyard_task_failed_attempts_total'));

    // Lag: the gauge switchyard_queue_lag_seconds as the sample ending the minute saw it, and
    // now for the current minute.
    const idleH = history.find((x) => x.queueName === IDLE)!;
    const lagAt = (s: Sample[]) => counter(s, 'switchyard_queue_lag_seconds', IDLE);
    const sampled = at(idleH, minute(4)).lagSeconds!;
    assert.ok(sampled >= 42 && sampled <= lagAt(p1), `lag at the sample ${sampled}`);
    assert.ok(lagAt(p1) - sampled < 5, `lag sampled ${sampled}, scraped after ${lagAt(p1)}`);
    const live = idleH.lagSeconds.at(-1)!;
    assert.ok(live >= lagAt(p3) && live <= lagAt(p3) + read + 0.5, `lag now ${live}`);

    // The Grafana view and the dashboard's API: the same figures, minute by minute, read within
    // one minute (read again should the clock pass a minute's end between them).
    const views = await waitFor('the reads within one minute', async () => {
      const hour = (await metricsHistory(client)).find((x) => x.queueName === WORK)!;
      const rows = await sql`select minute, lag_seconds, p95_ms, failures, completions
                               from switchyard.metrics_minutes where queue_name = ${WORK}
                              order by minute`;
      const response = await fetch(`${base}/api/overview?minutes=60`);
      assert.equal(response.status, 200);
      const overview = (await response.json()) as DashboardOverview;
      const q = overview.queues.find((x) => x.queueName === WORK)!;
      const again = (await metricsHistory(client)).find((x) => x.queueName === WORK)!;
      const same = [rows[0].minute as Date, new Date(q.history!.from), again.from]
        .every((d) => d.getTime() === hour.from.getTime());
      return same ? { hour, rows, q } : null;
    });
    const { hour, rows, q } = views;
    assert.equal(rows.length, 60);
    assert.deepEqual(rows.map((r) => r.completions), hour.completions);
    assert.deepEqual(rows.map((r) => r.failures), hour.failures);
    rows.forEach((r, i) => close(r.p95_ms, hour.p95Ms[i], `the view's p95 at ${r.minute}`));
    assert.deepEqual(q.history!.completions, hour.completions);
    assert.deepEqual(q.history!.failures, hour.failures);
    assert.deepEqual(q.history!.p95Ms, hour.p95Ms);
    assert.deepEqual(q.throughput!.perMinute, hour.completions, 'the completed-tasks chart');
    assert.equal(q.throughput!.total, counter(p3, 'switchyard_task_completions_total'));
    assert.equal(q.totals.completions, q.throughput!.total, 'the totals line');
  } finally {
    await sampler.unsafe(`select pg_advisory_unlock(${LOCK})`);
    sampler.release();
  }
});

Deno.test("a worker's heartbeat and the keep-alive tick take the minute's sample, once", async () => {
  await sql`delete from switchyard.metric_samples where minute >= date_trunc('minute', now())`;
  const worker = await startWorker(work, { connectionString: db.url, ...FAST, logger: SILENT });
  try {
    await waitFor('a heartbeat to sample this minute', async () => {
      const [{ n }] = await sql`select count(*)::int as n from switchyard.metric_samples
                                 where minute = date_trunc('minute', now())`;
      return n === 2;
    });
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
  }
  // The sampled minute again (the clock may have moved on since): nothing written.
  const [{ again }] = await sql`select switchyard.sample_metrics(
    (select max(minute) from switchyard.metric_samples)) as again`;
  assert.equal(again, 0, 'a minute has one sample');
  await sql`delete from switchyard.metric_samples where minute >= date_trunc('minute', now())`;
  // The tick and the minute it ran in, in one statement (one now()).
  const [{ m }] = await sql`select date_trunc('minute', now()) as m,
                                   (select count(*) from switchyard.keep_alive()) as woken`;
  const [{ n }] = await sql`select count(*)::int as n from switchyard.metric_samples
                             where minute = ${m}`;
  assert.equal(n, 2, 'the keep-alive tick sampled the minute');
});

Deno.test('a sample that fails is a warning: the heartbeat answers and the tick goes on', async () => {
  const notices: string[] = [];
  const session = postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: (n) => notices.push(String(n.message)),
  });
  await sql.unsafe(`
    create function public.refuse_sample() returns trigger language plpgsql as $$
    begin raise exception 'planted sample failure'; end $$;
    create trigger refuse_sample before insert on switchyard.metric_samples
      for each statement execute function public.refuse_sample();`);
  try {
    await sql`delete from switchyard.metric_samples where minute >= date_trunc('minute', now())`;
    const [{ answer }] = await session`select switchyard.worker_heartbeat(
      ${crypto.randomUUID()}::uuid) as answer`;
    assert.equal(answer.state, 'deprecated', 'the heartbeat answers (an unknown worker)');
    await session`select count(*) from switchyard.keep_alive()`;
    assert.deepEqual(
      notices.map((m) => m.replace(/ \(P0001\)$/, '')),
      [
        'switchyard.worker_heartbeat: sample_metrics failed: planted sample failure',
        'switchyard.keep_alive: sample_metrics failed: planted sample failure',
      ],
    );
    await assert.rejects(session`select switchyard.sample_metrics()`, /planted sample failure/);
  } finally {
    await sql.unsafe(`drop trigger refuse_sample on switchyard.metric_samples;
                      drop function public.refuse_sample();`);
    await session.end();
  }
});

Deno.test("samples stay bounded: older than the longest chart, deleted but each queue's newest", async () => {
  // A day of every minute, and older rows, as a database sampled for days would hold without
  // the bound.
  const [{ first }] = await sql`select min(minute) as first from switchyard.metric_samples`;
  await sql`insert into switchyard.metric_samples
            select s.queue_name, m, m, s.claims, s.retries, s.failed_attempts, s.throttled,
                   s.completions, s.task_duration, s.task_duration_seconds, s.queue_wait,
                   s.lag_seconds, s.depth
              from switchyard.metric_samples s,
                   generate_series(date_trunc('minute', now()) - interval '3000 minutes',
                                   date_trunc('minute', now()) - interval '31 minutes',
                                   interval '1 minute') as m
             where s.minute = ${first}
            on conflict do nothing`;
  const [{ n }] = await sql`select switchyard.sample_metrics(now() - interval '30 minutes') as n`;
  assert.equal(n, 2);
  const kept = await sql`
    select queue_name, count(*)::int as total,
           count(*) filter (where minute < date_trunc('minute', now()) - interval '1440 minutes')::int
             as older,
           extract(epoch from date_trunc('minute', now()) - min(minute))::int / 60 as back
      from switchyard.metric_samples group by queue_name order by queue_name`;
  assert.equal(kept.length, 2);
  for (const k of kept) {
    assert.ok(k.total <= 1442, `${k.total} samples of ${k.queue_name}`);
    assert.equal(k.older, 1, `${k.queue_name}: the newest older sample is kept as the base`);
    assert.equal(k.back, 1441, `${k.queue_name}: its base`);
  }
});

Deno.test('the sample folds the counters of other sessions: bounded without prune, no count lost', async () => {
  const rowsOf = async () => {
    const [r] = await sql`select count(*)::int as rows, coalesce(sum(n), 0)::int as n,
                                 coalesce(sum(n) filter (where shard = 0), 0)::int as folded
                            from switchyard.metric_counters
                           where metric = 'claims' and queue_name = 'foldq'`;
    return r;
  };
  let counted = 0;
  for (const [round, back] of [[1, 100], [2, 101], [3, 102]]) {
    // Eight sessions count on one label set: eight rows, one per session (its shard).
    const sessions = Array.from(
      { length: 8 },
      () => postgres(db.url, { max: 1, onnotice: () => {}, prepare: false }),
    );
    try {
      await Promise.all(
        sessions.map((s) =>
          s`select switchyard._count_metrics(array['claims'], array['foldq'], array['foldV1'],
                                           array['s'])`
        ),
      );
      counted += 8;
      const before = await rowsOf();
      assert.equal(before.n, counted, `round ${round}: every count kept`);
      assert.ok(before.rows >= 8, `round ${round}: ${before.rows} rows`);
      // A minute with no sample yet: the sampler samples it, and folds.
      await sql`delete from switchyard.metric_samples
                 where minute = date_trunc('minute', now() - make_interval(mins => ${back}))`;
      const [{ n }] = await sql`select switchyard.sample_metrics(
        now() - make_interval(mins => ${back})) as n`;
      assert.equal(n, 2);
      const after = await rowsOf();
      assert.deepEqual(after, { rows: 1, n: counted, folded: counted }, `round ${round}`);
    } finally {
      await Promise.all(sessions.map((s) => s.end()));
    }
  }
  const [{ n }] = await sql`select n::int from switchyard.metrics_counters
                             where metric = 'claims' and queue_name = 'foldq'`;
  assert.equal(n, counted, 'the counter /metrics serves');
});

Deno.test('metric_quantile is histogram_quantile; bad arguments are refused naming the rule', async () => {
  const bounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
  const cases: number[][] = [
    [3, 0, 0, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 2],
  ];
  for (const counts of cases) {
    for (const q of [0, 0.5, 0.95, 0.99, 1]) {
      const [{ v }] = await sql`select switchyard.metric_quantile(${q}, ${counts}::bigint[]) as v`;
      let c = 0;
      const cumulative = [...bounds, Infinity].map((le, i) => ({ le, count: c += counts[i] }));
      close(v, histogramQuantile(q, cumulative), `q ${q} of ${counts}`);
    }
  }
  const refused = async (query: Promise<unknown>, pattern: RegExp) => {
    await assert.rejects(query, (e: { code?: string; message?: string }) => {
      assert.equal(e.code, '22023');
      assert.match(e.message!, pattern);
      return true;
    });
  };
  await refused(
    sql`select switchyard.metric_quantile(1.5, ${cases[0]}::bigint[])`,
    /q 1\.5 is invalid: use a number from 0 to 1/,
  );
  await refused(
    sql`select switchyard.metric_quantile(0.5, '{1,2}'::bigint[])`,
    /counts \{1,2\} is invalid: use 17 counts of at least 0/,
  );
  await refused(
    sql`select switchyard.sample_metrics(now() + interval '1 minute')`,
    /now_at .* is out of range: use an instant of the last 1440 minutes, not after/,
  );
  await refused(
    sql`select switchyard.sample_metrics(now() - interval '1441 minutes')`,
    /now_at .* is out of range/,
  );
  await refused(sql`select switchyard.sample_metrics(null)`, /now_at null is out of range/);
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await server.shutdown();
  await client.close();
  await db.close();
});
