/**
 * Figure 7, history: the 3-step end-to-end workload (2 shared queues, 2 workers) on a fresh
 * database, next to the same workload on a database preloaded with many completed runs (their
 * states, tasks and archived messages), and on one that grows round by round without a
 * manual ANALYZE (bulk history between rounds, plus every round's own work). The preloaded
 * database is analyzed once after its preload, as a system that was quiet; after that only
 * autovacuum updates statistics, so plans meet the same stale statistics as in production,
 * where a burst of work arrives faster than autoanalyze notices. The three
 * databases live on one server and run back to back every round, in an order that rotates;
 * the fresh one is emptied before each of its rounds so it stays fresh.
 *
 * @module
 */
import postgres from 'postgres';
import type { DeployedFlow } from '../lib/dsl/deployed_flow.ts';
import { startWorkerImpl, type Worker } from '../lib/worker/worker.ts';
import type { BenchDatabase, ExtraDatabase } from './_db.ts';
import { threeStepFlow } from './_flows.ts';
import { benchWorkerOptions, compile, log, type Sample, timed, waitUntil } from './_common.ts';
import { fmt } from './_stats.ts';

/** The steps of the history flow and the queue each is on. */
const STEPS = [
  { step: 'first', queue: 'hist_a' },
  { step: 'second', queue: 'hist_b' },
  { step: 'third', queue: 'hist_a' },
] as const;
const FLOW = 'hist';

/** Settings of the history figure. */
export interface HistoryOptions {
  /** Runs per round (3 tasks each). */
  runs: number;
  rounds: number;
  /** Completed runs preloaded into the preloaded database. */
  preload: number;
  /** Completed runs added to the growing database before each round. */
  growth: number;
  batch: number;
  concurrency: number;
  connections: number;
  /** A project directory with baseline migrations: every side also runs on them. */
  baseline?: { workdir: string; label: string };
}

/** One database of the figure and its per-round samples. */
export interface HistorySide {
  /** `fresh`, `preloaded` or `growing`, with the baseline's label for baseline sides. */
  name: string;
  kind: 'fresh' | 'preloaded' | 'growing';
  baseline: boolean;
  samples: Sample[];
  /** Completed runs in the database when each round started. */
  history: number[];
}

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

/** The history flow's completed runs (see {@linkcode preloadCompleted}). */
export function preloadHistory(sql: postgres.Sql, count: number, ago = '2 hours') {
  return preloadCompleted(sql, count, FLOW, STEPS, ago);
}

interface SideState extends HistorySide {
  db: ExtraDatabase;
  pools: postgres.Sql[];
  completed: number;
}

/** Runs figure 7 and returns every side's samples. */
export async function history(bench: BenchDatabase, o: HistoryOptions): Promise<HistorySide[]> {
  const registry: DeployedFlow[] = [threeStepFlow(FLOW, 'hist_a', 'hist_b')];
  const kinds = ['fresh', 'preloaded', 'growing'] as const;
  const variants = [
    { baseline: false, label: '', workdir: undefined as string | undefined },
    ...(o.baseline
      ? [{ baseline: true, label: o.baseline.label, workdir: o.baseline.workdir }]
      : []),
  ];
  const sides: SideState[] = [];
  try {
    for (const v of variants) {
      for (const kind of kinds) {
        const db = await bench.createDatabase(`${kind}${v.baseline ? '_base' : ''}`, {
          workdir: v.workdir,
        });
        await compile(db.sql, registry);
        const side: SideState = {
          name: v.baseline ? `${kind} (${v.label})` : kind,
          kind,
          baseline: v.baseline,
          samples: [],
          history: [],
          db,
          pools: [],
          completed: 0,
        };
        if (kind === 'preloaded') {
          const t0 = performance.now();
          await preloadHistory(db.sql, o.preload);
          // Statistics as of a quiet system; from here on only autovacuum decides.
          await db.sql`analyze`;
          side.completed = o.preload;
          log(
            `history: preloaded ${o.preload} completed runs into ${side.name} in ` +
              `${fmt((performance.now() - t0) / 1000, 1)} s`,
          );
        }
        // Two workers (one per queue), each with its pool kept for the whole figure.
        side.pools = Array.from(
          { length: 2 },
          () => postgres(db.url, { max: o.connections, prepare: false, onnotice: () => {} }),
        );
        sides.push(side);
      }
    }
    const workerOptions = benchWorkerOptions(o);
    const runSide = async (side: SideState) => {
      const { sql } = side.db;
      if (side.kind === 'fresh') {
        // cascade: the run events of a newer SQL core go with their runs.
        await sql`truncate switchyard.step_tasks, switchyard.step_states, switchyard.runs cascade`;
        await sql`truncate pgmq.a_hist_a, pgmq.a_hist_b`;
        side.completed = 0;
      } else if (side.kind === 'growing' && o.growth > 0) {
        await preloadHistory(sql, o.growth, '1 minute');
        side.completed += o.growth;
      }
      side.history.push(side.completed);
      await sql`select count(switchyard.start_flow(${FLOW}, jsonb_build_object('i', i)))
                  from generate_series(1, ${o.runs}::int) i`;
      await sql`update pgmq.q_hist_a set vt = clock_timestamp() + interval '1 hour'`;
      const workers: Worker[] = [];
      try {
        for (const [i, queueName] of ['hist_a', 'hist_b'].entries()) {
          workers.push(
            await startWorkerImpl(registry, { ...workerOptions, queueName, sql: side.pools[i] }),
          );
        }
        side.samples.push(
          await timed(bench, o.runs * 3, async () => {
            await sql`update pgmq.q_hist_a set vt = clock_timestamp()`;
            await waitUntil(`the history runs to complete in ${side.name}`, async () => {
              const [{ open }] = await sql<{ open: boolean }[]>`
                select exists (select 1 from switchyard.runs where status = 'started') as open`;
              return !open;
            });
          }),
        );
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
      }
      side.completed += o.runs;
    };
    log('history: warm-up');
    for (const side of sides) {
      await runSide(side);
      side.samples.length = 0;
      side.history.length = 0;
    }
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) await runSide(sides[(r + k) % sides.length]);
      log(
        `history round ${r + 1}/${o.rounds}: ` +
          sides.map((s) =>
            `${s.name} ${fmt(s.samples[r].rate, 0)} tasks/s (${s.history[r]} completed runs)`
          ).join(', '),
      );
    }
    return sides.map(({ name, kind, baseline, samples, history }) => ({
      name,
      kind,
      baseline,
      samples,
      history,
    }));
  } finally {
    await Promise.all(sides.flatMap((s) => s.pools.map((p) => p.end({ timeout: 2 }))));
  }
}
