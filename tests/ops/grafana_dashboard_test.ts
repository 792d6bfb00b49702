/**
 * The Grafana dashboard shipped with the kit (issue 42;
 * docs/design/observability.md#counters-histograms-and-levels): every query
 * of lib/ops/monitoring/grafana_dashboard.json runs, its Grafana macros expanded as the
 * PostgreSQL data source expands them, as a role granted only lib/ops/monitoring/grafana_reader.sql,
 * on a database where real workers ran a workload; each returns rows of the shape its panel's
 * format needs, and the figures it shows are the counters' and levels' (`metricSnapshot`).
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { metricSnapshot } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const MONITORING = fileURLToPath(new URL('../../lib/ops/monitoring/', import.meta.url));
const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

interface Target {
  refId: string;
  rawSql: string;
  format: 'table' | 'time_series';
  datasource: { type: string; uid: string };
}
interface Panel {
  id: number;
  title: string;
  type: string;
  targets: Target[];
  datasource: { type: string; uid: string };
}
const dashboard = JSON.parse(await Deno.readTextFile(`${MONITORING}/grafana_dashboard.json`)) as {
  uid: string;
  __inputs: { name: string; pluginId: string }[];
  panels: Panel[];
};

/**
 * Grafana's PostgreSQL macros over the dashboard's last hour, as the data source writes them:
 * `$__timeFilter(col)` is a BETWEEN of two timestamps, `$__timeFrom()`/`$__timeTo()` the bounds.
 */
function expand(text: string, from: Date, to: Date): string {
  const iso = (d: Date) => `'${d.toISOString()}'`;
  const out = text
    .replace(/\$__timeFilter\(([^)]+)\)/g, `$1 BETWEEN ${iso(from)} AND ${iso(to)}`)
    .replace(/\$__timeFrom\(\)/g, iso(from))
    .replace(/\$__timeTo\(\)/g, iso(to));
  assert.doesNotMatch(out, /\$__|\$\{/, `a macro or variable left in ${out}`);
  return out;
}

const flow = new Flow<{ n: number }>({ slug: 'grafanaV1', baseDelay: 0 })
  .step({ slug: 'work' }, (input, ctx) => {
    if (input.n < 2 && ctx.attempt === 1) throw new Error(`flaky ${input.n}`);
    return input.n;
  });
const waiting = new Flow<Record<string, never>>({ slug: 'grafanaWaitV1' })
  .wait({ slug: 'approval', timeout: 3600 });
const worker = await startWorker(flow, { connectionString: db.url, ...FAST, logger: SILENT });
try {
  for (let n = 0; n < 6; n++) {
    await sql`select switchyard.start_flow('grafanaV1', ${sql.json({ n })}::jsonb)`;
  }
  await waitFor('every run to finish', async () => {
    const [{ open }] = await sql`select count(*)::int as open from switchyard.runs
                                  where status = 'started'`;
    return open === 0;
  }, { timeoutMs: 30_000 });
} finally {
  await within(30_000, 'the worker to stop', worker.stop());
}
// Work left waiting on the queue: depth, and a run active; a run waiting for a signal.
await sql`select switchyard.start_flow('grafanaV1', '{"n": 9}'::jsonb)`;
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(waiting).shape as never)}::jsonb)`;
await sql`select switchyard.start_flow('grafanaWaitV1', '{}'::jsonb)`;

// The reader role, granted exactly what grafana_reader.sql grants (a name of its own per run:
// roles are the cluster's, shared by parallel test files).
const role = `sy_grafana_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
const password = crypto.randomUUID();
await sql.unsafe(`create role ${role} login password '${password}'`);
const grants = await Deno.readTextFile(`${MONITORING}/grafana_reader.sql`);
await sql.unsafe(grants.replaceAll('switchyard_grafana', role));
const readerUrl = new URL(db.url);
readerUrl.username = role;
readerUrl.password = password;
const reader = postgres(readerUrl.toString(), { max: 1, onnotice: () => {} });

Deno.test('the dashboard JSON: a PostgreSQL data source input, every panel with a query', () => {
  assert.equal(dashboard.uid, 'switchyard');
  assert.deepEqual(dashboard.__inputs.map((i) => [i.name, i.pluginId]), [
    ['DS_SWITCHYARD', 'grafana-postgresql-datasource'],
  ]);
  assert.ok(dashboard.panels.length >= 10);
  for (const p of dashboard.panels) {
    assert.ok(p.targets.length > 0, `panel ${p.title} has a query`);
    for (const t of [p.datasource, ...p.targets.map((x) => x.datasource)]) {
      assert.deepEqual(t, { type: 'grafana-postgresql-datasource', uid: '${DS_SWITCHYARD}' });
    }
  }
});

Deno.test('every query runs as the reader role and returns rows of its format', async () => {
  const to = new Date();
  const from = new Date(to.getTime() - 3600_000);
  for (const p of dashboard.panels) {
    for (const t of p.targets) {
      const text = expand(t.rawSql, from, to);
      const rows = await reader.unsafe(text).catch((e) => {
        throw new Error(`panel ${JSON.stringify(p.title)}: ${e.message}\n${text}`);
      });
      assert.ok(rows.length > 0, `panel ${JSON.stringify(p.title)} returned no row:\n${text}`);
      if (t.format === 'time_series') {
        for (const r of rows) {
          assert.ok(r.time instanceof Date, `${p.title}: a time column`);
          assert.equal(typeof r.metric, 'string', `${p.title}: a metric column`);
          assert.ok(Number.isFinite(Number(r.value)), `${p.title}: a numeric value`);
        }
      }
    }
  }
  // The role reads nothing else: a table behind the views is refused.
  await assert.rejects(reader`select count(*) from switchyard.runs`, /permission denied/);
});

Deno.test("the panels show the counters' and levels' figures", async () => {
  const to = new Date();
  const from = new Date(to.getTime() - 3600_000);
  const query = async (title: string) => {
    const p = dashboard.panels.find((x) => x.title === title);
    assert.ok(p, title);
    return await reader.unsafe(expand(p.targets[0].rawSql, from, to));
  };
  const s = await metricSnapshot(client);
  const n = (metric: string, outcome = '') =>
    s.counters.filter((c) =>
      c.metric === metric && c.version === 'grafanaV1' &&
      (outcome === '' || c.outcome === outcome)
    ).reduce((a, c) => a + c.n, 0);
  const [steps] = await query('Task totals by step');
  assert.deepEqual(
    [steps.queue, steps.flow, steps.step].concat(
      [steps.claims, steps.completions, steps.failed_attempts, steps.retries].map(Number),
    ),
    ['grafanav1', 'grafanaV1', 'work', n('claims'), n('task_duration'), n('failed_attempts'), 2],
  );
  assert.deepEqual([n('claims'), n('task_duration'), n('failed_attempts')], [8, 6, 2]);
  const runs = (await query('Runs by outcome')).find((r) => r.version === 'grafanaV1')!;
  assert.deepEqual(
    [runs.started, runs.completed, runs.failed, runs.cancelled].map(Number),
    [n('runs_started'), n('run_duration', 'completed'), 0, 0],
  );
  assert.equal(n('runs_started'), 7);
  const [queue] = await query('Queues: depth, lag, live workers');
  const depth = s.gauges.find((g) => g.gauge === 'queue_depth' && g.queueName === 'grafanav1');
  assert.equal(Number(queue.depth), depth?.value);
  assert.equal(Number(queue.depth), 1);
  assert.equal(Number(queue.live_workers), 0);
  const histogram = await query('Task duration histogram');
  assert.equal(Number(histogram.at(-1)!.tasks), n('task_duration'));
  assert.equal(histogram.at(-1)!.le, '+Inf');
  const completions = await query('Completed tasks per minute');
  assert.equal(
    completions.filter((r) => r.metric === 'grafanav1').reduce((a, r) => a + Number(r.value), 0),
    6,
  );
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await reader.end();
  await client.close();
  await sql.unsafe(`drop owned by ${role}`);
  await sql.unsafe(`drop role ${role}`);
  await db.close();
});
