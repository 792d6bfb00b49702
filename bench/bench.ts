/**
 * `deno task bench [--quick] [--explain] [--profile] [--rounds=N] [--only=1,3] [--batch=N]
 * [--concurrency=N] [--connections=N] [--baseline=<git revision>]`: Switchyard's performance
 * figures, with their targets. It prints its environment first (PostgreSQL version, PGMQ
 * kind: the extension or the compatible layer), so figures can be compared across machines.
 *
 * Every figure is a ratio of two measurements taken side by side in this run (the machines are
 * shared and noisy): each round measures both sides back to back, the order rotates every
 * round, and the table shows the median of the per-round ratios with their range.
 *
 * 1. queue throughput: 1-step tasks through a shared queue with a 10-flow registry vs a raw
 *    PGMQ `read` + `archive` loop on the same database with the same batch size; one worker
 *    vs one loop, and four of each. Each worker and each loop gets its own pool of
 *    `--connections` (a loop can use one at a time). Also CPU per task (this process plus the
 *    cluster's server processes) when the bench owns the cluster;
 * 2. end to end: runs/s of a 3-step flow over two shared queues with 2 workers;
 * 3. claim scaling: `start_tasks` per batch of 10 with 1, 100 and 1000 deployed flows
 *    (10 steps each, all on the queue: 10 to 10,000 registered pairs);
 * 4. start-up: `startWorker()` until it polls, with 1 and 50 deployments (verify, and the
 *    first start that compiles);
 * 5. memory: peak RSS (VmHWM) of a worker process with a 50-flow registry while it
 *    processes, next to one with a 1-flow registry;
 * 6. connections: 1-step tasks through one worker with every default setting (maxConcurrent
 *    10, batch 10), with its default pool of `maxConnections` 4 next to 13 (the old pool of
 *    `min(maxConcurrent + 3, 20)`); the heartbeat has its own connection on both sides;
 * 7. history: the 3-step chain on one shared queue in an aged database that keeps everything
 *    it did (growing by the figure's own rounds) vs a fresh copy of a migrated template made
 *    before each round, and raw PGMQ on a long-lived queue; the worst 5-round median of
 *    aged/fresh (bench/_history.ts; `--history-rounds`, designed for 100 rounds of 1,000 runs);
 * 8. backlog: claim + completion per batch of 10 with 10 vs 10,000 open runs waiting, and a
 *    final failure (bench/_backlog.ts);
 * 9. vs pgflow: pgflow's SQL core from its npm package, driven as its worker drives it,
 *    against the engine on the same server (bench/_pgflow.ts);
 * 10. map fan-out: tasks/s of one run of a map step over N elements (a root map over the flow
 *    input, and a map over a step's output) vs N runs of a 1-step flow, one worker on one
 *    shared queue (issue 12: target >= 0.8x);
 * 11. flow control in the claim (issue 23): `start_tasks` per batch of 10 tasks of a step with
 *    `concurrency` over 1,000 keys and a shared `rateLimit` (generous, so nothing is held) vs
 *    the same step without flow control; the time per claim, side by side;
 * 12. a rate limit held by real workers (issue 23): 2 workers on one shared queue, every task
 *    of a step naming a limit of 20 per second (burst 20, the default, then 5); the tokens
 *    used (tasks started, from `step_tasks.started_at`) against the clock: the rate observed
 *    after the burst, side by side with the limit (target 0.8x to 1.05x with burst 20), and
 *    the most starts ever ahead of the bucket (`burst + rate x elapsed`; target 0).
 * 13. waiting runs (issue 22): an `expire_waits` tick, a `keep_alive` tick (time and shared
 *    buffers) and a claim of a batch of another flow's tasks, with 20,000 runs waiting on a
 *    signal (half with a timeout a day away) vs none, in two databases side by side
 *    (bench/_waiting.ts);
 * 14. metrics (issue 26): `switchyard.metrics(60)` and the charts' `dashboard_metrics_history(60)`
 *    with 1,000,000 completed tasks of history (100,000 with `--quick`) vs a fresh database, both
 *    with the same recent work (bench/_metrics.ts; target: at most 50 ms per call);
 * 15. events as a choice (issue 27): runs/s of the 3-step chain with `events: false` (no
 *    run_events rows) vs the same flow with events, one worker on one queue;
 * 16. scale on one database (issue 27): 1-step tasks through 1, 2, 4, 8 and 16 workers on one
 *    queue and on 4 queues: tasks/s and CPU per task, where the database saturates.
 * 17. the test engine (issue 39): in this process on PGlite, an engine's start after the first
 *    (on the database the previous one reset to the snapshot of the migrated SQL core) and from the
 *    snapshot itself, next to the first start (which builds it), and one test of a 3-step flow
 *    with a week-long wait and a retry with backoff, end to end (bench/_harness.ts; target: well
 *    under a second per test after the first).
 *
 * `--baseline=<rev>` also runs figures 1, 2, 7 and 8 on the migrations of that git revision, in
 * databases of their own on the same server: before and after, side by side (figures 1 and 2:
 * the baseline's engine sides run in the same rounds as this core's and the raw loops, with
 * this checkout's worker).
 *
 * `--quick` runs fewer and smaller rounds. `--explain` prints EXPLAIN ANALYZE of every
 * statement inside one `start_tasks` call (1000 flows). `--profile` (with figure 1) runs one
 * more engine pass and one more raw pass with `pg_stat_statements` and prints where the
 * database time of each went, statement by statement (functions' inner statements
 * included). Runs against a throwaway cluster (scripts/_cluster.ts) unless `DATABASE_URL` is
 * set, in which case fresh databases are created on that server; they are dropped afterwards
 * either way. BENCHMARKS.md has the results and where the time goes.
 *
 * @module
 */
import postgres from 'postgres';
import { toPlacement } from '../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow, routeFlow } from '../lib/mod.ts';
import type { DeployedFlow } from '../lib/dsl/deployed_flow.ts';
import { startWorker, startWorkerImpl, type Worker } from '../lib/worker/worker.ts';
import { pgArray, WorkerQueries } from '../lib/sql/worker_queries.ts';
import { type BenchDatabase, openBenchDatabase } from './_db.ts';
import { fanOutFlows, routedRegistry, threeStepFlow } from './_flows.ts';
import { fmt, median, partMedians, roundRatio, since, table } from './_stats.ts';
import {
  benchWorkerOptions,
  compile,
  log,
  type Sample,
  silent,
  timed,
  waitUntil,
} from './_common.ts';
import { history, noiseCheck, worstWindowMedian } from './_history.ts';
import { backlog } from './_backlog.ts';
import { vsPgflow } from './_pgflow.ts';
import { waitingRuns } from './_waiting.ts';
import { metricsFigure } from './_metrics.ts';
import { harnessFigure } from './_harness.ts';

/** Every figure, by number. */
const FIGURES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];

interface Options {
  quick: boolean;
  rounds: number;
  only: Set<number>;
  batch: number;
  concurrency: number;
  connections: number;
  explain: boolean;
  profile: boolean;
  /** A git revision whose migrations figures 7 and 8 also run on (before/after). */
  baseline?: string;
  /** The `@pgflow/core` version figure 8 installs. */
  pgflowVersion: string;
  /** Figure 7's rounds (designed for 100) and runs per round (1,000). */
  historyRounds: number;
  historyRuns: number;
}

function parseOptions(args: string[]): Options {
  const quick = args.includes('--quick');
  const value = (name: string) =>
    args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const int = (name: string, fallback: number) => {
    const v = value(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) {
      throw new Error(`--${name}=${v} is invalid: use an integer of at least 1`);
    }
    return n;
  };
  for (const a of args) {
    if (
      !/^--(quick$|explain$|profile$|rounds=|only=|batch=|concurrency=|connections=|baseline=|pgflow-version=|history-rounds=|history-runs=)/
        .test(a)
    ) {
      throw new Error(
        `unknown argument "${a}": use --quick, --explain, --profile, --rounds=N, ` +
          `--only=${FIGURES.join(',')}, --batch=N, --concurrency=N, --connections=N, ` +
          '--baseline=<git revision>, --pgflow-version=X.Y.Z, --history-rounds=N, --history-runs=N',
      );
    }
  }
  const only = new Set(
    (value('only') ?? FIGURES.join(',')).split(',').map((s) => {
      const n = Number(s);
      if (!FIGURES.includes(n)) {
        throw new Error(
          `--only=${value('only')} is invalid: list figures from 1 to ${FIGURES.length}`,
        );
      }
      return n;
    }),
  );
  return {
    quick,
    rounds: int('rounds', quick ? 4 : 10),
    only,
    batch: int('batch', 10),
    concurrency: int('concurrency', 2 * int('batch', 10)),
    connections: int('connections', 4),
    explain: args.includes('--explain'),
    profile: args.includes('--profile'),
    baseline: value('baseline'),
    pgflowVersion: value('pgflow-version') ?? '0.8.1',
    historyRounds: int('history-rounds', quick ? 10 : 100),
    historyRuns: int('history-runs', quick ? 300 : 1000),
  };
}

// ---------------------------------------------------------------------------------------------
// 1 and 2: throughput

/** Samples per round for each side, keyed by consumer count. */
interface ThroughputResult {
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
const CONSUMERS = [1, 4] as const;

async function throughput(
  db: BenchDatabase,
  o: Options,
  baseline?: { workdir: string; label: string },
): Promise<ThroughputResult> {
  const { sql } = db;
  const messages = o.quick ? 1500 : 3000;
  const e2eRuns = o.quick ? 300 : 600;
  const registry = routedRegistry('tp', 10, 1, 'bench_tp');
  const e2eRegistry = [threeStepFlow('e2e', 'bench_e2e_a', 'bench_e2e_b')];
  // The engine's databases: this checkout's SQL core, and with --baseline the same flows on a
  // database of the same server migrated from that revision's (the worker code is this one's).
  const targets: { label: 'engine' | 'base'; url: string; sql: postgres.Sql }[] = [
    { label: 'engine', url: db.url, sql },
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
      const engine = await profiled(db, messages, (reset) => runEngine(1, reset));
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

// ---------------------------------------------------------------------------------------------
// 3: claim scaling

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
        // docs/ARCHITECTURE.md §5.14) on the keyed one; timed apart from the claim.
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

// ---------------------------------------------------------------------------------------------
// 4: start-up

async function startup(
  db: BenchDatabase,
  o: Options,
): Promise<{ one: number[]; fifty: number[]; firstOne: number; firstFifty: number }> {
  const one = routedRegistry('sua', 1, 3, 'bench_su1');
  const fifty = routedRegistry('sub', 50, 3, 'bench_su50');
  const startOnce = async (registry: DeployedFlow[], queueName: string) => {
    const t0 = performance.now();
    const worker = await startWorker(registry, {
      queueName,
      connectionString: db.url,
      logger: silent,
      maxPollSeconds: 1,
    });
    const ms = since(t0);
    await worker.stop();
    return ms;
  };
  // The first start compiles; later starts verify (the steady state of a redeploy or wake-up).
  const firstOne = await startOnce(one, 'bench_su1');
  const firstFifty = await startOnce(fifty, 'bench_su50');
  const rounds = o.quick ? 5 : 15;
  const out = { one: [] as number[], fifty: [] as number[], firstOne, firstFifty };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      out.one.push(await startOnce(one, 'bench_su1'));
      out.fifty.push(await startOnce(fifty, 'bench_su50'));
    } else {
      out.fifty.push(await startOnce(fifty, 'bench_su50'));
      out.one.push(await startOnce(one, 'bench_su1'));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// 5: memory

async function peakRss(
  db: BenchDatabase,
  flows: number,
  prefix: string,
  runs: number,
): Promise<{ peakMb: number }> {
  const queue = `bench_rss_${prefix}`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ['run', '-A', new URL('./_rss_worker.ts', import.meta.url).pathname],
    env: {
      DATABASE_URL: db.url,
      BENCH_FLOWS: String(flows),
      BENCH_PREFIX: prefix,
      BENCH_QUEUE: queue,
    },
    stdin: 'piped',
    stdout: 'piped',
    stderr: 'inherit',
  }).spawn();
  const writer = child.stdin.getWriter();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    while (!seen.includes('ready')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the ${flows}-flow worker process exited before it was ready`);
      seen += value;
    }
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
    await db.sql`select count(switchyard.start_flow(${prefix} || (i % ${flows}::int),
                  jsonb_build_object('i', i))) from generate_series(1, ${runs}::int) i`;
    await waitUntil(`the ${flows}-flow worker to drain ${queue}`, async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.step_tasks
         where queue_name = ${queue} and status <> 'completed'`;
      return n === 0;
    });
    const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
    const kb = Number(status.match(/^VmHWM:\s+(\d+) kB/m)?.[1]);
    if (!Number.isFinite(kb)) throw new Error(`no VmHWM in /proc/${child.pid}/status`);
    return { peakMb: kb / 1024 };
  } finally {
    await writer.close().catch(() => {});
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await child.status;
    clearTimeout(timer);
  }
}

async function memory(db: BenchDatabase, o: Options) {
  const runs = o.quick ? 500 : 2000; // 3 tasks per run
  const one: number[] = [];
  const fifty: number[] = [];
  const rounds = o.quick ? 1 : 3;
  for (let r = 0; r < rounds; r++) {
    // Fresh prefixes per round keep the queues apart (each process compiles its own flows).
    one.push((await peakRss(db, 1, `rssa${r}x`, runs)).peakMb);
    fifty.push((await peakRss(db, 50, `rssb${r}x`, runs)).peakMb);
  }
  return { one, fifty, tasks: runs * 3 };
}

// ---------------------------------------------------------------------------------------------
// 6: the worker's connections

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

// ---------------------------------------------------------------------------------------------

/** PostgreSQL's version, the PGMQ kind (extension or compatible layer) and the CPU count. */
async function environment(db: BenchDatabase): Promise<string> {
  const [{ version, pgmq }] = await db.sql<{ version: string; pgmq: string | null }[]>`
    select current_setting('server_version') as version,
           (select extversion from pg_extension where extname = 'pgmq') as pgmq`;
  const kind = pgmq === null
    ? 'PGMQ-compatible layer (pgmq_compat/pgmq.sql)'
    : `PGMQ extension ${pgmq}`;
  return `${db.where}: PostgreSQL ${version}, ${kind}; Deno ${Deno.version.deno}; ` +
    `${navigator.hardwareConcurrency} CPU(s)`;
}

/**
 * The `supabase/` directory of a git revision in a temp directory, for `migrate()`'s
 * `workdir`: figures 7 and 8 then also run on that revision's SQL core.
 */
async function checkoutBaseline(
  rev: string,
): Promise<{ workdir: string; label: string; remove: () => Promise<void> }> {
  const root = new URL('../', import.meta.url).pathname;
  const git = async (args: string[]) => {
    const out = await new Deno.Command('git', { args, cwd: root, stdout: 'piped', stderr: 'piped' })
      .output();
    if (!out.success) {
      throw new Error(
        `--baseline=${rev}: git ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`,
      );
    }
    return out.stdout;
  };
  const short = new TextDecoder().decode(await git(['rev-parse', '--short', rev])).trim();
  const workdir = await Deno.makeTempDir({ prefix: 'switchyard-baseline-' });
  const archive = await Deno.makeTempFile({ suffix: '.tar' });
  await Deno.writeFile(archive, await git(['archive', '--format=tar', rev, 'supabase']));
  const out = await new Deno.Command('tar', { args: ['-xf', archive, '-C', workdir] }).output();
  await Deno.remove(archive);
  if (!out.success) throw new Error(`--baseline=${rev}: could not unpack ${rev}:supabase`);
  log(`baseline: the SQL core of ${short} in ${workdir}`);
  return {
    workdir,
    label: `before, ${short}`,
    remove: () => Deno.remove(workdir, { recursive: true }).catch(() => {}),
  };
}

// ---------------------------------------------------------------------------------------------
// 10: map fan-out

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

// ---------------------------------------------------------------------------------------------
// 15: events: false

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

// ---------------------------------------------------------------------------------------------
// 16: scale on one database

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

async function main() {
  if (Deno.args.includes('--help') || Deno.args.includes('-h')) {
    console.log(
      'usage: deno task bench [--quick] [--explain] [--profile] [--rounds=N] [--only=1,...,17]\n' +
        '                       [--batch=N] [--concurrency=N] [--connections=N]\n' +
        '                       [--baseline=<git revision>] [--pgflow-version=X.Y.Z]\n\n' +
        'Side-by-side ratios: queue throughput vs raw PGMQ (1), end to end (2), claim cost vs\n' +
        'registry size (3), start-up (4), memory (5), worker connections (6), history:\n' +
        'aged vs a fresh copy, 100 rounds (7), backlog: 10 vs 10,000 open runs (8), vs pgflow\n' +
        '(9), ..., the test engine in-process (17). --baseline also runs 1, 2, 7 and 8 on that\n' +
        "revision's SQL core. A throwaway cluster unless\n" +
        'DATABASE_URL is set (fresh databases are created there and dropped). Results: BENCHMARKS.md.',
    );
    return;
  }
  const o = parseOptions(Deno.args);
  const db = await openBenchDatabase(log, { profile: o.profile });
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    await db.close();
    for (const c of cleanups) await c();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    Deno.addSignalListener(signal, async () => {
      log(`${signal}: cleaning up`);
      await cleanup();
      Deno.exit(130);
    });
  }
  const rows: string[][] = [];
  const notes: string[] = [];
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  try {
    const env = await environment(db);
    log(env);
    notes.push(
      `environment: ${env}; batch ${o.batch}, worker maxConcurrent ${o.concurrency}, ` +
        `${o.connections} connections per consumer, ${o.rounds} rounds` +
        (o.quick ? ' (--quick)' : ''),
    );
    const rates = (xs: Sample[]) => xs.map((x) => x.rate);
    const cpu = (xs: Sample[]) =>
      xs.every((x) => x.cpuMs !== null) ? median(xs.map((x) => x.cpuMs!)) : null;
    const server = (xs: Sample[]) =>
      xs.every((x) => x.serverCpuMs !== null) ? median(xs.map((x) => x.serverCpuMs!)) : null;
    const cpuText = (xs: Sample[], unit: string) =>
      cpu(xs) === null
        ? ''
        : `, ${fmt(cpu(xs)!, 3)} CPU ms/${unit} (${fmt(server(xs)!, 3)} in PostgreSQL)`;
    const baseline = o.baseline && [1, 2, 7, 8].some((f) => o.only.has(f))
      ? await checkoutBaseline(o.baseline)
      : undefined;
    if (baseline) cleanups.push(baseline.remove);

    if (o.only.has(1) || o.only.has(2)) {
      const t = await throughput(db, o, baseline);
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
      const raw1 = t.raw.get(1)!;
      const r2 = roundRatio(t.e2e.map((x) => x.rate * 3), rates(raw1));
      rows.push([
        '2 end to end (3 steps, 2 queues, 2 workers)',
        `${fmt(median(rates(t.e2e)), 0)} runs/s = ${fmt(median(rates(t.e2e)) * 3, 0)} tasks/s` +
        cpuText(t.e2e, 'run'),
        `raw PGMQ (1 loop) ${fmt(median(rates(raw1)), 0)} msgs/s`,
        `${fmt(r2.ratio)}x tasks/msgs (${fmt(r2.low)}-${fmt(r2.high)})`,
        '>= 0.25x',
        verdict(r2.ratio >= 0.25),
      ]);
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
        const vs = roundRatio(rates(t.e2e), rates(b.e2e));
        rows.push([
          `2 ... on the SQL core ${b.label}`,
          `${fmt(median(rates(b.e2e)), 0)} runs/s` + cpuText(b.e2e, 'run'),
          `this core ${fmt(median(rates(t.e2e)), 0)} runs/s`,
          `this core / it ${fmt(vs.ratio)}x (${fmt(vs.low)}-${fmt(vs.high)})`,
          '(before/after)',
          '-',
        ]);
      }
      if (t.profile) notes.push(t.profile);
    }
    if (o.only.has(3)) {
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
    }
    if (o.only.has(4)) {
      const s = await startup(db, o);
      const r = roundRatio(s.fifty, s.one);
      rows.push([
        '4 start-up (start -> first poll), verify',
        `50 deployments ${fmt(median(s.fifty), 1)} ms`,
        `1 deployment ${fmt(median(s.one), 1)} ms`,
        `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})`,
        '<= 3x',
        verdict(r.ratio <= 3),
      ]);
      rows.push([
        '4 start-up, first start (compiles)',
        `50 deployments ${fmt(s.firstFifty, 1)} ms`,
        `1 deployment ${fmt(s.firstOne, 1)} ms`,
        `${fmt(s.firstFifty / s.firstOne)}x (one sample)`,
        '(none)',
        '-',
      ]);
    }
    if (o.only.has(5)) {
      const m = await memory(db, o);
      rows.push([
        `5 peak RSS while processing ${m.tasks} tasks`,
        `50-flow registry ${fmt(median(m.fifty), 1)} MB`,
        `1-flow registry ${fmt(median(m.one), 1)} MB`,
        `${fmt(median(m.fifty) / median(m.one))}x`,
        '(none)',
        '-',
      ]);
    }
    if (o.only.has(6)) {
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
    }
    if (o.only.has(7)) {
      const h = await history(db, {
        runs: o.historyRuns,
        rounds: o.historyRounds,
        batch: o.batch,
        concurrency: o.concurrency,
        connections: o.connections,
        profile: o.profile,
        baseline: baseline && { workdir: baseline.workdir, label: baseline.label },
      });
      const raw = h.sides.find((s) => s.kind === 'raw')!;
      for (const isBaseline of [false, true]) {
        const side = (kind: string) =>
          h.sides.find((s) => s.kind === kind && s.baseline === isBaseline);
        const fresh = side('fresh');
        if (!fresh) continue;
        const aged = side('aged')!;
        const tag = isBaseline ? ` [${baseline!.label}]` : '';
        const perRound = aged.samples.map((a, r) => a.rate / fresh.samples[r].rate);
        const worst = worstWindowMedian(perRound);
        const last = aged.history[aged.history.length - 1] + o.historyRuns;
        rows.push([
          `7 history${tag}: 3-step chain, 1 queue, 2 workers; aged (0 -> ` +
          `${last.toLocaleString('en')} runs, by its own rounds) vs a fresh copy each round`,
          `aged ${fmt(median(rates(aged.samples)), 0)} tasks/s` + cpuText(aged.samples, 'task'),
          `fresh ${fmt(median(rates(fresh.samples)), 0)} tasks/s` +
          cpuText(fresh.samples, 'task'),
          `worst 5-round median ${fmt(worst)}x (median ${fmt(median(perRound))}x, lowest ` +
          `round ${fmt(Math.min(...perRound))}x)`,
          '>= 0.9x',
          verdict(worst >= 0.9),
        ]);
        // Is the worst window a trend or the noise? The same ratios in random orders, the
        // run's slope against theirs, and the medians of the run's quarters in order.
        const chance = noiseCheck(perRound);
        const quarters = partMedians(perRound);
        rows.push([
          `7 history${tag}: trend or noise? the per-round ratios against the same ratios in ` +
          `2,000 random orders (no link to the history)`,
          `quarters of the run ${quarters.map((q) => `${fmt(q)}x`).join(', ')}; slope ` +
          `${fmt(chance.slopePer * 10, 3)} per 10 rounds`,
          `random orders: worst 5-round median ${fmt(chance.worstMedian)}x ` +
          `(5th-95th percentile ${fmt(chance.worstP5)}-${fmt(chance.worstP95)})`,
          `${fmt(chance.steeper * 100, 0)} % of random orders slope down as steeply`,
          '>= 5 %',
          verdict(chance.steeper >= 0.05),
        ]);
        const vsRaw = roundRatio(rates(fresh.samples), rates(raw.samples));
        const agedRaw = roundRatio(rates(aged.samples), rates(raw.samples));
        rows.push([
          `7 history${tag}: the engine vs raw PGMQ (2 loops, one long-lived queue)`,
          `fresh ${fmt(vsRaw.ratio)}x, aged ${fmt(agedRaw.ratio)}x of raw`,
          `raw ${fmt(median(rates(raw.samples)), 0)} msgs/s`,
          `aged ${fmt(agedRaw.ratio)}x (${fmt(agedRaw.low)}-${fmt(agedRaw.high)})`,
          '(none)',
          '-',
        ]);
        notes.push(
          `history${tag}, round by round (tasks/s or msgs/s; aged/fresh; CPU ms/task):\n\n` +
            table(
              ['round', 'raw', 'fresh', 'aged (runs before the round)', 'aged/fresh'],
              fresh.samples.map((f, r) => {
                const cell = (x: Sample) =>
                  `${fmt(x.rate, 0)}` + (x.cpuMs === null ? '' : `; ${fmt(x.cpuMs, 3)}`);
                return [
                  String(r + 1),
                  cell(raw.samples[r]),
                  cell(f),
                  `${cell(aged.samples[r])} (${aged.history[r].toLocaleString('en')})`,
                  fmt(perRound[r]),
                ];
              }),
            ),
        );
      }
      notes.push(...h.statements);
    }
    if (o.only.has(8)) {
      const results = await backlog(db, {
        batches: o.quick ? 60 : 200,
        batch: o.batch,
        large: 10_000,
        history: o.quick ? 20_000 : 50_000,
        baseline: baseline && { workdir: baseline.workdir, label: baseline.label },
      });
      for (const b of results) {
        const tag = b.name === 'current' ? '' : ` [${b.name}]`;
        const both = (x: { claim: number[]; complete: number[] }) =>
          x.claim.map((c, i) => c + x.complete[i]);
        const r = roundRatio(both(b.large), both(b.small));
        rows.push([
          `8 backlog${tag}: claim + completion of ${o.batch} + ${o.batch - 1} tasks (successor ` +
          'starts, run completions), 10,000 open runs waiting',
          `${fmt(median(both(b.large)), 3)} ms (claim ${fmt(median(b.large.claim), 3)}, ` +
          `completion ${fmt(median(b.large.complete), 3)})`,
          `${o.batch} open runs ${fmt(median(both(b.small)), 3)} ms (claim ` +
          `${fmt(median(b.small.claim), 3)}, completion ${fmt(median(b.small.complete), 3)})`,
          `${fmt(r.ratio)}x`,
          '<= 1.2x',
          verdict(r.ratio <= 1.2),
        ]);
        const f = roundRatio(b.large.fail, b.small.fail);
        rows.push([
          `8 backlog${tag}: a final failure (fail_task), 10,000 open runs waiting`,
          `${fmt(median(b.large.fail), 3)} ms`,
          `${o.batch} open runs ${fmt(median(b.small.fail), 3)} ms`,
          `${fmt(f.ratio)}x`,
          '(none)',
          '-',
        ]);
      }
    }
    if (o.only.has(9)) {
      const p = await vsPgflow(db, {
        runs: o.quick ? 300 : 1000,
        rounds: o.rounds,
        batch: o.batch,
        concurrency: o.concurrency,
        connections: o.connections,
        version: o.pgflowVersion,
      });
      if ('skipped' in p) {
        rows.push(['9 vs pgflow', '(skipped)', p.skipped, '-', '(none)', '-']);
      } else {
        const r = roundRatio(rates(p.engine), rates(p.pgflow));
        const ce = cpu(p.engine), cp = cpu(p.pgflow);
        rows.push([
          `9 vs pgflow ${p.version}: 3-step chain, 1 queue, 1 consumer each`,
          `engine ${fmt(median(rates(p.engine)), 0)} tasks/s` + cpuText(p.engine, 'task'),
          `pgflow ${fmt(median(rates(p.pgflow)), 0)} tasks/s` + cpuText(p.pgflow, 'task'),
          `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})` +
          (ce === null || cp === null ? '' : `; CPU ${fmt(cp / ce)}x`),
          '(none)',
          '-',
        ]);
      }
    }
    if (o.only.has(10)) {
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
    }
    if (o.only.has(11)) {
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
    }
    if (o.only.has(12)) {
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
    }
    if (o.only.has(13)) {
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
          ? `, ${fmt(median(w.waiting[buffers]), 0)} vs ${fmt(median(w.none[buffers]), 0)} buffers`
          : '';
        rows.push([
          `13 ${what}, ${count} runs waiting vs none`,
          `${fmt(median(w.waiting[key]), 3)} ms` +
          (buffers ? ` (${fmt(median(w.waiting[buffers]), 0)} shared buffers)` : ''),
          `none waiting ${fmt(median(w.none[key]), 3)} ms` +
          (buffers ? ` (${fmt(median(w.none[buffers]), 0)} shared buffers)` : ''),
          `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})${b}`,
          // An index probe may go one level deeper with 20,000 entries (a few buffers, not
          // one per waiting run: a scan of them would touch the pages noted below).
          buffers ? 'buffers <= none + 3' : '<= 1.2x',
          verdict(
            buffers ? median(w.waiting[buffers]) <= median(w.none[buffers]) + 3 : r.ratio <= 1.2,
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
    }
    if (o.only.has(14)) {
      const f = await metricsFigure(db, {
        historyTasks: o.quick ? 100_000 : 1_000_000,
        recentTasks: 3000,
        rounds: o.rounds,
        calls: 10,
      });
      const history = `${f.historyTasks.toLocaleString('en')} completed tasks`;
      const m = median(f.metrics.history), mf = median(f.metrics.fresh);
      rows.push([
        `14 metrics(60), ${history} (${f.recentTasks} in the window)`,
        `${fmt(m, 2)} ms per call`,
        `fresh database ${fmt(mf, 2)} ms`,
        `${fmt(m / mf)}x`,
        '<= 50 ms',
        verdict(m <= 50),
      ]);
      const c = median(f.charts.history), cf = median(f.charts.fresh);
      rows.push([
        `14 charts: dashboard_metrics_history(60), ${history}`,
        `${fmt(c, 2)} ms per call`,
        `fresh database ${fmt(cf, 2)} ms`,
        `${fmt(c / cf)}x`,
        '(none)',
        '-',
      ]);
    }
    if (o.only.has(15)) {
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
    }
    if (o.only.has(16)) {
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
    }
    if (o.only.has(17)) {
      const h = await harnessFigure(o.rounds);
      const ms = (xs: number[]) =>
        `${fmt(median(xs), 0)} ms (${fmt(Math.min(...xs), 0)}-${fmt(Math.max(...xs), 0)})`;
      rows.push([
        "17 test engine start after the first (the previous one's database, reset)",
        ms(h.startMs),
        `the first start, which builds the snapshot: ${fmt(h.firstStartMs, 0)} ms`,
        `${fmt(median(h.startMs) / h.firstStartMs)}x`,
        '(none)',
        '-',
      ]);
      rows.push([
        '17 ... a start from the snapshot (while another engine is open)',
        ms(h.snapshotStartMs),
        `the first start ${fmt(h.firstStartMs, 0)} ms`,
        `${fmt(median(h.snapshotStartMs) / h.firstStartMs)}x`,
        '(none)',
        '-',
      ]);
      rows.push([
        '17 ... one test: 3 steps, a 6-day wait, a retry (30 s backoff), end to end',
        ms(h.testMs),
        `the flow alone ${ms(h.flowMs)}`,
        `${fmt(median(h.testMs) / 1000)}x a second`,
        '< 1 s per test after the first',
        verdict(median(h.testMs) < 1000),
      ]);
    }
  } finally {
    await cleanup();
  }
  console.log(
    '\n' +
      table(['figure', 'measured', 'side by side', 'ratio (range)', 'target', 'result'], rows),
  );
  for (const n of notes) console.log(`\n${n}`);
}

if (import.meta.main) {
  try {
    await main();
  } catch (e) {
    console.error(`bench failed: ${(e as Error).stack ?? e}`);
    Deno.exit(1);
  }
}
