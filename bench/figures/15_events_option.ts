/**
 * Figure 15, events as a choice (issue 27): runs/s of the 3-step chain with `events: false` (no
 * run_events rows) vs the same flow with events, one worker on one queue.
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
import { defineDeployedFlow, Flow, routeFlow } from '../../lib/mod.ts';
import { startWorkerImpl } from '../../lib/worker/worker.ts';
import type { BenchDatabase } from '../_db.ts';
import { fmt, median, roundRatio } from '../_stats.ts';
import { benchWorkerOptions, compile, log, type Sample, timed, waitUntil } from '../_common.ts';

/**
 * Figure 15 (issue 27): the 3-step chain on one shared queue through one worker, a flow with
 * `events: false` (no run_events rows) next to the same flow with events; runs/s side by side.
 * The messages are seeded and held before the clock, as in figure 1.
 */
async function eventsOption(db: BenchDatabase, o: Options) {
  const { sql } = db;
  const runs = o.quick ? 300 : 1000;
  const queue = 'bench_events';
  const chain = (slug: string, events: boolean) =>
    defineDeployedFlow(
      routeFlow(
        new Flow<{ i: number }>({ slug, maxAttempts: 3, events })
          .step({ slug: 'first' }, (input) => ({ n: input.i }))
          .step({ slug: 'second', dependsOn: ['first'] }, (input) => ({ n: input.first.n + 1 }))
          .step({ slug: 'third', dependsOn: ['second'] }, (input) => ({ n: input.second.n * 2 })),
        { queues: { first: queue, second: queue, third: queue } },
      ),
      { alias: slug },
    );
  const registry = [chain('benchQuiet', false), chain('benchLoud', true)];
  await compile(sql, registry);
  const pool = postgres(db.url, { max: o.connections, prepare: false, onnotice: () => {} });
  const options = { ...benchWorkerOptions(o), queueName: queue, sql: pool };
  type Side = 'quiet' | 'loud';
  const run = async (side: Side) => {
    const slug = side === 'quiet' ? 'benchQuiet' : 'benchLoud';
    await sql`select count(switchyard.start_flow(${slug}::text, jsonb_build_object('i', i)))
                from generate_series(1, ${runs}::int) i`;
    await sql.unsafe(`update pgmq.q_${queue} set vt = clock_timestamp() + interval '1 hour'`);
    const worker = await startWorkerImpl(registry, options);
    try {
      return await timed(db, runs, async () => {
        await sql.unsafe(`update pgmq.q_${queue} set vt = clock_timestamp()`);
        await waitUntil('the events-option runs to complete', async () => {
          const [{ open }] = await sql<{ open: boolean }[]>`
            select exists (select 1 from switchyard.runs
                            where flow_slug = ${slug} and status = 'started') as open`;
          return !open;
        });
      });
    } finally {
      await worker.stop();
    }
  };
  const samples: Record<Side, Sample[]> = { quiet: [], loud: [] };
  const sides: Side[] = ['quiet', 'loud'];
  try {
    log('events option: warm-up');
    for (const side of sides) await run(side);
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(r + k) % sides.length];
        samples[side].push(await run(side));
      }
      log(
        `events option round ${r + 1}/${o.rounds}: events: false ${
          fmt(samples.quiet[r].rate, 0)
        } runs/s, events ${fmt(samples.loud[r].rate, 0)} runs/s`,
      );
    }
  } finally {
    await pool.end({ timeout: 2 });
  }
  return { ...samples, runs };
}

/** Figure 15: events as a choice. */
export const figure: Figure = {
  number: 15,
  name: 'events as a choice',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const e = await eventsOption(db, o);
    const r = roundRatio(rates(e.quiet), rates(e.loud));
    rows.push([
      `15 events: false vs events, 3-step chain, 1 queue, 1 worker, ${e.runs} runs`,
      `events: false ${fmt(median(rates(e.quiet)), 0)} runs/s` + cpuText(e.quiet, 'run'),
      `events ${fmt(median(rates(e.loud)), 0)} runs/s` + cpuText(e.loud, 'run'),
      `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})`,
      '(none)',
      '-',
    ]);
    return { rows, notes };
  },
};
