/**
 * Figure 14, metrics (issue 26, docs/design/observability.md): `switchyard.metrics(60)`, the
 * dashboard's `dashboard_metrics_history(60)` and the counters' `metric_snapshot()` (issue 42: with
 * `metrics(60)`, a whole scrape of `/metrics`) on a database holding a million completed tasks of
 * history (bulk-inserted, two hours old, analyzed as a quiet system would be) next to a fresh
 * database; both hold the same recent work (completed in the last minute), which the metrics
 * read, and the same counter rows and a day of the counters' per-minute samples (what the charts
 * read since issue 42's second round). Each round times every call on both sides back to back, in
 * an order that rotates.
 *
 * @module
 */
import type { BenchDatabase, ExtraDatabase } from '../_db.ts';
import { threeStepFlow } from '../_flows.ts';
import { compile, log } from '../_common.ts';
import { preloadCompleted } from './07_history.ts';
import { fmt, median } from '../_stats.ts';
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Row,
  verdict,
} from '../_figure.ts';

const STEPS = [
  { step: 'first', queue: 'met_a' },
  { step: 'second', queue: 'met_b' },
  { step: 'third', queue: 'met_a' },
] as const;
const FLOW = 'met';

/** Settings of the metrics figure. */
export interface MetricsOptions {
  /** Completed tasks of history in the preloaded database (3 per run). */
  historyTasks: number;
  /** Completed tasks of the last minute in both databases. */
  recentTasks: number;
  rounds: number;
  /** Calls per side and round. */
  calls: number;
}

/** Milliseconds per call, one median per round, for each side and statement. */
export interface MetricsFigure {
  historyTasks: number;
  recentTasks: number;
  metrics: { history: number[]; fresh: number[] };
  charts: { history: number[]; fresh: number[] };
  /** The counters, histograms and levels (`metric_snapshot`), the rest of a scrape. */
  snapshot: { history: number[]; fresh: number[] };
}

/**
 * The counter rows of a system that ran this flow from `sessions` sessions since the last fold
 * (docs/design/observability.md#counters-histograms-and-levels): every figure's label sets, every
 * histogram bucket, in shard 0
 * and in each session's shard. A bulk-loaded history writes none, so they are written here, the
 * same on both sides.
 */
async function seedCounters(db: ExtraDatabase, sessions: number): Promise<void> {
  await db.sql.unsafe(`
    insert into switchyard.metric_counters
           (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
    select f.metric, s.queue, '${FLOW}', s.step, '', b.bucket, sh.shard, 1000, 1000
      from (values ${STEPS.map((x) => `('${x.step}', '${x.queue}')`).join(', ')}) s(step, queue)
     cross join (values ('claims', false), ('retries', false), ('failed_attempts', false),
                        ('task_duration', true), ('queue_wait', true)) f(metric, histogram)
     cross join generate_series(0, 17) b(bucket)
     cross join generate_series(0, ${sessions}) sh(shard)
     where (b.bucket = 0) = not f.histogram
    union all
    select f.metric, '', '${FLOW}', '', f.outcome, b.bucket, sh.shard, 1000, 1000
      from (values ('runs_retried', '', false), ('run_duration', 'completed', true),
                   ('run_duration', 'failed', true), ('run_duration', 'cancelled', true))
             f(metric, outcome, histogram)
     cross join generate_series(0, 17) b(bucket)
     cross join generate_series(0, ${sessions}) sh(shard)
     where (b.bucket = 0) = not f.histogram`);
}

/**
 * A day of the counters' per-minute samples
 * (docs/design/observability.md#counters-histograms-and-levels), every queue's, as
 * `sample_metrics` leaves them at most (1442 per queue): what the charts read. The same on both
 * sides.
 */
async function seedSamples(db: ExtraDatabase): Promise<void> {
  await db.sql.unsafe(`
    insert into switchyard.metric_samples
    select q.queue_name, date_trunc('minute', now()) - make_interval(mins => k), now(),
           1000 * (1442 - k), 10 * (1442 - k), 20 * (1442 - k), 0, 900 * (1442 - k),
           array_fill((50 * (1442 - k))::bigint, array[17]), 5.0 * (1442 - k),
           array_fill((50 * (1442 - k))::bigint, array[17]), 0.5, 3
      from switchyard.queues q cross join generate_series(0, 1441) k`);
}

async function timeCalls(db: ExtraDatabase, text: string, calls: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await db.sql.unsafe(text);
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/** Runs figure 14. */
export async function metricsFigure(
  bench: BenchDatabase,
  o: MetricsOptions,
): Promise<MetricsFigure> {
  const registry = [threeStepFlow(FLOW, 'met_a', 'met_b')];
  const withHistory = await bench.createDatabase('metrics_history');
  const fresh = await bench.createDatabase('metrics_fresh');
  for (const db of [withHistory, fresh]) await compile(db.sql, registry);
  const t0 = performance.now();
  await preloadCompleted(withHistory.sql, Math.ceil(o.historyTasks / 3), FLOW, STEPS, '2 hours');
  log(
    `metrics: preloaded ${o.historyTasks} completed tasks in ` +
      `${fmt((performance.now() - t0) / 1000, 1)} s`,
  );
  for (const db of [withHistory, fresh]) {
    await preloadCompleted(db.sql, Math.ceil(o.recentTasks / 3), FLOW, STEPS, '20 seconds');
    await seedCounters(db, 20);
    await seedSamples(db);
    await db.sql`analyze`;
  }
  const [{ n }] = await withHistory.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.step_tasks where status = 'completed'`;
  const out: MetricsFigure = {
    historyTasks: n,
    recentTasks: o.recentTasks,
    metrics: { history: [], fresh: [] },
    charts: { history: [], fresh: [] },
    snapshot: { history: [], fresh: [] },
  };
  const statements = [
    ['metrics', 'select switchyard.metrics(60)'],
    ['charts', 'select count(*) from switchyard.dashboard_metrics_history(60)'],
    ['snapshot', 'select switchyard.metric_snapshot()'],
  ] as const;
  // Warm both sides' caches and plans before the clock.
  for (const db of [withHistory, fresh]) {
    for (const [, text] of statements) await timeCalls(db, text, 3);
  }
  for (let round = 0; round < o.rounds; round++) {
    const sides = round % 2 === 0
      ? [['history', withHistory], ['fresh', fresh]] as const
      : [['fresh', fresh], ['history', withHistory]] as const;
    for (const [name, db] of sides) {
      for (const [which, text] of statements) {
        out[which][name].push(await timeCalls(db, text, o.calls));
      }
    }
    log(
      `metrics round ${round + 1}: metrics ${fmt(out.metrics.history.at(-1)!, 2)} ms ` +
        `(fresh ${fmt(out.metrics.fresh.at(-1)!, 2)} ms), charts ` +
        `${fmt(out.charts.history.at(-1)!, 2)} ms (fresh ${
          fmt(out.charts.fresh.at(-1)!, 2)
        } ms), ` +
        `snapshot ${fmt(out.snapshot.history.at(-1)!, 2)} ms ` +
        `(fresh ${fmt(out.snapshot.fresh.at(-1)!, 2)} ms)`,
    );
  }
  return out;
}

/** Figure 14: metrics. */
export const figure: Figure = {
  number: 14,
  name: 'metrics',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const f = await metricsFigure(db, {
      historyTasks: o.quick ? 100_000 : 1_000_000,
      recentTasks: 3000,
      rounds: o.rounds,
      calls: 10,
    });
    const history = `${f.historyTasks.toLocaleString('en')} completed tasks`;
    const m = median(f.metrics.history), mf = median(f.metrics.fresh);
    rows.push([
      `14 metrics(60), ${history} (${f.recentTasks} in the window)`,
      `${fmt(m, 2)} ms per call`,
      `fresh database ${fmt(mf, 2)} ms`,
      `${fmt(m / mf)}x`,
      '<= 50 ms',
      verdict(m <= 50),
    ]);
    const c = median(f.charts.history), cf = median(f.charts.fresh);
    rows.push([
      `14 charts: dashboard_metrics_history(60), ${history}`,
      `${fmt(c, 2)} ms per call`,
      `fresh database ${fmt(cf, 2)} ms`,
      `${fmt(c / cf)}x`,
      '(none)',
      '-',
    ]);
    const sn = median(f.snapshot.history), snf = median(f.snapshot.fresh);
    rows.push([
      `14 metric_snapshot(): counters, histograms, levels, ${history}`,
      `${fmt(sn, 2)} ms per call`,
      `fresh database ${fmt(snf, 2)} ms`,
      `${fmt(sn / snf)}x`,
      '(none)',
      '-',
    ]);
    // A scrape of /metrics is both calls (side by side on the server, summed here).
    const scrape = f.snapshot.history.map((x, i) => x + f.metrics.history[i]);
    const scrapeFresh = f.snapshot.fresh.map((x, i) => x + f.metrics.fresh[i]);
    rows.push([
      `14 scrape: metrics(60) + metric_snapshot(), ${history}`,
      `${fmt(median(scrape), 2)} ms per scrape`,
      `fresh database ${fmt(median(scrapeFresh), 2)} ms`,
      `${fmt(median(scrape) / median(scrapeFresh))}x`,
      '<= 50 ms',
      verdict(median(scrape) <= 50),
    ]);
    return { rows, notes };
  },
};
