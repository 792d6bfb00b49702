/**
 * Figure 10, map fan-out: tasks/s of one run of a map step over N elements (a root map over the
 * flow input, and a map over a step's output) vs N runs of a 1-step flow, one worker on one shared
 * queue (issue 12: target >= 0.8x).
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
import { startWorkerImpl } from '../../lib/worker/worker.ts';
import type { BenchDatabase } from '../_db.ts';
import { fanOutFlows } from '../_flows.ts';
import { fmt, median, roundRatio } from '../_stats.ts';
import { benchWorkerOptions, compile, log, timed, waitUntil } from '../_common.ts';

/**
 * One worker drains `n` tasks from one shared queue: the elements of one root-map run, of one
 * step-map run (plus its one list task), or `n` runs of a 1-step flow. The messages are
 * seeded and held before the clock, as in figure 1.
 */
async function mapFanOut(db: BenchDatabase, o: Options) {
  const { sql } = db;
  const n = o.quick ? 1000 : 3000;
  const queue = 'bench_fan';
  const registry = fanOutFlows(queue);
  await compile(sql, registry);
  const pool = postgres(db.url, { max: o.connections, prepare: false, onnotice: () => {} });
  const options = {
    ...benchWorkerOptions(o),
    queueName: queue,
    sql: pool,
  };
  type Side = 'root' | 'step' | 'single';
  const run = async (side: Side) => {
    if (side === 'root') {
      await sql`select switchyard.start_flow('benchRootMap',
                  to_jsonb(array(select generate_series(1, ${n}::int))))`;
    } else if (side === 'step') {
      await sql`select switchyard.start_flow('benchStepMap', jsonb_build_object('n', ${n}::int))`;
    } else {
      await sql`select count(switchyard.start_flow('benchSingle', jsonb_build_object('i', i)))
                  from generate_series(1, ${n}::int) i`;
    }
    await sql.unsafe(`update pgmq.q_${queue} set vt = clock_timestamp() + interval '1 hour'`);
    const worker = await startWorkerImpl(registry, options);
    try {
      return (await timed(db, n, async () => {
        await sql.unsafe(`update pgmq.q_${queue} set vt = clock_timestamp()`);
        await waitUntil('the fan-out runs to complete', async () => {
          const [{ left }] = await sql<{ left: number }[]>`
            select count(*)::int as left from switchyard.runs where status = 'started'
               and flow_slug in ('benchRootMap', 'benchStepMap', 'benchSingle')`;
          return left === 0;
        });
      })).rate;
    } finally {
      await worker.stop();
    }
  };
  const rates: Record<Side, number[]> = { root: [], step: [], single: [] };
  const sides: Side[] = ['root', 'step', 'single'];
  try {
    log('map fan-out: warm-up');
    for (const side of sides) await run(side);
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(r + k) % sides.length];
        rates[side].push(await run(side));
      }
      log(
        `map fan-out round ${r + 1}/${o.rounds}: root map ${fmt(rates.root[r], 0)}, step map ${
          fmt(rates.step[r], 0)
        }, 1-step ${fmt(rates.single[r], 0)} tasks/s`,
      );
    }
  } finally {
    await pool.end({ timeout: 2 });
  }
  return { ...rates, n };
}

/** Figure 10: map fan-out. */
export const figure: Figure = {
  number: 10,
  name: 'map fan-out',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const f = await mapFanOut(db, o);
    for (const [label, xs] of [['root map', f.root], ['map of a step', f.step]] as const) {
      const r = roundRatio(xs, f.single);
      rows.push([
        `10 map fan-out, ${label}, 1 run of ${f.n} elements, 1 worker`,
        `map ${fmt(median(xs), 0)} tasks/s`,
        `${f.n} 1-step runs ${fmt(median(f.single), 0)} tasks/s`,
        `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})`,
        '>= 0.8x',
        verdict(r.ratio >= 0.8),
      ]);
    }
    return { rows, notes };
  },
};
