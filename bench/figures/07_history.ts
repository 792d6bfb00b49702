/**
 * Figure 7, history (issue 27): does a database that keeps everything it ever did run as fast as
 * a fresh one? Every round runs three sides back to back, in an order that rotates:
 *
 * - **raw**: a raw PGMQ loop (`read` + `archive`, two loops) over as many messages as the engine
 *   sides have tasks, on one long-lived queue that is never recreated;
 * - **fresh**: the 3-step chain through two real workers on one shared queue, in a database
 *   copied just before its round (`create database … template …`) from a migrated template;
 * - **aged**: the same workload in one database that keeps every run, task and archived message
 *   it ever processed: it grows only by the figure's own rounds (no bulk insert, no manual
 *   ANALYZE; autovacuum only, as in production).
 *
 * The result is the per-round ratio aged/fresh, its median and its **worst 5-round median**
 * (the lowest median of five consecutive rounds: one slow round is noise, five are not). The
 * figure is designed for 100 rounds of 1,000 runs (100,000 runs of history, `--history-rounds`);
 * fewer rounds show the start of the curve only. With a baseline, fresh and aged also run on that
 * revision's SQL core, interleaved in the same rounds. With `--profile`, `pg_stat_statements`
 * counts the last rounds and the figure prints the mean time per call of each statement, aged
 * next to fresh.
 *
 * @module
 */
import postgres from 'postgres';
import type { DeployedFlow } from '../../lib/dsl/deployed_flow.ts';
import { defineDeployedFlow, Flow, routeFlow } from '../../lib/mod.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { startWorkerImpl, type Worker } from '../../lib/worker/worker.ts';
import type { BenchDatabase, ExtraDatabase } from '../_db.ts';
import { benchWorkerOptions, compile, log, type Sample, timed, waitUntil } from '../_common.ts';
import { fmt, median, seededRandom, slope, table } from '../_stats.ts';
import {
  cpuText,
  type Figure,
  type FigureContext,
  type FigureResult,
  rates,
  type Row,
  verdict,
} from '../_figure.ts';
import { partMedians, roundRatio } from '../_stats.ts';

const FLOW = 'hist';
const QUEUE = 'hist_q';
const RAW_QUEUE = 'hist_raw';

/** The 3-step chain, every step on one shared queue. */
function chain(): DeployedFlow {
  const flow = new Flow<{ i: number }>({ slug: FLOW, maxAttempts: 3 })
    .step({ slug: 'first' }, (input) => ({ n: input.i }))
    .step({ slug: 'second', dependsOn: ['first'] }, (input) => ({ n: input.first.n + 1 }))
    .step({ slug: 'third', dependsOn: ['second'] }, (input) => ({ n: input.second.n * 2 }));
  return defineDeployedFlow(
    routeFlow(flow, { queues: { first: QUEUE, second: QUEUE, third: QUEUE } }),
    { alias: FLOW },
  );
}

/** Settings of the history figure. */
export interface HistoryOptions {
  /** Runs per round (3 tasks each). */
  runs: number;
  rounds: number;
  batch: number;
  concurrency: number;
  connections: number;
  /** Count statements over the last rounds (the cluster preloads pg_stat_statements). */
  profile: boolean;
  /** A project directory with baseline migrations: fresh and aged also run on them. */
  baseline?: { workdir: string; label: string };
}

/** One side of the figure and its per-round samples (tasks or messages per second). */
export interface HistorySide {
  /** `raw`, `fresh` or `aged`, with the baseline's label for baseline sides. */
  name: string;
  kind: 'raw' | 'fresh' | 'aged';
  baseline: boolean;
  samples: Sample[];
  /** Runs the side's database held when each round started (0 for raw and fresh). */
  history: number[];
}

/** What the figure returns: every side, and with `profile` the statement tables. */
export interface HistoryResult {
  sides: HistorySide[];
  statements: string[];
}

/** The lowest median of `window` consecutive values (all of them when there are fewer). */
export function worstWindowMedian(values: readonly number[], window = 5): number {
  if (values.length <= window) return median(values);
  let worst = Infinity;
  for (let i = 0; i + window <= values.length; i++) {
    worst = Math.min(worst, median(values.slice(i, i + window)));
  }
  return worst;
}

/**
 * Is there a trend in `values` (per-round ratios in round order), or only noise? The same values
 * in `orders` random orders (a seeded shuffle, so a rerun of the same values prints the same
 * numbers) give what the noise alone gives: the worst window median a random order reaches (on a
 * noisy machine the lowest of ~100 five-round medians is well below their median even when
 * nothing grows), and how often a random order slopes down more steeply than the run did. A real
 * decline with the history makes the run's slope steeper than nearly every random order's.
 */
export function noiseCheck(
  values: readonly number[],
  orders = 2000,
  window = 5,
): { worstP5: number; worstMedian: number; worstP95: number; slopePer: number; steeper: number } {
  const random = seededRandom(0x2710);
  const observed = slope(values);
  const worsts: number[] = [];
  let steeper = 0;
  for (let n = 0; n < orders; n++) {
    const v = [...values];
    for (let i = v.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [v[i], v[j]] = [v[j], v[i]];
    }
    worsts.push(worstWindowMedian(v, window));
    if (slope(v) <= observed) steeper++;
  }
  worsts.sort((a, b) => a - b);
  const at = (q: number) => worsts[Math.min(worsts.length - 1, Math.floor(q * worsts.length))];
  return {
    worstP5: at(0.05),
    worstMedian: at(0.5),
    worstP95: at(0.95),
    slopePer: observed,
    steeper: steeper / orders,
  };
}

/** Runs each engine side completes before its clock starts, on its new sessions. */
const WARM_RUNS = 20;

/** How many of the last rounds `pg_stat_statements` counts. */
const PROFILED_ROUNDS = 3;

/**
 * Inserts `count` completed runs of `flow` (its steps and their queues), finished `ago` before
 * now, with their step states, tasks (message ids from the queues' own sequences) and
 * archived messages: history as the engine leaves it, written in bulk.
 */
export async function preloadCompleted(
  sql: postgres.Sql,
  count: number,
  flow: string,
  steps: readonly { step: string; queue: string }[],
  ago = '2 hours',
) {
  for (let done = 0; done < count; done += 50_000) {
    const n = Math.min(50_000, count - done);
    await sql.begin(async (tx) => {
      await tx.unsafe(`
        create temp table pre on commit drop as
          select gen_random_uuid() as run_id, i from generate_series(1, ${n}) i;
        insert into switchyard.runs (run_id, flow_slug, started_as, status, input, output,
                                     remaining_steps, started_at, completed_at)
          select run_id, '${flow}', '${flow}', 'completed', jsonb_build_object('i', i),
                 '{"done": true}', 0, now() - interval '${ago}', now() - interval '${ago}'
            from pre;
        create temp table pre_tasks on commit drop as
          select p.run_id, s.step, s.queue,
                 nextval(pg_get_serial_sequence('pgmq.q_' || s.queue, 'msg_id')) as msg_id
            from pre p
           cross join (values ${steps.map((s) => `('${s.step}', '${s.queue}')`).join(', ')})
                   as s(step, queue);
        insert into switchyard.step_states (run_id, flow_slug, step_slug, status, remaining_deps,
                                            output, started_at, completed_at)
          select run_id, '${flow}', step, 'completed', 0, '{"n": 1}', now() - interval '${ago}',
                 now() - interval '${ago}'
            from pre_tasks;
        insert into switchyard.step_tasks (run_id, step_slug, flow_slug, queue_name, message_id,
                                           status, attempts_count, max_attempts, base_delay,
                                           max_delay, timeout, output, queued_at, started_at,
                                           completed_at)
          select run_id, step, '${flow}', queue, msg_id, 'completed', 1, 3, 1, 86400, 60, '{"n": 1}',
                 now() - interval '${ago}', now() - interval '${ago}', now() - interval '${ago}'
            from pre_tasks;
        ${
        [...new Set(steps.map((s) => s.queue))].map((q) => `
        insert into pgmq.a_${q} (msg_id, read_ct, enqueued_at, archived_at, vt, message)
          select msg_id, 1, now() - interval '${ago}', now() - interval '${ago}',
                 now() - interval '${ago}',
                 jsonb_build_object('run_id', run_id, 'flow_slug', '${flow}', 'step_slug', step)
            from pre_tasks where queue = '${q}';`).join('')
      }`);
    });
  }
}

interface SideState extends HistorySide {
  /** The side's database: the aged one, the raw one, or the template of the fresh copies. */
  db: ExtraDatabase;
  pools: postgres.Sql[];
  completed: number;
  /** The fresh copies kept for the statement counts. */
  copies: ExtraDatabase[];
}

/**
 * The worker's read on a baseline core from before issue 27 reads with the claim window alone,
 * as the worker of that core did (the claim then writes every message a second time).
 */
async function readAsBefore(sql: postgres.Sql) {
  const [{ present }] = await sql<{ present: boolean }[]>`
    select to_regprocedure('switchyard.read_visibility_seconds(text, int)') is not null as present`;
  if (present) return;
  await sql.unsafe(`create function switchyard.read_visibility_seconds(queue_name text,
    claim_window int) returns int language sql immutable as 'select claim_window'`);
}

/** Runs figure 7 and returns every side's samples. */
export async function history(bench: BenchDatabase, o: HistoryOptions): Promise<HistoryResult> {
  const registry: DeployedFlow[] = [chain()];
  const variants = [
    { baseline: false, label: '', workdir: undefined as string | undefined },
    ...(o.baseline
      ? [{ baseline: true, label: o.baseline.label, workdir: o.baseline.workdir }]
      : []),
  ];
  const sides: SideState[] = [];
  const newPools = (url: string) =>
    Array.from(
      { length: 2 },
      () => postgres(url, { max: o.connections, prepare: false, onnotice: () => {} }),
    );
  const base = (kind: SideState['kind'], v: typeof variants[number], db: ExtraDatabase) => ({
    name: v.baseline ? `${kind} (${v.label})` : kind,
    kind,
    baseline: v.baseline,
    samples: [],
    history: [],
    db,
    pools: [] as postgres.Sql[],
    completed: 0,
    copies: [] as ExtraDatabase[],
  });
  try {
    const rawDb = await bench.createDatabase('hist_raw');
    await rawDb.sql`select pgmq.create(${RAW_QUEUE}::text)`;
    // The same queue-table settings the kit gives its queues: the ratio is about the work per
    // task, not about a setting a raw PGMQ user can make too.
    await rawDb.sql.unsafe(`alter table pgmq.q_${RAW_QUEUE} set (
      autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
      autovacuum_vacuum_cost_delay = 0)`);
    const raw: SideState = { ...base('raw', variants[0], rawDb), pools: newPools(rawDb.url) };
    sides.push(raw);
    for (const v of variants) {
      const suffix = v.baseline ? '_base' : '';
      const template = await bench.createDatabase(`hist_tpl${suffix}`, { workdir: v.workdir });
      await compile(template.sql, registry);
      if (v.baseline) await readAsBefore(template.sql);
      await template.sql.end({ timeout: 2 });
      sides.push(base('fresh', v, template));
      const aged = await bench.createDatabase(`hist_aged${suffix}`, { workdir: v.workdir });
      await compile(aged.sql, registry);
      if (v.baseline) await readAsBefore(aged.sql);
      sides.push(base('aged', v, aged));
    }
    const workerOptions = benchWorkerOptions(o);
    const runRaw = async (side: SideState) => {
      const { sql } = side.db;
      const messages = o.runs * 3;
      await sql`select count(*) from generate_series(1, ${messages}::int) i,
                  lateral pgmq.send(${RAW_QUEUE}::text, jsonb_build_object(
                    'run_id', gen_random_uuid(), 'flow_slug', ${FLOW}::text, 'i', i))`;
      await Promise.all(side.pools.map((p) => p`select 1`));
      let archived = 0;
      side.samples.push(
        await timed(bench, messages, async () => {
          await Promise.all(side.pools.map(async (pool) => {
            for (;;) {
              const rows = await pool<{ msg_id: string }[]>`
                select msg_id::text as msg_id from pgmq.read(${RAW_QUEUE}::text, 60,
                  ${o.batch}::int)`;
              if (rows.length === 0) return;
              await pool`select pgmq.archive(${RAW_QUEUE}::text, ${
                pgArray(rows.map((r) => r.msg_id))
              }::bigint[])`;
              archived += rows.length;
            }
          }));
        }),
      );
      if (archived !== messages) throw new Error(`raw loops archived ${archived} of ${messages}`);
    };
    const runEngine = async (side: SideState, round: number, keep: boolean) => {
      let db = side.db;
      if (side.kind === 'fresh') {
        // A fresh copy of the migrated template, made before its round, outside the clock.
        db = await bench.cloneDatabase(
          side.db,
          `hist_fresh${side.baseline ? '_base' : ''}_${round < 0 ? 'warm' : round}`,
        );
      }
      // New sessions every round on both sides (a fresh copy cannot have old ones), warmed up
      // by a few runs before the clock: session start-up (catalog caches, function compilation)
      // is then outside the measurement on both sides alike.
      const pools = newPools(db.url);
      const { sql } = db;
      side.history.push(side.completed);
      await sql`select count(switchyard.start_flow(${FLOW}::text, jsonb_build_object('i', i)))
                  from generate_series(1, ${o.runs}::int) i`;
      await sql.unsafe(`update pgmq.q_${QUEUE} set vt = clock_timestamp() + interval '1 hour'`);
      const workers: Worker[] = [];
      try {
        for (const pool of pools) {
          workers.push(
            await startWorkerImpl(registry, { ...workerOptions, queueName: QUEUE, sql: pool }),
          );
        }
        const warm = (await sql<{ id: string }[]>`
          select switchyard.start_flow(${FLOW}::text, jsonb_build_object('i', i))::text as id
            from generate_series(1, ${WARM_RUNS}::int) i`).map((r) => r.id);
        await waitUntil(`the warm-up runs to complete in ${side.name}`, async () => {
          const [{ open }] = await sql<{ open: boolean }[]>`
            select exists (select 1 from switchyard.runs where run_id = any(${
            pgArray(warm)
          }::uuid[]) and status = 'started') as open`;
          return !open;
        });
        side.samples.push(
          await timed(bench, o.runs * 3, async () => {
            await sql.unsafe(`update pgmq.q_${QUEUE} set vt = clock_timestamp()`);
            // Through the partial index of started runs: the check reads no history.
            await waitUntil(`the history runs to complete in ${side.name}`, async () => {
              const [{ open }] = await sql<{ open: boolean }[]>`
                select exists (select 1 from switchyard.runs
                                where flow_slug = ${FLOW} and status = 'started') as open`;
              return !open;
            });
          }),
        );
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
        await Promise.all(pools.map((p) => p.end({ timeout: 2 })));
        if (side.kind === 'fresh') {
          if (keep) side.copies.push(db);
          else await bench.dropDatabase(db);
        }
      }
      if (side.kind === 'aged') side.completed += o.runs + WARM_RUNS;
    };
    const profileFrom = o.profile ? Math.max(0, o.rounds - PROFILED_ROUNDS) : Infinity;
    const runSide = (side: SideState, round: number) =>
      side.kind === 'raw' ? runRaw(side) : runEngine(side, round, round >= profileFrom);
    log('history: warm-up');
    for (const side of sides) {
      await runSide(side, -1);
      side.samples.length = 0;
      side.history.length = 0;
    }
    for (let r = 0; r < o.rounds; r++) {
      if (r === profileFrom) await bench.sql`select pg_stat_statements_reset()`;
      for (let k = 0; k < sides.length; k++) await runSide(sides[(r + k) % sides.length], r);
      log(
        `history round ${r + 1}/${o.rounds}: ` +
          sides.map((s) =>
            `${s.name} ${fmt(s.samples[r].rate, 0)}/s` +
            (s.kind === 'aged' ? ` (${s.history[r].toLocaleString('en')} runs)` : '')
          ).join(', '),
      );
    }
    // The queue table of each long-lived queue after the rounds: what its churn left behind.
    const queueTables: string[][] = [];
    for (const side of sides.filter((x) => x.kind !== 'fresh')) {
      const table = side.kind === 'raw' ? `q_${RAW_QUEUE}` : `q_${QUEUE}`;
      const sql = postgres(side.db.url, { max: 1, prepare: false, onnotice: () => {} });
      try {
        await sql`select pg_stat_force_next_flush()`.catch(() => {});
        const [t] = await sql<
          { ins: string; upd: string; del: string; dead: string; vacuums: number; mb: number }[]
        >`select n_tup_ins::text as ins, n_tup_upd::text as upd, n_tup_del::text as del,
                 n_dead_tup::text as dead, autovacuum_count::int as vacuums,
                 pg_total_relation_size(relid) / 1048576.0 as mb
            from pg_stat_user_tables where schemaname = 'pgmq' and relname = ${table}`;
        queueTables.push([
          side.name,
          `pgmq.${table}`,
          t.ins,
          t.upd,
          fmt(Number(t.upd) / Math.max(1, Number(t.ins)), 2),
          t.del,
          t.dead,
          String(t.vacuums),
          fmt(t.mb, 1),
        ]);
      } finally {
        await sql.end({ timeout: 2 });
      }
    }
    const statements: string[] = [
      `history: the queue tables after ${o.rounds} rounds (pg_stat_user_tables; counts since ` +
      `each database was made, warm-up included)\n\n` +
      table(
        [
          'side',
          'table',
          'inserted',
          'updated',
          'updates/message',
          'deleted',
          'dead now',
          'autovacuums',
          'MB',
        ],
        queueTables,
      ),
    ];
    // The kit's history tables of each aged database: how their updates went (HOT or not),
    // what autovacuum did, and how large the heap and each index grew.
    for (const side of sides.filter((x) => x.kind === 'aged')) {
      statements.push(await kitTables(side.db.url, side.name, o.rounds));
    }
    if (o.profile) {
      for (const v of variants) {
        const fresh = sides.find((s) => s.kind === 'fresh' && s.baseline === v.baseline)!;
        const aged = sides.find((s) => s.kind === 'aged' && s.baseline === v.baseline)!;
        statements.push(
          await statementTable(bench, fresh.copies.map((c) => c.name), aged.db.name, v.label),
        );
      }
    }
    return {
      sides: sides.map(({ name, kind, baseline, samples, history }) => ({
        name,
        kind,
        baseline,
        samples,
        history,
      })),
      statements,
    };
  } finally {
    await Promise.all(sides.flatMap((s) => s.pools.map((p) => p.end({ timeout: 2 }))));
  }
}

/** The kit's history tables in one database: updates, HOT updates, vacuums, heap and index sizes. */
async function kitTables(url: string, name: string, rounds: number): Promise<string> {
  const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
  try {
    await sql`select pg_stat_force_next_flush()`.catch(() => {});
    const tables = await sql<
      {
        relname: string;
        ins: string;
        upd: string;
        hot: string;
        dead: string;
        vacuums: number;
        heap: number;
        indexes: string;
      }[]
    >`select t.relname, t.n_tup_ins::text as ins, t.n_tup_upd::text as upd,
             t.n_tup_hot_upd::text as hot, t.n_dead_tup::text as dead,
             t.autovacuum_count::int as vacuums, pg_relation_size(t.relid) / 1048576.0 as heap,
             (select string_agg(format('%s %s', i.indexrelname,
                                       round(pg_relation_size(i.indexrelid) / 1048576.0, 1)),
                                ', ' order by i.indexrelname)
                from pg_stat_user_indexes i where i.relid = t.relid) as indexes
        from pg_stat_user_tables t
       where t.schemaname = 'switchyard'
         and t.relname in ('runs', 'step_states', 'step_tasks', 'run_events')
       order by t.relname`;
    return `history: the kit's tables in ${name} after ${rounds} rounds (pg_stat_user_tables, ` +
      `sizes in MB)\n\n` +
      table(
        ['table', 'inserted', 'updated', 'HOT', 'dead now', 'autovacuums', 'heap MB', 'indexes MB'],
        tables.map((t) => [
          `switchyard.${t.relname}`,
          t.ins,
          t.upd,
          t.hot,
          t.dead,
          String(t.vacuums),
          fmt(t.heap, 1),
          t.indexes ?? '',
        ]),
      );
  } finally {
    await sql.end({ timeout: 2 });
  }
}

/**
 * Mean time per call of the statements that took the most time in the aged database over the
 * profiled rounds, next to the same statement (by its text) in the fresh copies of those rounds.
 */
async function statementTable(
  bench: BenchDatabase,
  freshNames: string[],
  agedName: string,
  label: string,
): Promise<string> {
  type Row = { query: string; calls: number; total: number };
  const read = (names: string[]) =>
    bench.sql<Row[]>`
      select left(regexp_replace(s.query, '[[:space:]]+', ' ', 'g'), 100) as query,
             sum(s.calls)::int as calls, sum(s.total_exec_time)::float as total
        from pg_stat_statements s
        join pg_database d on d.oid = s.dbid and d.datname = any(${pgArray(names)}::text[])
       where s.query not like '%pg_stat_statements%' and s.query not like 'SELECT pg_sleep%'
         and s.query not like '%read_with_poll%' -- its time is mostly its poll's sleeps
       group by 1`;
  const fresh = new Map((await read(freshNames)).map((r) => [r.query, r]));
  // The statements taking the most time, and every write of a queue table's vt (the claim's).
  const aged = (await read([agedName])).sort((a, b) => b.total - a.total)
    .filter((r, i) => i < 14 || /^update pgmq\.(q_|%I)/i.test(r.query));
  return `history${label ? ` [${label}]` : ''}: statements over the last ${PROFILED_ROUNDS} ` +
    `rounds (pg_stat_statements, track = all: statements inside functions included), mean ms ` +
    `per call, aged vs fresh

` +
    table(
      ['statement', 'calls (aged)', 'fresh ms/call', 'aged ms/call', 'aged/fresh'],
      aged.map((r) => {
        const f = fresh.get(r.query);
        const fm = f ? f.total / f.calls : NaN;
        const am = r.total / r.calls;
        return [
          r.query.replaceAll('|', '/'),
          String(r.calls),
          fmt(fm, 3),
          fmt(am, 3),
          f ? `${fmt(am / fm, 1)}x` : '-',
        ];
      }),
    );
}

/** Figure 7: history. */
export const figure: Figure = {
  number: 7,
  name: 'history',
  usesBaseline: true,
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const baseline = ctx.baseline;
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
    return { rows, notes };
  },
};
