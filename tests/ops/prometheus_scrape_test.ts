/**
 * The metrics read by a real Prometheus (issue 42;
 * docs/design/observability.md#counters-histograms-and-levels): Debian's
 * `prometheus`, started here on a free port with a temporary configuration, scrapes the
 * dashboard's `GET /metrics` with the bearer every second while real workers run a workload of
 * known size and known durations; `increase()`, `rate()` and `histogram_quantile()` evaluated
 * through Prometheus' HTTP API are compared with the counts this file made and the durations it
 * read from the tasks' rows. And the kit's example alert rules pass `promtool check rules` and
 * `promtool test rules` (with a mutated threshold failing them), and load into the running
 * Prometheus, which evaluates them against the real series without an error.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Flow, startWorker } from '../../lib/mod.ts';
import { createDashboard, metricSnapshot } from '../../lib/ops.ts';
import { freePort } from '../../cli/_util.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { runCommand } from '../_helpers/process.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';
import { histogramQuantile, PROMTOOL, startPrometheus } from '../_helpers/prometheus.ts';

const MONITORING = fileURLToPath(new URL('../../lib/ops/monitoring/', import.meta.url));
const SECRET = 'prometheus-scrape-secret';
const SCRAPE_SECONDS = 1;
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

/** The workload: a handler's sleep per run (ms), and which runs fail their first attempt. */
const SLEEPS = [
  ...Array(12).fill(30),
  ...Array(12).fill(80),
  ...Array(10).fill(180),
  ...Array(6).fill(400),
];
const FLAKY = 8; // runs 0..7 fail their first attempt

const flow = new Flow<{ n: number; ms: number; flaky: boolean }>({
  slug: 'scrapeV1',
  baseDelay: 0,
}).step({ slug: 'work' }, async (input, ctx) => {
  if (input.flaky && ctx.attempt === 1) throw new Error(`flaky ${input.n}`);
  await new Promise((r) => setTimeout(r, input.ms));
  return input.n;
});

/** `percentile_cont`: linear interpolation between the closest ranks of the sorted values. */
function percentile(values: number[], q: number): number {
  const v = [...values].sort((a, b) => a - b);
  const pos = q * (v.length - 1);
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

/** The bucket (lower and upper bound) holding `x`: le is inclusive. */
function bucketAround(x: number): [number, number] {
  const i = BOUNDS.findIndex((b) => x <= b);
  return i === -1 ? [BOUNDS.at(-1)!, Infinity] : [i === 0 ? 0 : BOUNDS[i - 1], BOUNDS[i]];
}

/**
 * Prometheus' histogram_quantile over exact bucket counts, computed here from the durations:
 * the rank q × count, the first bucket whose cumulative count reaches it, and a linear
 * interpolation inside it (from 0 for the first bucket).
 */
function bucketQuantile(values: number[], q: number): number {
  const cumulative = BOUNDS.map((b) => values.filter((x) => x <= b).length);
  const rank = q * values.length;
  const i = cumulative.findIndex((c) => c >= rank);
  const below = i === 0 ? 0 : cumulative[i - 1];
  const lo = i === 0 ? 0 : BOUNDS[i - 1];
  return lo + (BOUNDS[i] - lo) * (rank - below) / (cumulative[i] - below);
}

Deno.test('the example alert rules pass promtool check rules and their unit tests; a mutated threshold fails them', async () => {
  const run = async (...args: string[]) => {
    const out = await runCommand(PROMTOOL, args, { cwd: MONITORING });
    return { code: out.code, text: out.stdout + out.stderr };
  };
  const check = await run('check', 'rules', 'alerts.yml');
  assert.equal(check.code, 0, check.text);
  assert.match(check.text, /SUCCESS: 4 rules found/);
  const test = await run('test', 'rules', 'alerts_test.yml');
  assert.equal(test.code, 0, test.text);
  assert.match(test.text, /SUCCESS/);
  // The unit tests can fail: with the failure-rate threshold at 30%, the 20% step no longer
  // alerts and promtool says so.
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-rules-' });
  try {
    const rules = await Deno.readTextFile(`${MONITORING}/alerts.yml`);
    const mutated = rules.replace(/> 0\.1\n/, '> 0.3\n');
    assert.notEqual(mutated, rules);
    await Deno.writeTextFile(`${dir}/alerts.yml`, mutated);
    await Deno.copyFile(`${MONITORING}/alerts_test.yml`, `${dir}/alerts_test.yml`);
    const out = await runCommand(PROMTOOL, ['test', 'rules', 'alerts_test.yml'], { cwd: dir });
    const text = out.stdout + out.stderr;
    assert.notEqual(out.code, 0, text);
    assert.match(text, /SwitchyardTaskFailureRate/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('a real Prometheus scraping /metrics: increase, rate and histogram_quantile match the workload', async () => {
  const db = await createTestDatabase();
  const sql = db.sql;
  const client = untypedClient(db.url);
  const vars: Record<string, string> = { SWITCHYARD_WORKER_SECRET: SECRET };
  const dashboard = createDashboard({ source: client, env: (n) => vars[n] });
  const port = freePort();
  const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
  const prometheus = await startPrometheus(`
global:
  scrape_interval: ${SCRAPE_SECONDS}s
  evaluation_interval: ${SCRAPE_SECONDS}s
rule_files:
  - ${MONITORING}/alerts.yml
scrape_configs:
  - job_name: switchyard
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: ${SECRET}
    static_configs:
      - targets: ['127.0.0.1:${port}']
`);
  const worker = await startWorker(flow, {
    connectionString: db.url,
    ...FAST,
    maxConcurrent: 8,
    logger: SILENT,
  });
  const W = '{flow="scrapeV1",step="work"}';
  const one = async (expr: string, time?: number) => {
    const r = await prometheus.query(expr, time);
    assert.equal(r.length, 1, `${expr}: ${JSON.stringify(r)}\n${prometheus.log()}`);
    return r[0].value;
  };
  const finished = async (n: number) => {
    await waitFor(`${n} runs to finish`, async () => {
      const [{ done }] = await sql`select count(*)::int as done from switchyard.runs
                                    where status = 'completed'`;
      return done === n;
    }, { timeoutMs: 60_000 });
  };
  /** Waits until Prometheus' latest sample of completions is the database's. */
  const scraped = async () => {
    const s = await metricSnapshot(client);
    const want = s.counters.find((c) => c.metric === 'task_duration' && c.step === 'work')!.n;
    await waitFor('Prometheus to scrape the latest counts', async () => {
      const r = await prometheus.query(`switchyard_task_completions_total${W}`);
      return r.length === 1 && r[0].value === want;
    }, { timeoutMs: 30_000 });
  };
  try {
    // Warm-up: one run failing once makes every series exist before the window, so increase()
    // sees the workload's whole rise (a series' first sample is its start, not a rise from 0).
    await sql`select switchyard.start_flow('scrapeV1',
      ${sql.json({ n: -1, ms: 30, flaky: true })}::jsonb)`;
    await finished(1);
    await scraped();
    await waitFor('the scrape target to be up', async () => {
      const up = await prometheus.query('up{job="switchyard"}');
      return up.length === 1 && up[0].value === 1;
    }, { timeoutMs: 30_000 });
    const t0 = Date.now() / 1000;
    // Flat samples after t0, so the window's first sample is before the workload.
    await new Promise((r) => setTimeout(r, 2.5 * SCRAPE_SECONDS * 1000));
    for (let n = 0; n < SLEEPS.length; n++) {
      await sql`select switchyard.start_flow('scrapeV1',
        ${sql.json({ n, ms: SLEEPS[n], flaky: n < FLAKY })}::jsonb)`;
    }
    await finished(SLEEPS.length + 1);
    await scraped();
    await new Promise((r) => setTimeout(r, 2.5 * SCRAPE_SECONDS * 1000));
    const t1 = Date.now() / 1000;
    const range = Math.ceil(t1 - t0);
    const at = t0 + range; // the window (at - range, at] starts at t0
    await new Promise((r) => setTimeout(r, Math.max(0, (at - Date.now() / 1000) * 1000) + 100));

    // The counts this file made: every run completes its one task; the flaky ones claimed
    // twice after one failed attempt.
    const N = SLEEPS.length;
    const expected: [string, number][] = [
      [`switchyard_task_completions_total${W}`, N],
      [`switchyard_task_claims_total${W}`, N + FLAKY],
      [`switchyard_task_retries_total${W}`, FLAKY],
      [`switchyard_task_failed_attempts_total${W}`, FLAKY],
      ['switchyard_runs_started_total{flow="scrapeV1"}', N],
      ['switchyard_runs_completed_total{flow="scrapeV1"}', N],
      [`switchyard_task_duration_seconds_count${W}`, N],
    ];
    // increase() extrapolates the samples' rise to the window's edges: at most 1.1 scrape
    // intervals at each end, so between the rise and rise x range / (range - 2.2 intervals).
    const most = range / (range - 2.2 * SCRAPE_SECONDS);
    for (const [series, n] of expected) {
      const exact = await one(`${series} - ${series} offset ${range}s`, at);
      assert.equal(exact, n, `${series}: the samples' difference over the window`);
      const inc = await one(`increase(${series}[${range}s])`, at);
      assert.ok(inc >= n - 1e-9 && inc <= n * most + 1e-9, `increase(${series}) ${inc}, ${n} made`);
      const rate = await one(`rate(${series}[${range}s])`, at);
      assert.ok(Math.abs(rate * range - inc) < 1e-6, `rate x range = increase for ${series}`);
      assert.ok(rate >= n / range - 1e-9 && rate <= (n / range) * most + 1e-9);
    }

    // Durations: the workload's completed tasks, claim of their last attempt to completion, as
    // the rows say.
    const rows = await sql`select extract(epoch from t.completed_at - t.started_at)::float8 as secs
        from switchyard.step_tasks t join switchyard.runs r using (run_id)
       where t.flow_slug = 'scrapeV1' and (r.input ->> 'n')::int >= 0`;
    const secs = rows.map((r) => r.secs as number);
    assert.equal(secs.length, N);
    const bucket = `switchyard_task_duration_seconds_bucket${W}`;
    const sumSeries = `switchyard_task_duration_seconds_sum${W}`;
    const sum = await one(`${sumSeries} - ${sumSeries} offset ${range}s`, at);
    assert.ok(Math.abs(sum - secs.reduce((a, b) => a + b, 0)) < 1e-6, 'the sum of durations');
    const report: string[] = [];
    for (const q of [0.5, 0.9, 0.99]) {
      // Over the window's exact bucket counts: what histogram_quantile computes, to the float.
      const exact = await one(
        `histogram_quantile(${q}, sum by (le) (${bucket} - ${bucket} offset ${range}s))`,
        at,
      );
      assert.ok(Math.abs(exact - bucketQuantile(secs, q)) < 1e-9, `p${q * 100}: ${exact}`);
      // The helper other tests compare the dashboard's p95 with (metric_samples_test) computes
      // what Prometheus does from the cumulative buckets.
      const cumulative = [...BOUNDS, Infinity].map((le) => ({
        le,
        count: secs.filter((x) => x <= le).length,
      }));
      assert.ok(Math.abs(exact - histogramQuantile(q, cumulative)!) < 1e-9, `helper p${q * 100}`);
      // Over increase(): each bucket extrapolated on its own, so the estimate moves, but stays in
      // the bucket of the true percentile (percentile_cont of the rows).
      const estimate = await one(
        `histogram_quantile(${q}, sum by (le) (increase(${bucket}[${range}s])))`,
        at,
      );
      const own = percentile(secs, q);
      const [lo, hi] = bucketAround(own);
      assert.ok(
        estimate >= lo - 1e-9 && estimate <= hi + 1e-9,
        `p${q * 100}: Prometheus ${estimate} outside (${lo}, ${hi}] around the rows' ${own}`,
      );
      report.push(
        `p${q * 100}: histogram_quantile ${estimate.toFixed(4)} s (exact buckets ` +
          `${exact.toFixed(4)} s), the rows' percentile_cont ${
            own.toFixed(4)
          } s, bucket (${lo}, ${hi}]`,
      );
    }
    console.log(`[prometheus] window ${range} s, ${N} runs:\n  ${report.join('\n  ')}`);

    // Prometheus' latest samples are the database's figures, counter by counter.
    const s = await metricSnapshot(client);
    const stored = (metric: string) =>
      s.counters.filter((c) => c.metric === metric && c.version === 'scrapeV1')
        .reduce((a, c) => a + c.n, 0);
    assert.equal(await one(`switchyard_task_claims_total${W}`), stored('claims'));
    assert.equal(
      await one('switchyard_runs_started_total{flow="scrapeV1"}'),
      stored('runs_started'),
    );

    // The example rules loaded and evaluated against these series without an error.
    const rules = await (await fetch(`${prometheus.url}/api/v1/rules`)).json();
    const loaded = rules.data.groups.flatMap((g: { rules: { name: string; health: string }[] }) =>
      g.rules
    );
    assert.deepEqual(
      loaded.map((r: { name: string }) => r.name).sort(),
      [
        'SwitchyardFunctionPaused',
        'SwitchyardQueueWithoutWorker',
        'SwitchyardTaskFailureRate',
        'SwitchyardWaitsOverdue',
      ],
    );
    assert.ok(
      loaded.every((r: { health: string }) => r.health === 'ok'),
      JSON.stringify(loaded),
    );
  } finally {
    await within(30_000, 'the worker to stop', worker.stop());
    await prometheus.stop();
    await server.shutdown();
    await client.close();
    await db.close();
  }
});
