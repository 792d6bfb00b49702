/**
 * Figure 13, waiting runs (issue 22, docs/design/waits.md): what 10,000 runs waiting on a
 * signal cost the SQL core while they wait. Two databases on the same server, migrated alike,
 * with the same flows compiled: one with no waiting run, one with 10,000 runs whose wait step
 * has a timeout a day away (so every one of them is in the deadline index `expire_waits` reads)
 * and 10,000 more whose wait has none. Each round measures, on both sides back to back (the
 * order rotating), the three things that run while nothing happens: an `expire_waits` tick
 * and a `keep_alive` tick (the time of one call, and the shared buffers it touches, from
 * `EXPLAIN (ANALYZE, BUFFERS)`: nested statements included), and a claim (`start_tasks`) of a
 * batch of tasks of another flow on its queue, the worker's path. Work per waiting run would
 * show as buffers growing with them; the figure is the ratio 10,000 waiting : none.
 *
 * @module
 */
import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow } from '../../lib/mod.ts';
import { WorkerQueries } from '../../lib/sql/worker_queries.ts';
import type { BenchDatabase } from '../_db.ts';
import { compile, log } from '../_common.ts';
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Row,
  verdict,
} from '../_figure.ts';
import { fmt, median as medianOf, roundRatio, since } from '../_stats.ts';

/** Settings of the waiting-runs figure. */
export interface WaitingOptions {
  rounds: number;
  /** Calls of each kind per round. */
  calls: number;
  /** Tasks per claim. */
  batch: number;
  /** Runs waiting with a timeout (as many again wait without one). */
  waiting: number;
}

/** One side's per-round medians: milliseconds per call, and shared buffers per tick. */
export interface WaitingSide {
  expireMs: number[];
  expireBuffers: number[];
  keepAliveMs: number[];
  keepAliveBuffers: number[];
  claimMs: number[];
}

/** The two sides of figure 13. */
export interface WaitingResult {
  none: WaitingSide;
  waiting: WaitingSide;
  /** Runs waiting on the waiting side (with and without a timeout). */
  count: number;
  /** Pages of step_states and runs on the waiting side: what a scan of them would touch. */
  pages: number;
}

const QUEUE = 'bench_waiting_claim';

const approval = defineDeployedFlow(
  new Flow<{ i: number }>({ slug: 'benchWaitTimeoutV1' })
    .wait({ slug: 'approval', timeout: 86400 })
    .step({ slug: 'after', dependsOn: ['approval'] }, () => null),
  { alias: 'benchWaitTimeoutV1' },
);
const forever = defineDeployedFlow(
  new Flow<{ i: number }>({ slug: 'benchWaitForeverV1' }).wait({ slug: 'approval' }),
  { alias: 'benchWaitForeverV1' },
);
const claimed = defineDeployedFlow(
  routeFlow(new Flow<{ i: number }>({ slug: 'benchWaitClaimV1' }).step({ slug: 's' }, () => 1), {
    queues: { s: QUEUE },
  }),
  { alias: 'benchWaitClaimV1' },
);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs figure 13. */
export async function waitingRuns(db: BenchDatabase, o: WaitingOptions): Promise<WaitingResult> {
  const other = await db.createDatabase('waiting');
  const sides = [
    { name: 'none' as const, url: db.url, sql: db.sql, waiting: 0 },
    { name: 'waiting' as const, url: other.url, sql: other.sql, waiting: o.waiting },
  ];
  const conns: postgres.Sql[] = [];
  try {
    const prepared = [];
    for (const side of sides) {
      await compile(side.sql, [approval, forever, claimed] as never);
      if (side.waiting > 0) {
        log(`figure 13: starting ${side.waiting.toLocaleString('en')} x 2 waiting runs`);
        await side.sql`select count(switchyard.start_flow('benchWaitTimeoutV1',
          jsonb_build_object('i', i))) from generate_series(1, ${side.waiting}::int) i`;
        await side.sql`select count(switchyard.start_flow('benchWaitForeverV1',
          jsonb_build_object('i', i))) from generate_series(1, ${side.waiting}::int) i`;
      }
      await side.sql`select count(switchyard.start_flow('benchWaitClaimV1',
        jsonb_build_object('i', i)))
        from generate_series(1, ${(o.rounds + 2) * o.calls * o.batch}::int) i`;
      await side.sql`analyze`;
      const conn = postgres(side.url, { max: 1, prepare: false, onnotice: () => {} });
      conns.push(conn);
      const q = new WorkerQueries(conn);
      const workerId = crypto.randomUUID();
      await q.registerWorker(workerId, QUEUE, 'bench-waiting-claim', ['benchWaitClaimV1/s']);
      const [{ n }] = await side.sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.step_states
         where status = 'started' and flow_slug in ('benchWaitTimeoutV1', 'benchWaitForeverV1')`;
      if (n !== side.waiting * 2) throw new Error(`${n} waiting steps, not ${side.waiting * 2}`);
      prepared.push({ ...side, conn, q, workerId });
    }
    const result: WaitingResult = {
      none: { expireMs: [], expireBuffers: [], keepAliveMs: [], keepAliveBuffers: [], claimMs: [] },
      waiting: {
        expireMs: [],
        expireBuffers: [],
        keepAliveMs: [],
        keepAliveBuffers: [],
        claimMs: [],
      },
      count: o.waiting * 2,
      pages: 0,
    };
    /** Milliseconds of one call and the shared buffers it touched (hit + read). */
    const explained = async (conn: postgres.Sql, call: string) => {
      const t0 = performance.now();
      const [row] = await conn.unsafe(`explain (analyze, buffers, format json) ${call}`);
      const ms = since(t0);
      const plan = (row['QUERY PLAN'] as { Plan: Record<string, number> }[])[0].Plan;
      return { ms, buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] };
    };
    for (let round = -1; round < o.rounds; round++) {
      for (const side of round % 2 === 0 ? prepared : [...prepared].reverse()) {
        const s = {
          expireMs: [],
          expireBuffers: [],
          keepAliveMs: [],
          keepAliveBuffers: [],
          claimMs: [],
        } as {
          [K in keyof WaitingSide]: number[];
        };
        for (let c = 0; c < o.calls; c++) {
          const e = await explained(side.conn, 'select switchyard.expire_waits()');
          if (e.buffers === undefined) throw new Error('EXPLAIN gave no buffers');
          s.expireMs.push(e.ms);
          s.expireBuffers.push(e.buffers);
          const k = await explained(side.conn, 'select count(*) from switchyard.keep_alive()');
          s.keepAliveMs.push(k.ms);
          s.keepAliveBuffers.push(k.buffers);
          const ids = (await side.conn<{ msg_id: string }[]>`
            select msg_id::text as msg_id from pgmq.read(${QUEUE}::text, 600, ${o.batch}::int)`)
            .map((r) => BigInt(r.msg_id));
          const t0 = performance.now();
          const claims = await side.q.startTasks(QUEUE, ids, side.workerId, null);
          s.claimMs.push(since(t0));
          const n = claims.filter((x) => x.disposition === 'claimed').length;
          if (n !== ids.length || n === 0) throw new Error(`claimed ${n} of ${ids.length} tasks`);
        }
        if (round < 0) continue; // a warm-up round on both sides
        for (const key of Object.keys(s) as (keyof WaitingSide)[]) {
          result[side.name][key].push(median(s[key]));
        }
      }
    }
    // Nothing ended while measured: the waits are still waiting.
    const [{ n }] = await other.sql<{ n: number }[]>`
      select count(*)::int as n from switchyard.step_states where status = 'started'
         and flow_slug in ('benchWaitTimeoutV1', 'benchWaitForeverV1')`;
    if (n !== o.waiting * 2) throw new Error(`${n} steps still waiting, not ${o.waiting * 2}`);
    const [{ pages }] = await other.sql<{ pages: number }[]>`
      select ((pg_relation_size('switchyard.step_states') + pg_relation_size('switchyard.runs'))
              / current_setting('block_size')::int)::int as pages`;
    result.pages = pages;
    return result;
  } finally {
    for (const c of conns) await c.end({ timeout: 2 });
  }
}

/** Figure 13: waiting runs. */
export const figure: Figure = {
  number: 13,
  name: 'waiting runs',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const w = await waitingRuns(db, {
      rounds: o.rounds,
      calls: o.quick ? 10 : 30,
      batch: o.batch,
      waiting: 10_000,
    });
    const count = w.count.toLocaleString('en');
    const figure = (
      what: string,
      key: 'expireMs' | 'keepAliveMs' | 'claimMs',
      buffers?: 'expireBuffers' | 'keepAliveBuffers',
    ) => {
      const r = roundRatio(w.waiting[key], w.none[key]);
      const b = buffers
        ? `, ${fmt(medianOf(w.waiting[buffers]), 0)} vs ${
          fmt(medianOf(w.none[buffers]), 0)
        } buffers`
        : '';
      rows.push([
        `13 ${what}, ${count} runs waiting vs none`,
        `${fmt(medianOf(w.waiting[key]), 3)} ms` +
        (buffers ? ` (${fmt(medianOf(w.waiting[buffers]), 0)} shared buffers)` : ''),
        `none waiting ${fmt(medianOf(w.none[key]), 3)} ms` +
        (buffers ? ` (${fmt(medianOf(w.none[buffers]), 0)} shared buffers)` : ''),
        `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})${b}`,
        // An index probe may go one level deeper with 20,000 entries (a few buffers, not
        // one per waiting run: a scan of them would touch the pages noted below).
        buffers ? 'buffers <= none + 3' : '<= 1.2x',
        verdict(
          buffers ? medianOf(w.waiting[buffers]) <= medianOf(w.none[buffers]) + 3 : r.ratio <= 1.2,
        ),
      ]);
    };
    figure('expire_waits tick', 'expireMs', 'expireBuffers');
    figure('keep_alive tick', 'keepAliveMs', 'keepAliveBuffers');
    figure(`claim of ${o.batch} tasks of another flow`, 'claimMs');
    notes.push(
      `figure 13: the ${count} waiting runs' step_states and runs fill ` +
        `${w.pages.toLocaleString('en')} pages (8 KiB): what one read per waiting run, or a ` +
        'scan, would touch; the ticks touch the buffers in the table. Tick times are ' +
        'dominated by the round trip and EXPLAIN, and noisy on a shared machine.',
    );
    return { rows, notes };
  },
};
