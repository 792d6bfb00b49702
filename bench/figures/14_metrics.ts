/**
 * Figure 14, metrics (issue 26, docs/ARCHITECTURE.md §16): `switchyard.metrics(60)` and the
 * dashboard's `dashboard_metrics_history(60)` on a database holding a million completed tasks of
 * history (bulk-inserted, two hours old, analyzed as a quiet system would be) next to a fresh
 * database; both hold the same recent work (completed in the last minute), which the metrics
 * read. Each round times every call on both sides back to back, in an order that rotates.
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
    await db.sql`analyze`;
  }
  const [{ n }] = await withHistory.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.step_tasks where status = 'completed'`;
  const out: MetricsFigure = {
    historyTasks: n,
    recentTasks: o.recentTasks,
    metrics: { history: [], fresh: [] },
    charts: { history: [], fresh: [] },
  };
  const statements = [
    ['metrics', 'select switchyard.metrics(60)'],
    ['charts', 'select count(*) from switchyard.dashboard_metrics_history(60)'],
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
        `${fmt(out.charts.history.at(-1)!, 2)} ms (fresh ${fmt(out.charts.fresh.at(-1)!, 2)} ms)`,
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
    return { rows, notes };
  },
};
