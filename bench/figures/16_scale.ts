/**
 * Figure 16, scale on one database (issue 27): 1-step tasks through 1, 2, 4, 8 and 16 workers on
 * one queue and on 4 queues: tasks/s and CPU per task, where the database saturates.
 *
 * @module
 */
import {
  cpuText,
  type Figure,
  type FigureContext,
  type FigureResult,
  type Options,
  rates,
  type Row,
} from '../_figure.ts';
import postgres from 'postgres';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { startWorkerImpl, type Worker } from '../../lib/worker/worker.ts';
import type { BenchDatabase } from '../_db.ts';
import { routedRegistry } from '../_flows.ts';
import { fmt, median, roundRatio } from '../_stats.ts';
import { benchWorkerOptions, compile, log, type Sample, timed, waitUntil } from '../_common.ts';

/** Worker counts of figure 16 per layout: a worker polls one queue, so 4 queues need 4 at least. */
const SCALE_WORKERS = { one: [1, 2, 4, 8, 16], four: [4, 8, 16] } as const;

/**
 * Figure 16 (issue 27): 1-step tasks drained by 1, 2, 4, 8 and 16 workers on one database,
 * all on one shared queue, and by 4, 8 and 16 spread round-robin over 4 shared queues (the tasks
 * spread the same way; a worker polls one queue, so fewer than 4 would leave a queue unread). Tasks/s and CPU ms per task (this process and the cluster) per count, rounds in a
 * rotating order; where tasks/s stops growing the database is saturated, and the CPU per task
 * there is its cost at saturation.
 */
async function scale(db: BenchDatabase, o: Options) {
  const { sql } = db;
  const tasks = o.quick ? 1000 : 3000;
  const layouts = { one: ['bench_scale_1'], four: [0, 1, 2, 3].map((i) => `bench_scale_q${i}`) };
  const registry = [
    ...routedRegistry('scone', 1, 1, layouts.one[0]),
    ...layouts.four.flatMap((q, i) => routedRegistry(`scfour${i}f`, 1, 1, q)),
  ];
  await compile(sql, registry);
  type Layout = keyof typeof layouts;
  const pools: postgres.Sql[] = [];
  const pool = (i: number) => {
    while (pools.length <= i) {
      pools.push(postgres(db.url, { max: 2, prepare: false, onnotice: () => {} }));
    }
    return pools[i];
  };
  const run = async (layout: Layout, workers: number) => {
    const queues = layouts[layout];
    if (layout === 'one') {
      await sql`select count(switchyard.start_flow('scone0', jsonb_build_object('i', i)))
                  from generate_series(1, ${tasks}::int) i`;
    } else {
      await sql`select count(switchyard.start_flow('scfour' || (i % 4) || 'f0',
                  jsonb_build_object('i', i))) from generate_series(1, ${tasks}::int) i`;
    }
    for (const q of queues) {
      await sql.unsafe(`update pgmq.q_${q} set vt = clock_timestamp() + interval '1 hour'`);
    }
    const started: Worker[] = [];
    try {
      for (let w = 0; w < workers; w++) {
        started.push(
          await startWorkerImpl(registry, {
            ...benchWorkerOptions(o),
            queueName: queues[w % queues.length],
            sql: pool(w),
          }),
        );
      }
      return await timed(db, tasks, async () => {
        for (const q of queues) {
          await sql.unsafe(`update pgmq.q_${q} set vt = clock_timestamp()`);
        }
        await waitUntil('the scale runs to complete', async () => {
          const [{ open }] = await sql<{ open: boolean }[]>`
            select exists (select 1 from switchyard.runs
                            where flow_slug = any(${
            pgArray(['scone0', 'scfour0f0', 'scfour1f0', 'scfour2f0', 'scfour3f0'])
          }::text[]) and status = 'started') as open`;
          return !open;
        });
      });
    } finally {
      await Promise.all(started.map((w) => w.stop()));
    }
  };
  const sides = (['one', 'four'] as const).flatMap((layout) =>
    SCALE_WORKERS[layout].map((workers) => ({ layout, workers }))
  );
  const samples = new Map(sides.map((s) => [`${s.layout}:${s.workers}`, [] as Sample[]]));
  try {
    log('scale: warm-up');
    await run('one', 1);
    await run('four', 4);
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(r + k) % sides.length];
        samples.get(`${side.layout}:${side.workers}`)!.push(await run(side.layout, side.workers));
      }
      log(
        `scale round ${r + 1}/${o.rounds}: ` +
          sides.map((s) =>
            `${s.layout} queue(s) ${s.workers}w ${
              fmt(samples.get(`${s.layout}:${s.workers}`)![r].rate, 0)
            }/s`
          ).join(', '),
      );
    }
  } finally {
    await Promise.all(pools.map((p) => p.end({ timeout: 2 })));
  }
  return { samples, tasks };
}

/** Figure 16: scale on one database. */
export const figure: Figure = {
  number: 16,
  name: 'scale on one database',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const { samples, tasks } = await scale(db, o);
    for (const layout of ['one', 'four'] as const) {
      // Both layouts against one worker on one queue, measured in the same rounds.
      const one = samples.get('one:1')!;
      const counts: readonly number[] = SCALE_WORKERS[layout];
      const best = counts.reduce((a, b) =>
        median(rates(samples.get(`${layout}:${b}`)!)) >
            median(rates(samples.get(`${layout}:${a}`)!))
          ? b
          : a
      );
      for (const workers of counts) {
        const xs = samples.get(`${layout}:${workers}`)!;
        const r = roundRatio(rates(xs), rates(one));
        rows.push([
          `16 scale, ${layout === 'one' ? '1 queue' : '4 queues'}, ${workers} worker(s), ` +
          `${tasks} 1-step tasks` + (workers === best ? ' (highest tasks/s)' : ''),
          `${fmt(median(rates(xs)), 0)} tasks/s` + cpuText(xs, 'task'),
          `1 worker, 1 queue ${fmt(median(rates(one)), 0)} tasks/s`,
          `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})`,
          '(none)',
          '-',
        ]);
      }
    }
    return { rows, notes };
  },
};
