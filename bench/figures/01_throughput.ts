/**
 * Figure 1, queue throughput: 1-step tasks through a shared queue with a 10-flow registry vs a raw
 * PGMQ `read` + `archive` loop on the same database with the same batch size; one worker vs one
 * loop, and four of each. Each worker and each loop gets its own pool of `--connections` (a loop
 * can use one at a time). Also CPU per task (this process plus the cluster's server processes)
 * when the bench owns the cluster. The same rounds measure figure 2's end-to-end side
 * (`./02_end_to_end.ts`); with `--baseline` the engine sides also run on that revision's SQL core,
 * in the same rounds; `--profile` adds where each side's database time goes.
 *
 * @module
 */
import postgres from 'postgres';
import { startWorker, startWorkerImpl, type Worker } from '../../lib/worker/worker.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import type { BenchDatabase } from '../_db.ts';
import { routedRegistry, threeStepFlow } from '../_flows.ts';
import { fmt, median, roundRatio, table } from '../_stats.ts';
import { benchWorkerOptions, compile, log, type Sample, timed, waitUntil } from '../_common.ts';
import {
  type Baseline,
  cpu,
  cpuText,
  type Figure,
  type FigureContext,
  type FigureResult,
  type Options,
  rates,
  type Row,
  verdict,
} from '../_figure.ts';

/** Samples per round for each side, keyed by consumer count. */
export interface ThroughputResult {
  engine: Map<number, Sample[]>; // tasks
  raw: Map<number, Sample[]>; // messages
  e2e: Sample[]; // runs
  /** With --baseline: the engine sides again on that revision's SQL core, in the same rounds. */
  baseline?: { label: string; engine: Map<number, Sample[]>; e2e: Sample[] };
  /** With --profile: where the database time of one engine pass and one raw pass went. */
  profile?: string;
}

/**
 * Runs `pass` with `pg_stat_statements` counting from zero and returns a table of the
 * statements that took the most execution time, and the total per item.
 */
async function profiled(
  db: BenchDatabase,
  items: number,
  pass: (reset: () => Promise<unknown>) => Promise<unknown>,
  /** The database whose statements count (default: the bench database). */
  datname?: string,
) {
  await pass(() => db.sql`select pg_stat_statements_reset()`);
  const rows = await db.sql<
    { top: boolean; calls: number; total: number; mean: number; query: string }[]
  >`
    select s.toplevel as top, s.calls::int as calls, s.total_exec_time as total,
           s.total_exec_time / s.calls as mean,
           left(regexp_replace(s.query, '[[:space:]]+', ' ', 'g'), 90) as query
      from pg_stat_statements s
      join pg_database d on d.oid = s.dbid and d.datname = coalesce(${datname ?? null}::text,
                                                                     current_database())
     where s.query not like '%pg_stat_statements%'
       and s.query not like 'SELECT pg_sleep%'
     order by s.total_exec_time desc limit 30`;
  const [{ total }] = await db.sql<{ total: number }[]>`
    select coalesce(sum(s.total_exec_time) filter (where s.toplevel), 0)::float
           - coalesce(sum(s.total_exec_time) filter (where s.query like 'SELECT pg_sleep%'), 0)
             as total
      from pg_stat_statements s
      join pg_database d on d.oid = s.dbid and d.datname = coalesce(${datname ?? null}::text,
                                                                     current_database())
     where s.query not like '%pg_stat_statements%'`;
  return `${fmt(total / items, 3)} ms of statement time per item (top-level statements, ` +
    `without read_with_poll's sleeps)\n\n` +
    table(
      ['', 'calls', 'total ms', 'ms/call', 'statement'],
      rows.map((r) => [
        r.top ? 'top' : 'in',
        String(r.calls),
        fmt(r.total, 1),
        fmt(r.mean, 3),
        r.query.replaceAll('|', '/'),
      ]),
    );
}

/** Consumer counts compared: one worker vs one loop, and four of each (CPU-bound). */
export const CONSUMERS = [1, 4] as const;

async function throughput(
  db: BenchDatabase,
  o: Options,
  baseline?: Baseline,
): Promise<ThroughputResult> {
  const { sql } = db;
  const messages = o.quick ? 1500 : 3000;
  const e2eRuns = o.quick ? 300 : 600;
  const registry = routedRegistry('tp', 10, 1, 'bench_tp');
  const e2eRegistry = [threeStepFlow('e2e', 'bench_e2e_a', 'bench_e2e_b')];
  // The engine's databases: this checkout's SQL core, and with --baseline the same flows on a
  // database of the same server migrated from that revision's (the worker code is this one's).
  // The engine side has a database of its own, as the baseline side does: the bench's main
  // database also holds the raw loop's long-lived queue and its growing archive, and their
  // autovacuums, which the engine side would otherwise share and the baseline side not.
  const own = await db.createDatabase('tp_engine');
  const targets: { label: 'engine' | 'base'; url: string; sql: postgres.Sql }[] = [
    { label: 'engine', url: own.url, sql: own.sql },
  ];
  if (baseline) {
    const base = await db.createDatabase('tp_base', { workdir: baseline.workdir });
    targets.push({ label: 'base', url: base.url, sql: base.sql });
  }
  for (const t of targets) {
    await compile(t.sql, registry);
    await compile(t.sql, e2eRegistry);
  }
  await sql`select pgmq.create('bench_raw')`;
  // The raw queue is created once and kept across rounds, as the engine's is, with the
  // queue-table settings the kit gives its queues (switchyard._tune_queue_table): the ratio is
  // about the work per task, not about a setting a raw PGMQ user can make too.
  await sql`alter table pgmq.q_bench_raw set (autovacuum_vacuum_scale_factor = 0,
              autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)`;
  const out: ThroughputResult = {
    engine: new Map(CONSUMERS.map((n) => [n, []])),
    raw: new Map(CONSUMERS.map((n) => [n, []])),
    e2e: [],
    ...(baseline
      ? {
        baseline: {
          label: baseline.label,
          engine: new Map(CONSUMERS.map((n) => [n, []])),
          e2e: [],
        },
      }
      : {}),
  };
  // Each side keeps its connection pools (one of `connections` per consumer) for the whole
  // figure: sessions stay warm as in a long-running worker, and the engine's larger number of
  // sessions (a worker uses its pool's connections at once) does not pay its per-session
  // start-up (function compilation, plan caches) again every round.
  const pools = new Map<string, postgres.Sql[]>();
  const sessions = (side: 'engine' | 'base' | 'raw', consumers: number, url = db.url) => {
    const key = `${side}:${consumers}`;
    if (!pools.has(key)) {
      pools.set(
        key,
        Array.from(
          { length: consumers },
          () => postgres(url, { max: o.connections, prepare: false, onnotice: () => {} }),
        ),
      );
    }
    return pools.get(key)!;
  };
  // The seeded messages stay hidden until the clock starts: a worker that starts before the
  // others (or before the clock) must not process any of them early.
  const hold = (queue: string, on = sql) =>
    on.unsafe(`update pgmq.q_${queue} set vt = clock_timestamp() + interval '1 hour'`);
  const release = (queue: string, on = sql) =>
    on.unsafe(`update pgmq.q_${queue} set vt = clock_timestamp()`);
  const drained = (table: string, on = sql) => async () => {
    const [{ n }] = await on.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table}`);
    return n === 0;
  };

  // Workers start before the clock and stop after it; no worker idles during the raw side.
  const workerOptions = benchWorkerOptions(o);
  // `atClock` runs right before the clock starts (after the work is seeded).
  const runEngine = async (
    consumers: number,
    atClock?: () => Promise<unknown>,
    target = targets[0],
  ) => {
    const sql = target.sql;
    await sql`select count(switchyard.start_flow('tp' || (i % 10), jsonb_build_object('i', i)))
                from generate_series(1, ${messages}::int) i`;
    await hold('bench_tp', sql);
    const pools = sessions(target.label, consumers, target.url);
    const workers: Worker[] = [];
    try {
      // startWorkerImpl accepts a pool, so the engine gets exactly `connections` per worker.
      for (const pool of pools) {
        workers.push(
          await startWorkerImpl(registry, { ...workerOptions, queueName: 'bench_tp', sql: pool }),
        );
      }
      await atClock?.();
      // Releasing the messages is inside the clock (it costs the engine side a few ms).
      return await timed(db, messages, async () => {
        await release('bench_tp', sql);
        await waitUntil('the engine to drain bench_tp', drained('pgmq.q_bench_tp', sql));
      });
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  };
  const runRaw = async (consumers: number, atClock?: () => Promise<unknown>) => {
    await sql`select count(*) from generate_series(1, ${messages}::int) i,
                lateral pgmq.send('bench_raw', jsonb_build_object('run_id', gen_random_uuid(),
                  'flow_slug', 'tp0', 'step_slug', 's0', 'i', i))`;
    const pools = sessions('raw', consumers);
    await Promise.all(pools.map((p) => p`select 1`)); // connected before the clock starts
    await atClock?.();
    let archived = 0;
    const sample = await timed(db, messages, async () => {
      await Promise.all(pools.map(async (pool) => {
        for (;;) {
          const rows = await pool<{ msg_id: string }[]>`
            select msg_id::text as msg_id from pgmq.read('bench_raw', 60, ${o.batch}::int)`;
          if (rows.length === 0) return;
          await pool`select pgmq.archive('bench_raw', ${
            pgArray(rows.map((r) => r.msg_id))
          }::bigint[])`;
          archived += rows.length;
        }
      }));
    });
    if (archived !== messages) throw new Error(`raw loops archived ${archived} of ${messages}`);
    return sample;
  };
  const runE2e = async (target = targets[0]) => {
    const sql = target.sql;
    await sql`select count(switchyard.start_flow('e2e', jsonb_build_object('i', i)))
                from generate_series(1, ${e2eRuns}::int) i`;
    await hold('bench_e2e_a', sql);
    const options = { ...workerOptions, connectionString: target.url };
    const workers: Worker[] = [];
    try {
      workers.push(await startWorker(e2eRegistry, { ...options, queueName: 'bench_e2e_a' }));
      workers.push(await startWorker(e2eRegistry, { ...options, queueName: 'bench_e2e_b' }));
      return await timed(db, e2eRuns, async () => {
        await release('bench_e2e_a', sql);
        // `exists`, not a count: the check must not read every open run 100 times a second.
        await waitUntil('the e2e runs to complete', async () => {
          const [{ open }] = await sql<{ open: boolean }[]>`
            select exists (select 1 from switchyard.runs
                            where flow_slug = 'e2e' and status = 'started') as open`;
          return !open;
        });
      });
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  };

  try {
    // One warm-up of each side, then rounds in an order that rotates every round.
    log('throughput: warm-up');
    for (const n of CONSUMERS) {
      for (const t of targets) await runEngine(n, undefined, t);
      await runRaw(n);
    }
    for (const t of targets) await runE2e(t);
    const base = targets[1], b = out.baseline;
    const sides: (() => Promise<unknown>)[] = [
      ...CONSUMERS.flatMap((n) => [
        async () => out.engine.get(n)!.push(await runEngine(n)),
        ...(base && b
          ? [async () => b.engine.get(n)!.push(await runEngine(n, undefined, base))]
          : []),
        async () => out.raw.get(n)!.push(await runRaw(n)),
      ]),
      async () => out.e2e.push(await runE2e()),
      ...(base && b ? [async () => b.e2e.push(await runE2e(base))] : []),
    ];
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) await sides[(r + k) % sides.length]();
      log(
        `throughput round ${r + 1}/${o.rounds}: ` +
          CONSUMERS.map((n) =>
            `${n} consumer(s): engine ${fmt(out.engine.get(n)![r].rate, 0)} tasks/s, ` +
            (b ? `baseline ${fmt(b.engine.get(n)![r].rate, 0)} tasks/s, ` : '') +
            `raw ${fmt(out.raw.get(n)![r].rate, 0)} msgs/s`
          ).join('; ') + `; e2e ${fmt(out.e2e[r].rate, 0)} runs/s` +
          (b ? ` (baseline ${fmt(b.e2e[r].rate, 0)})` : ''),
      );
    }
    if (o.profile) {
      const raw = await profiled(db, messages, (reset) => runRaw(1, reset));
      const engine = await profiled(
        db,
        messages,
        (reset) => runEngine(1, reset),
        new URL(targets[0].url).pathname.slice(1),
      );
      const base = targets[1] && await profiled(
        db,
        messages,
        (reset) => runEngine(1, reset, targets[1]),
        new URL(targets[1].url).pathname.slice(1),
      );
      out.profile = `where the database time goes (pg_stat_statements, one more pass of each ` +
        `side with 1 consumer, ${messages} items; "in" = a statement inside a function)\n\n` +
        `raw PGMQ loop: ${raw}\n\nengine: ${engine}` +
        (base ? `\n\nengine on the baseline's SQL core (${baseline!.label}): ${base}` : '');
    }
  } finally {
    await Promise.all([...pools.values()].flat().map((p) => p.end({ timeout: 2 })));
  }
  return out;
}

/** Figures 1 and 2's rounds, measured once per bench run whichever of the two runs first. */
export function measureThroughput(ctx: FigureContext): Promise<ThroughputResult> {
  return ctx.once('throughput', () => throughput(ctx.db, ctx.o, ctx.baseline));
}

/** Figure 1: queue throughput. */
export const figure: Figure = {
  number: 1,
  name: 'queue throughput',
  usesBaseline: true,
  async run(ctx: FigureContext): Promise<FigureResult> {
    const t = await measureThroughput(ctx);
    const rows: Row[] = [];
    const notes: string[] = [];
    for (const n of CONSUMERS) {
      const engine = t.engine.get(n)!, raw = t.raw.get(n)!;
      const r1 = roundRatio(rates(engine), rates(raw));
      const ce = cpu(engine), cr = cpu(raw);
      const target = n === 1 ? 0.4 : 0.3;
      rows.push([
        n === 1 ? '1 queue throughput, 1 worker vs 1 loop' : `1 ... ${n} workers vs ${n} loops`,
        `engine ${fmt(median(rates(engine)), 0)} tasks/s` + cpuText(engine, 'task'),
        `raw PGMQ ${fmt(median(rates(raw)), 0)} msgs/s` + cpuText(raw, 'msg'),
        `${fmt(r1.ratio)}x (${fmt(r1.low)}-${fmt(r1.high)})` +
        (ce === null || cr === null ? '' : `; CPU ${fmt(cr / ce)}x`),
        `>= ${fmt(target)}x`,
        verdict(r1.ratio >= target),
      ]);
    }
    if (t.baseline) {
      const b = t.baseline;
      for (const n of CONSUMERS) {
        const base = b.engine.get(n)!, raw = t.raw.get(n)!, engine = t.engine.get(n)!;
        const vsRaw = roundRatio(rates(base), rates(raw));
        const vsBase = roundRatio(rates(engine), rates(base));
        rows.push([
          `1 ... ${n} worker(s) on the SQL core ${b.label}`,
          `engine ${fmt(median(rates(base)), 0)} tasks/s` + cpuText(base, 'task'),
          `raw PGMQ ${fmt(median(rates(raw)), 0)} msgs/s`,
          `${fmt(vsRaw.ratio)}x (${fmt(vsRaw.low)}-${fmt(vsRaw.high)}); this core / it ` +
          `${fmt(vsBase.ratio)}x (${fmt(vsBase.low)}-${fmt(vsBase.high)})`,
          '(before/after)',
          '-',
        ]);
      }
    }
    if (t.profile) notes.push(t.profile);
    return { rows, notes };
  },
};
