/**
 * Figure 18, what a row trigger adds to the app's insert (issue 43): per-insert medians of a bare
 * insert, an insert with a row trigger (one run started per row) and an insert with a batching row
 * trigger (the row joins a batch: docs/design/batching.md), single-row autocommit inserts on one
 * connection, in alternating rounds, side by side in one run.
 *
 * @module
 */
import type { Figure, FigureContext, FigureResult, Options, Row } from '../_figure.ts';
import postgres from 'postgres';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import type { BenchDatabase } from '../_db.ts';
import { fmt, median, roundRatio } from '../_stats.ts';
import { compile, log } from '../_common.ts';

type Side = 'bare' | 'trigger' | 'batch';

/** Per-insert milliseconds, one sample per round and side. */
async function rowTriggerInsert(db: BenchDatabase, o: Options) {
  const { sql } = db;
  const inserts = o.quick ? 50 : 200;
  const registry = [
    defineDeployedFlow(
      new Flow<{ id: number }>({ slug: 'benchRowV1' }).step({ slug: 'a' }, () => 1),
      { alias: 'bench_row' },
    ),
    defineDeployedFlow(
      new Flow<{ id: number }[]>({ slug: 'benchRowBatchV1', batch: { maxSize: 100, timeout: 60 } })
        .step({ slug: 'a' }, () => 1),
      { alias: 'bench_row_batch' },
    ),
  ];
  await compile(sql, registry);
  await sql`select switchyard.sync_alias('bench_row', array['benchRowV1'])`;
  await sql`select switchyard.sync_alias('bench_row_batch', array['benchRowBatchV1'])`;
  for (const side of ['bare', 'trigger', 'batch'] as const) {
    await sql.unsafe(`create table if not exists public.bench_${side} (id bigint primary key,
                        account int not null, body text not null)`);
  }
  await sql`select switchyard.declare_row_trigger('bench_row_trigger', 'public.bench_trigger',
              'bench_row', input_columns => array['id', 'account'])`;
  await sql`select switchyard.declare_row_trigger('bench_row_batch', 'public.bench_batch',
              'bench_row_batch', input_columns => array['id', 'account'], batch_by => 'account')`;
  const conn = postgres(db.url, { max: 1, prepare: true, onnotice: () => {} });
  let next = 0;
  const run = async (side: Side) => {
    const start = performance.now();
    for (let i = 0; i < inserts; i++) {
      next++;
      await conn.unsafe(
        `insert into public.bench_${side} (id, account, body) values ($1, $2, 'hello')`,
        [next, next % 10],
      );
    }
    return (performance.now() - start) / inserts;
  };
  const samples: Record<Side, number[]> = { bare: [], trigger: [], batch: [] };
  const sides: Side[] = ['bare', 'trigger', 'batch'];
  try {
    log('row trigger insert: warm-up');
    for (const side of sides) await run(side);
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(r + k) % sides.length];
        samples[side].push(await run(side));
      }
      log(
        `row trigger insert round ${r + 1}/${o.rounds}: bare ${fmt(samples.bare[r], 3)} ms, ` +
          `trigger ${fmt(samples.trigger[r], 3)} ms, batch ${fmt(samples.batch[r], 3)} ms`,
      );
    }
  } finally {
    await conn.end({ timeout: 2 });
  }
  return { ...samples, inserts };
}

/** Figure 18: what a row trigger adds to the app's insert. */
export const figure: Figure = {
  number: 18,
  name: 'row trigger insert cost',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const e = await rowTriggerInsert(db, o);
    const ms = (v: number[]) => `${fmt(median(v), 3)} ms`;
    const t = roundRatio(e.trigger, e.bare);
    const b = roundRatio(e.batch, e.bare);
    const rows: Row[] = [
      [
        `18 insert with a row trigger vs bare insert, 1 connection, ${e.inserts} inserts/round`,
        `trigger ${ms(e.trigger)}/insert`,
        `bare ${ms(e.bare)}/insert`,
        `${fmt(t.ratio)}x (${fmt(t.low)}-${fmt(t.high)})`,
        '(none)',
        '-',
      ],
      [
        `18 insert with a batching row trigger vs bare insert, 10 batch keys, maxSize 100`,
        `batch ${ms(e.batch)}/insert`,
        `bare ${ms(e.bare)}/insert`,
        `${fmt(b.ratio)}x (${fmt(b.low)}-${fmt(b.high)})`,
        '(none)',
        '-',
      ],
    ];
    return { rows, notes: [] };
  },
};
