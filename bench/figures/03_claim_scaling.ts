/**
 * Figure 3, claim scaling: `start_tasks` per batch of 10 with 1, 100 and 1000 deployed flows (10
 * steps each, all on the queue: 10 to 10,000 registered pairs).
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
import { toPlacement } from '../../lib/dsl/placement.ts';
import { pgArray, WorkerQueries } from '../../lib/sql/worker_queries.ts';
import type { BenchDatabase } from '../_db.ts';
import { routedRegistry } from '../_flows.ts';
import { fmt, median, roundRatio, since } from '../_stats.ts';
import { compile, log } from '../_common.ts';

const CLAIM_SIZES = [1, 100, 1000] as const;

async function claimScaling(
  db: BenchDatabase,
  o: Options,
): Promise<{ registered: Map<number, number[]>; explicit: Map<number, number[]> }> {
  const { sql } = db;
  const batches = o.quick ? 40 : 150;
  const perBatch = o.batch;
  // One connection for every timed call, so all sizes share the same session costs.
  const timed = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const q = new WorkerQueries(timed);
  const scenarios: { size: number; queue: string; workerId: string; pairs: string[] }[] = [];
  try {
    for (const size of CLAIM_SIZES) {
      const queue = `bench_claim_${size}`;
      const prefix = `cl${size}f`;
      const registry = routedRegistry(prefix, size, 10, queue);
      const started = performance.now();
      await compile(sql, registry);
      log(`claim scaling: compiled ${size} flow(s) x 10 steps in ${fmt(since(started), 0)} ms`);
      const pairs = registry.flatMap((d) =>
        toPlacement(d).flow.steps.map((s) => `${d.flow.slug}/${s.slug}`)
      );
      const workerId = crypto.randomUUID();
      await q.registerWorker(workerId, queue, `bench-claim-${size}`, pairs);
      // Every run queues 10 root tasks; runs pick flows at random.
      const needed = 5 + batches + Math.ceil(batches / 5) + 20;
      const runs = Math.ceil((needed * perBatch) / 10);
      await sql`select count(switchyard.start_flow(${prefix} || floor(random() * ${size}::int)::int,
                  '{}'::jsonb)) from generate_series(1, ${runs}::int)`;
      scenarios.push({ size, queue, workerId, pairs });
    }
    const samples = new Map<number, number[]>(CLAIM_SIZES.map((s) => [s, []]));
    const claimOnce = async (
      s: typeof scenarios[number],
      record: Map<number, number[]> | null,
      explicit = false,
    ) => {
      const ids = (await timed<{ msg_id: string }[]>`
        select msg_id::text as msg_id from pgmq.read(${s.queue}::text, 600, ${perBatch}::int)`)
        .map((r) => BigInt(r.msg_id));
      if (ids.length !== perBatch) throw new Error(`read ${ids.length} of ${perBatch} messages`);
      const t0 = performance.now();
      // The worker's call passes no pairs (they were stored at registration); the explicit
      // form sends the whole set with every batch.
      const claims = await q.startTasks(s.queue, ids, s.workerId, explicit ? s.pairs : null);
      const ms = since(t0);
      const claimed = claims.filter((c) => c.disposition === 'claimed').length;
      if (claimed !== perBatch) throw new Error(`claimed ${claimed} of ${perBatch} tasks`);
      if (record) record.get(s.size)!.push(ms);
    };
    for (let w = 0; w < 5; w++) for (const s of scenarios) await claimOnce(s, null);
    const explicitSamples = new Map<number, number[]>(CLAIM_SIZES.map((s) => [s, []]));
    for (let b = 0; b < batches; b++) {
      // Rotate the order so no size always runs first.
      for (let k = 0; k < scenarios.length; k++) {
        await claimOnce(scenarios[(b + k) % scenarios.length], samples);
      }
      // Every fifth round: the explicit-array form, for comparison.
      if (b % 5 === 0) {
        for (const s of [scenarios[0], scenarios[scenarios.length - 1]]) {
          await claimOnce(s, explicitSamples, true);
        }
      }
    }
    if (o.explain) await explainClaim(db, scenarios[scenarios.length - 1]);
    return { registered: samples, explicit: explicitSamples };
  } finally {
    await timed.end({ timeout: 2 });
  }
}

/**
 * Prints EXPLAIN ANALYZE of every statement inside one `start_tasks` call (auto_explain with
 * nested statements), so BENCHMARKS.md can say where the claim time goes. Needs a superuser
 * (auto_explain is loaded per session); skipped with a note otherwise.
 */
async function explainClaim(
  db: BenchDatabase,
  s: { size: number; queue: string; workerId: string },
) {
  const notices: string[] = [];
  const conn = postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: (n) => notices.push(String(n.message)),
  });
  try {
    await conn`load 'auto_explain'`;
    // Warm the session's plan caches first, as a long-lived worker connection would be.
    for (let i = 0; i < 6; i++) {
      await conn`select count(*) from switchyard.start_tasks(${s.queue}::text,
        array(select msg_id from pgmq.read(${s.queue}::text, 600, 10)), ${s.workerId}::uuid)`;
    }
    await conn.unsafe(`set auto_explain.log_min_duration = 0;
      set auto_explain.log_analyze = on; set auto_explain.log_buffers = on;
      set auto_explain.log_nested_statements = on; set auto_explain.log_level = notice`);
    const ids = await conn<{ msg_id: string }[]>`
      select msg_id::text as msg_id from pgmq.read(${s.queue}::text, 600, 10)`;
    notices.length = 0;
    await conn`select count(*) from switchyard.start_tasks(${s.queue}::text,
      ${pgArray(ids.map((r) => r.msg_id))}::bigint[], ${s.workerId}::uuid)`;
    console.log(
      `\n## EXPLAIN ANALYZE of one start_tasks batch (10 messages, ${s.size} flows, ` +
        `${s.size * 10} registered pairs)\n`,
    );
    for (const n of notices) console.log(n.replace(/^duration/, '--- duration'));
  } catch (e) {
    console.log(`\n(--explain skipped: ${(e as Error).message})`);
  } finally {
    await conn.end({ timeout: 2 });
  }
}

/** Figure 3: claim scaling. */
export const figure: Figure = {
  number: 3,
  name: 'claim scaling',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const { registered: c, explicit } = await claimScaling(db, o);
    const base = c.get(1)!;
    for (const size of CLAIM_SIZES) {
      const r = roundRatio(c.get(size)!, base);
      rows.push([
        `3 start_tasks, ${size} flow(s) / ${size * 10} pairs`,
        `${fmt(median(c.get(size)!), 3)} ms/batch`,
        `1 flow ${fmt(median(base), 3)} ms/batch`,
        `${fmt(r.ratio)}x`,
        size === 1000 ? '<= 1.2x' : '',
        size === 1000 ? verdict(r.ratio <= 1.2) : '',
      ]);
    }
    const big = CLAIM_SIZES[CLAIM_SIZES.length - 1];
    const re = roundRatio(explicit.get(big)!, explicit.get(1)!);
    rows.push([
      `3 start_tasks with the pairs sent per batch, ${big} flows`,
      `${fmt(median(explicit.get(big)!), 3)} ms/batch`,
      `1 flow ${fmt(median(explicit.get(1)!), 3)} ms/batch`,
      `${fmt(re.ratio)}x`,
      '(not the worker path)',
      '-',
    ]);
    return { rows, notes };
  },
};
