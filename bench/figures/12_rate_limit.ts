/**
 * Figure 12, a rate limit held by real workers (issue 23): 2 workers on one shared queue, every
 * task of a step naming a limit of 20 per second (burst 20, the default, then 5); the tokens used
 * (tasks started, from `step_tasks.started_at`) against the clock: the rate observed after the
 * burst, side by side with the limit (target 0.8x to 1.05x with burst 20), and the most starts ever
 * ahead of the bucket (`burst + rate x elapsed`; target 0).
 *
 * @module
 */
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Options,
  type Row,
  verdict,
} from '../_figure.ts';
import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow } from '../../lib/mod.ts';
import { startWorkerImpl } from '../../lib/worker/worker.ts';
import type { BenchDatabase } from '../_db.ts';
import { fmt, median } from '../_stats.ts';
import { benchWorkerOptions, compile, log, waitUntil } from '../_common.ts';

/**
 * Figure 12: a rate limit of 20 per second (burst 20, and 5) held by 2 real workers on one shared
 * queue, counted against the clock: every task's start (`step_tasks.started_at`, the claim's
 * transaction time) is a token used. Returns, per round, the rate after the burst and the
 * most starts ever ahead of the bucket.
 */
async function rateLimitHeld(db: BenchDatabase, o: Options, burst: number) {
  const { sql } = db;
  const rate = 20;
  const n = o.quick ? 60 : 120;
  const rounds = o.quick ? 1 : 3;
  const queue = 'bench_rate';
  const deployed = defineDeployedFlow(
    routeFlow(
      new Flow<{ i: number }>({ slug: 'benchRate' })
        .step({ slug: 's', rateLimit: { name: 'bench-rate' } }, (x) => x.i),
      { queues: { s: queue } },
    ),
    { alias: 'benchRate' },
  );
  await compile(sql, [deployed as never]).catch(() => {});
  const pool = postgres(db.url, { max: 2 * o.connections, prepare: false, onnotice: () => {} });
  const results: { observed: number; ahead: number }[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      // A full bucket, then n runs at once, all visible when the workers start.
      await sql`select switchyard.set_rate_limit('bench-rate', ${rate}::int, 1, ${burst}::int)`;
      await sql`update switchyard.rate_limits set tokens = burst, refilled_at = now()
                 where name = 'bench-rate'`;
      await sql`select count(switchyard.start_flow('benchRate', jsonb_build_object('i', i)))
                  from generate_series(1, ${n}::int) i`;
      const workers = await Promise.all(
        [0, 1].map(() =>
          startWorkerImpl([deployed], { ...benchWorkerOptions(o), queueName: queue, sql: pool })
        ),
      );
      try {
        await waitUntil('the rate-limited runs to complete', async () => {
          const [{ left }] = await sql<{ left: number }[]>`
            select count(*)::int as left from switchyard.runs
             where status = 'started' and flow_slug = 'benchRate'`;
          return left === 0;
        }, 120_000);
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
      }
      // Seconds from the first start of the round, in start order.
      const starts = (await sql<{ t: number }[]>`
        select extract(epoch from t.started_at - min(t.started_at) over ())::float8 as t
          from switchyard.step_tasks t
         where t.flow_slug = 'benchRate' order by t.started_at`).map((x) => x.t);
      await sql`delete from switchyard.runs where flow_slug = 'benchRate'`;
      const span = starts[starts.length - 1];
      const observed = (starts.length - burst) / span;
      // The k-th start (1-based) may come once the bucket has k tokens: burst + rate x t.
      const ahead = Math.max(
        0,
        ...starts.map((t, k) => Math.ceil(k + 1 - (burst + rate * t) - 1e-9)),
      );
      results.push({ observed, ahead });
      log(
        `rate limit round ${r + 1}/${rounds}: ${starts.length} starts in ${fmt(span, 2)} s, ` +
          `${fmt(observed, 1)}/s after the burst of ${burst}; at most ${ahead} ahead of the bucket`,
      );
    }
  } finally {
    await pool.end({ timeout: 2 });
  }
  return { rate, burst, n, results };
}

/** Figure 12: a rate limit held by workers. */
export const figure: Figure = {
  number: 12,
  name: 'a rate limit held by workers',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    // The default burst (the rate), then a burst under one second of tokens: a held task
    // waits whole seconds (at least 1), so the bucket's cap bounds what one wave can start.
    for (const burst of [20, 5]) {
      const f = await rateLimitHeld(db, o, burst);
      const ratios = f.results.map((x) => x.observed / f.rate);
      const ratio = median(ratios);
      const ahead = Math.max(...f.results.map((x) => x.ahead));
      const met = burst === f.rate;
      rows.push([
        `12 rate limit ${f.rate}/s (burst ${f.burst}), 2 workers, ${f.n} tasks: tokens vs clock`,
        `${fmt(median(f.results.map((x) => x.observed)), 1)} starts/s after the burst; ` +
        `${ahead} ahead of the bucket`,
        `limit ${f.rate}/s`,
        `${fmt(ratio)}x (${fmt(Math.min(...ratios))}-${fmt(Math.max(...ratios))})`,
        met ? '0.8x-1.05x, 0 ahead' : '0 ahead',
        verdict(ahead === 0 && (!met || (ratio >= 0.8 && ratio <= 1.05))),
      ]);
    }
    return { rows, notes };
  },
};
