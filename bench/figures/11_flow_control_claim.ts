/**
 * Figure 11, flow control in the claim (issue 23): `start_tasks` per batch of 10 tasks of a step
 * with `concurrency` over 1,000 keys and a shared `rateLimit` (generous, so nothing is held) vs the
 * same step without flow control; the time per claim, side by side.
 *
 * @module
 */
import type { Figure, FigureContext, FigureResult, Options, Row } from '../_figure.ts';
import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow } from '../../lib/mod.ts';
import { WorkerQueries } from '../../lib/sql/worker_queries.ts';
import type { BenchDatabase } from '../_db.ts';
import { fmt, median, since } from '../_stats.ts';
import { compile } from '../_common.ts';

/**
 * Figure 11: the claim of a batch under flow control (1,000 concurrency keys, one shared rate
 * limit that holds nothing back) vs the same claim without flow control, batches alternating.
 */
async function flowControlClaim(
  db: BenchDatabase,
  o: Options,
): Promise<
  { controlled: number[]; plain: number[]; controlledRead: number[]; plainRead: number[] }
> {
  const { sql } = db;
  const batches = o.quick ? 40 : 150;
  const perBatch = o.batch;
  const timed = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const q = new WorkerQueries(timed);
  const make = (slug: string, queue: string, controlled: boolean) =>
    defineDeployedFlow(
      routeFlow(
        new Flow<{ k: number }>({ slug }).step(
          controlled
            ? {
              slug: 's',
              concurrency: { key: 'k', limit: 1000 },
              rateLimit: { name: 'bench-fc' },
            }
            : { slug: 's' },
          (i) => i.k,
        ),
        { queues: { s: queue } },
      ),
      { alias: slug },
    );
  try {
    await sql`select switchyard.set_rate_limit('bench-fc', 1000000, 1, 1000000)`;
    const sides = [
      {
        name: 'controlled',
        queue: 'bench_fc_on',
        deployed: make('benchFcOn', 'bench_fc_on', true),
      },
      { name: 'plain', queue: 'bench_fc_off', deployed: make('benchFcOff', 'bench_fc_off', false) },
    ];
    const samples: Record<string, number[]> = { controlled: [], plain: [] };
    const reads: Record<string, number[]> = { controlled: [], plain: [] };
    const workers: Record<string, string> = {};
    for (const side of sides) {
      await compile(sql, [side.deployed as never]);
      const workerId = crypto.randomUUID();
      await q.registerWorker(workerId, side.queue, `bench-${side.queue.replaceAll('_', '-')}`, [
        `${side.deployed.flow.slug}/s`,
      ]);
      workers[side.name] = workerId;
      await sql`select count(switchyard.start_flow(${side.deployed.flow.slug},
                  jsonb_build_object('k', floor(random() * 1000)::int)))
                  from generate_series(1, ${(batches + 10) * perBatch}::int)`;
    }
    for (let b = 0; b < batches + 5; b++) {
      for (const side of b % 2 === 0 ? sides : [...sides].reverse()) {
        // The worker's read: PGMQ's own on the plain queue, the ordered read (keys in turn,
        // docs/design/flow-control.md#priority-and-keys-in-turn) on the keyed one; timed apart from
        // the claim.
        const r0 = performance.now();
        const ids = await q.readWithPoll(side.queue, 600, perBatch, 1, 10);
        const readMs = since(r0);
        const t0 = performance.now();
        const claims = await q.startTasks(side.queue, ids, workers[side.name], null);
        const ms = since(t0);
        const claimed = claims.filter((c) => c.disposition === 'claimed').length;
        if (claimed !== ids.length) throw new Error(`claimed ${claimed} of ${ids.length} tasks`);
        if (b >= 5) {
          samples[side.name].push(ms);
          reads[side.name].push(readMs);
        }
      }
    }
    return {
      controlled: samples.controlled,
      plain: samples.plain,
      controlledRead: reads.controlled,
      plainRead: reads.plain,
    };
  } finally {
    await timed.end({ timeout: 2 });
  }
}

/** Figure 11: flow control in the claim. */
export const figure: Figure = {
  number: 11,
  name: 'flow control in the claim',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const f = await flowControlClaim(db, o);
    const ratio = median(f.controlled) / median(f.plain);
    rows.push([
      '11 claim under flow control: 1,000 keys + 1 shared limit, batch of 10',
      `${fmt(median(f.controlled), 3)} ms per claim`,
      `no flow control ${fmt(median(f.plain), 3)} ms per claim`,
      `${fmt(ratio)}x`,
      '(none)',
      '-',
    ]);
    rows.push([
      '11 read of that batch: keys in turn (read_tasks) vs PGMQ read',
      `${fmt(median(f.controlledRead), 3)} ms per read`,
      `PGMQ read ${fmt(median(f.plainRead), 3)} ms per read`,
      `${fmt(median(f.controlledRead) / median(f.plainRead))}x`,
      '(none)',
      '-',
    ]);
    return { rows, notes };
  },
};
