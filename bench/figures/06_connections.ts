/**
 * Figure 6, connections: 1-step tasks through one worker with every default setting (maxConcurrent
 * 10, batch 10), with its default pool of `maxConnections` 4 next to 13 (the old pool of
 * `min(maxConcurrent + 3, 20)`); the heartbeat has its own connection on both sides.
 *
 * @module
 */
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Options,
  rates,
  type Row,
  verdict,
} from '../_figure.ts';
import { startWorker } from '../../lib/worker/worker.ts';
import type { BenchDatabase } from '../_db.ts';
import { routedRegistry } from '../_flows.ts';
import { fmt, median, roundRatio } from '../_stats.ts';
import { compile, log, type Sample, silent, timed, waitUntil } from '../_common.ts';

/** The default `maxConnections` (the pool), and the old pool at the default concurrency. */
const CONNECTIONS = { small: 4, old: Math.min(10 + 3, 20) } as const;

async function connectionOption(
  db: BenchDatabase,
  o: Options,
): Promise<{ small: Sample[]; old: Sample[]; tasks: number }> {
  const { sql } = db;
  const messages = o.quick ? 1500 : 3000;
  const registry = routedRegistry('cn', 10, 1, 'bench_cn');
  await compile(sql, registry);
  const run = async (maxConnections: number) => {
    await sql`select count(switchyard.start_flow('cn' || (i % 10), jsonb_build_object('i', i)))
                from generate_series(1, ${messages}::int) i`;
    // Hidden until the clock starts, as in figure 1.
    await sql.unsafe(`update pgmq.q_bench_cn set vt = clock_timestamp() + interval '1 hour'`);
    // Every setting at its default but the one compared (and a silent log).
    const worker = await startWorker(registry, {
      queueName: 'bench_cn',
      connectionString: db.url,
      logger: silent,
      maxConnections,
    });
    try {
      return await timed(db, messages, async () => {
        await sql.unsafe(`update pgmq.q_bench_cn set vt = clock_timestamp()`);
        await waitUntil('the worker to drain bench_cn', async () => {
          const [{ n }] = await sql<
            { n: number }[]
          >`select count(*)::int as n from pgmq.q_bench_cn`;
          return n === 0;
        });
      });
    } finally {
      await worker.stop();
    }
  };
  log('connections: warm-up');
  await run(CONNECTIONS.small);
  await run(CONNECTIONS.old);
  const out = { small: [] as Sample[], old: [] as Sample[], tasks: messages };
  for (let r = 0; r < o.rounds; r++) {
    if (r % 2 === 0) {
      out.small.push(await run(CONNECTIONS.small));
      out.old.push(await run(CONNECTIONS.old));
    } else {
      out.old.push(await run(CONNECTIONS.old));
      out.small.push(await run(CONNECTIONS.small));
    }
    log(
      `connections round ${r + 1}/${o.rounds}: ${CONNECTIONS.small} connections ` +
        `${fmt(out.small[r].rate, 0)} tasks/s, ${CONNECTIONS.old} connections ` +
        `${fmt(out.old[r].rate, 0)} tasks/s`,
    );
  }
  return out;
}

/** Figure 6: worker connections. */
export const figure: Figure = {
  number: 6,
  name: 'worker connections',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const c = await connectionOption(db, o);
    const r = roundRatio(rates(c.small), rates(c.old));
    rows.push([
      `6 worker defaults, maxConnections ${CONNECTIONS.small} vs ${CONNECTIONS.old}`,
      `${CONNECTIONS.small} connections ${fmt(median(rates(c.small)), 0)} tasks/s`,
      `${CONNECTIONS.old} connections ${fmt(median(rates(c.old)), 0)} tasks/s`,
      `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})`,
      '>= 0.95x',
      verdict(r.ratio >= 0.95),
    ]);
    return { rows, notes };
  },
};
