/**
 * Figure 8, backlog: the cost of the claim path per batch with 10 open runs waiting on the
 * queue, next to the same with 10,000. The flow has two steps on two queues: a batch of 10
 * from the first queue is claimed (`start_tasks`), nine of its tasks complete
 * (`complete_tasks`, each starting its successor on the second queue) and the tenth fails
 * for good (`fail_task`); then the nine successors are claimed and completed, which
 * completes their runs. Every iteration starts as many runs as it ended, so the backlog stays
 * constant, and both scenarios do exactly the same work. The calls go straight to SQL on one
 * connection, as a worker makes them. Each scenario has a database of its own, holding the
 * same completed runs, analyzed before the backlog arrived (a quiet system that gets a burst
 * of work), with autovacuum off for the figure so its statistics stay that stale. With a
 * baseline, its two scenarios are measured in the same rotation, batch by batch.
 *
 * @module
 */
import postgres from 'postgres';
import { Flow, routeFlow } from '../../lib/mod.ts';
import { defineDeployedFlow, type DeployedFlow } from '../../lib/dsl/deployed_flow.ts';
import { WorkerQueries } from '../../lib/sql/worker_queries.ts';
import type { BenchDatabase } from '../_db.ts';
import { compile, log } from '../_common.ts';
import { preloadCompleted } from './07_history.ts';
import { since } from '../_stats.ts';
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Row,
  verdict,
} from '../_figure.ts';
import { fmt, median, roundRatio } from '../_stats.ts';

/** Settings of the backlog figure. */
export interface BacklogOptions {
  batches: number;
  batch: number;
  /** Open runs in the large scenario (the small one has `batch`). */
  large: number;
  /** Completed runs of each flow in the database before the backlog arrives. */
  history: number;
  /** A project directory with baseline migrations: the figure also runs on them. */
  baseline?: { workdir: string; label: string };
}

/** Per-batch milliseconds of one scenario. */
export interface BacklogSamples {
  claim: number[];
  complete: number[];
  fail: number[];
}

/** The figure's samples on one set of migrations. */
export interface BacklogResult {
  /** `current`, or the baseline's label. */
  name: string;
  small: BacklogSamples;
  large: BacklogSamples;
}

function twoSteps(slug: string, queue: string): DeployedFlow {
  const flow = new Flow<{ i: number }>({ slug, maxAttempts: 1, timeout: 60 })
    .step({ slug: 'one' }, (input) => ({ n: input.i }))
    .step({ slug: 'two', dependsOn: ['one'] }, (input) => ({ n: input.one.n }));
  const queues: Record<string, string> = { one: `${queue}_a`, two: `${queue}_b` };
  // deno-lint-ignore no-explicit-any
  return defineDeployedFlow(routeFlow(flow, { queues } as any), { alias: slug });
}

/** Runs figure 8 on the current migrations (and the baseline's, when given). */
export async function backlog(bench: BenchDatabase, o: BacklogOptions): Promise<BacklogResult[]> {
  const out: BacklogResult[] = [];
  const variants = [
    { name: 'current', workdir: undefined as string | undefined },
    ...(o.baseline ? [{ name: o.baseline.label, workdir: o.baseline.workdir }] : []),
  ];
  const slug = 'bl', queue = 'backlog';
  // Every core's two scenarios (one database each: "open runs" counts the whole database) are
  // set up first, then measured batch by batch in a rotating order, so no core runs at a time of
  // its own: run one core after the other, whichever ran first measured 21-32 % slower.
  const scenarios: {
    variant: string;
    key: 'small' | 'large';
    open: number;
    conn: postgres.Sql;
    q: WorkerQueries;
    workers: Map<string, string>;
  }[] = [];
  const samples = new Map<string, Record<'small' | 'large', BacklogSamples>>();
  try {
    for (const v of variants) {
      samples.set(v.name, {
        small: { claim: [], complete: [], fail: [] },
        large: { claim: [], complete: [], fail: [] },
      });
      for (const [key, open] of [['small', o.batch], ['large', o.large]] as const) {
        const db = await bench.createDatabase(`backlog_${key}${v.workdir ? '_base' : ''}`, {
          workdir: v.workdir,
        });
        await compile(db.sql, [twoSteps(slug, queue)]);
        await preloadCompleted(db.sql, o.history, slug, [
          { step: 'one', queue: `${queue}_a` },
          { step: 'two', queue: `${queue}_b` },
        ]);
        // Statistics taken on a quiet system; then a burst of work arrives before autoanalyze
        // notices it: the condition under which plans that depend on statistics went wrong.
        // Autovacuum stays off for the figure, so that condition lasts for all of it (the
        // worst case, and a repeatable one: whether autoanalyze ran during the figure decided
        // the old SQL core's result from one run to the next).
        await db.sql`analyze`;
        for (const table of ['runs', 'step_states', 'step_tasks']) {
          await db.sql.unsafe(
            `alter table switchyard.${table} set (autovacuum_enabled = off)`,
          );
        }
        const conn = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
        const q = new WorkerQueries(conn);
        const workers = new Map<string, string>();
        scenarios.push({ variant: v.name, key, open, conn, q, workers });
        for (const part of ['a', 'b']) {
          const workerId = crypto.randomUUID();
          await q.registerWorker(workerId, `${queue}_${part}`, `bench-${part}`, [
            `${slug}/one`,
            `${slug}/two`,
          ]);
          workers.set(`${queue}_${part}`, workerId);
        }
        await db.sql`select count(switchyard.start_flow(${slug}, jsonb_build_object('i', i)))
                       from generate_series(1, ${open}::int) i`;
      }
      log(`backlog (${v.name}): ${o.batch} and ${o.large} open runs waiting`);
    }
    type Scenario = typeof scenarios[number];
    // Claims what `read` returns from one queue and completes all of it but `failFirst`.
    const claimAndComplete = async (
      s: Scenario,
      from: string,
      expected: number,
      failFirst: boolean,
    ) => {
      const ids = (await s.conn<{ msg_id: string }[]>`
        select msg_id::text as msg_id from pgmq.read(${from}::text, 600, ${expected}::int)`)
        .map((r) => BigInt(r.msg_id));
      if (ids.length !== expected) {
        throw new Error(`backlog: read ${ids.length} of ${expected} messages on ${from}`);
      }
      let t0 = performance.now();
      const claims = (await s.q.startTasks(from, ids, s.workers.get(from)!, null))
        .filter((c) => c.disposition === 'claimed');
      const claim = since(t0);
      if (claims.length !== expected) {
        throw new Error(`backlog: claimed ${claims.length} of ${expected} on ${from}`);
      }
      const failing = failFirst ? claims[0] : undefined;
      t0 = performance.now();
      const ok = await s.q.completeTasks(
        claims.slice(failFirst ? 1 : 0).map((c) => ({
          runId: c.run_id!,
          stepSlug: c.step_slug!,
          attempt: c.attempt!,
          output: { n: 1 },
        })),
      );
      const complete = since(t0);
      let fail = 0;
      if (failing) {
        t0 = performance.now();
        const failed = await s.q.failTask(failing.run_id!, 'one', failing.attempt!, 'x');
        fail = since(t0);
        if (failed !== 'failed') throw new Error(`backlog: fail_task answered ${failed}`);
      }
      if (!ok.every(Boolean)) throw new Error(`backlog: a completion was refused on ${from}`);
      return { claim, complete, fail };
    };
    const topUp = (s: Scenario) =>
      s.conn`select count(switchyard.start_flow(${slug}, '{"i": 0}'::jsonb))
               from generate_series(1, ${o.batch}::int)`;
    const batchOnce = async (s: Scenario, record: boolean) => {
      const first = await claimAndComplete(s, `${queue}_a`, o.batch, true);
      const second = await claimAndComplete(s, `${queue}_b`, o.batch - 1, false);
      // Keep the backlog constant: as many new runs as this iteration ended.
      await topUp(s);
      if (record) {
        const into = samples.get(s.variant)![s.key];
        into.claim.push(first.claim + second.claim);
        into.complete.push(first.complete + second.complete);
        into.fail.push(first.fail);
      }
    };
    // The successor queue starts empty: a first batch fills it (and is replaced).
    for (const s of scenarios) {
      await claimAndComplete(s, `${queue}_a`, o.batch, true);
      await topUp(s);
    }
    for (let w = 0; w < 10; w++) for (const s of scenarios) await batchOnce(s, false);
    for (let b = 0; b < o.batches; b++) {
      for (let k = 0; k < scenarios.length; k++) {
        await batchOnce(scenarios[(b + k) % scenarios.length], true);
      }
    }
    for (const v of variants) {
      const of = samples.get(v.name)!;
      out.push({ name: v.name, small: of.small, large: of.large });
    }
  } finally {
    await Promise.all(scenarios.map((s) => s.conn.end({ timeout: 2 })));
  }
  return out;
}

/** Figure 8: backlog. */
export const figure: Figure = {
  number: 8,
  name: 'backlog',
  usesBaseline: true,
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const baseline = ctx.baseline;
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
    return { rows, notes };
  },
};
