/**
 * Figure 9, vs pgflow: pgflow's SQL core, installed from its npm package (`@pgflow/core`,
 * its shipped migrations, fetched with `npm pack` into a temp directory at run time and never
 * stored here), next to Switchyard's, in one database on the bench's server with one queue
 * engine. Both run the same 3-step chain (first -> second -> third) on one queue with one
 * consumer, the same batch size and concurrency. pgflow is driven the way its worker drives
 * it: `pgmq.read_with_poll`, then `pgflow.start_tasks` for the batch, then one
 * `pgflow.complete_task` per task as each handler finishes, concurrently. Only what needs a
 * Supabase service is stubbed: `realtime.send` does nothing, and with the compatible PGMQ
 * layer the migration's `create extension pgmq` is left out (the layer is the `pgmq` schema).
 *
 * @module
 */
import postgres from 'postgres';
import { Flow } from '../../lib/mod.ts';
import { startWorkerImpl, type Worker } from '../../lib/worker/worker.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import type { BenchDatabase } from '../_db.ts';
import {
  benchWorkerOptions,
  compile,
  log,
  type Sample,
  sleep,
  timed,
  waitUntil,
} from '../_common.ts';
import { fmt } from '../_stats.ts';
import {
  cpu,
  cpuText,
  type Figure,
  type FigureContext,
  type FigureResult,
  rates,
  type Row,
} from '../_figure.ts';
import { median, roundRatio } from '../_stats.ts';

/** Settings of the pgflow figure. */
export interface PgflowOptions {
  runs: number;
  rounds: number;
  batch: number;
  concurrency: number;
  connections: number;
  /** The `@pgflow/core` version to install. */
  version: string;
}

/** Samples of both sides, or why the figure was skipped. */
export type PgflowResult =
  | { engine: Sample[]; pgflow: Sample[]; version: string; migrations: number }
  | { skipped: string };

/** `npm pack`s `@pgflow/core@version` into a temp directory; returns its migrations, in order. */
async function fetchPgflow(
  version: string,
): Promise<{ files: string[]; remove: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-pgflow-' });
  const remove = () => Deno.remove(dir, { recursive: true }).catch(() => {});
  try {
    const pack = await new Deno.Command('npm', {
      args: ['pack', `@pgflow/core@${version}`, '--silent'],
      cwd: dir,
      stdout: 'piped',
      stderr: 'piped',
    }).output();
    if (!pack.success) throw new Error(new TextDecoder().decode(pack.stderr).trim());
    const tgz = new TextDecoder().decode(pack.stdout).trim().split('\n').pop()!;
    const untar = await new Deno.Command('tar', { args: ['-xzf', tgz], cwd: dir }).output();
    if (!untar.success) throw new Error(`could not unpack ${tgz}`);
    const migrations = `${dir}/package/dist/supabase/migrations`;
    const files: string[] = [];
    for await (const e of Deno.readDir(migrations)) {
      if (e.isFile && e.name.endsWith('.sql')) files.push(`${migrations}/${e.name}`);
    }
    if (files.length === 0) throw new Error(`no migrations in ${migrations}`);
    return { files: files.sort(), remove };
  } catch (e) {
    await remove();
    throw e;
  }
}

/** One consumer that drives pgflow the way its worker does. */
function pgflowConsumer(pool: postgres.Sql, o: PgflowOptions, queue: string, workerId: string) {
  let stopping = false;
  let inFlight = 0;
  let wake: (() => void) | undefined;
  const freed = () => new Promise<void>((r) => (wake = r));
  const handler = (step: string, input: Record<string, { n?: number }>) =>
    step === 'first' ? { n: 1 } : { n: (input.first?.n ?? input.second?.n ?? 0) + 1 };
  const loop = (async () => {
    while (!stopping) {
      const free = o.concurrency - inFlight;
      if (free <= 0) {
        await freed();
        continue;
      }
      const messages = await pool<{ msg_id: string }[]>`
        select msg_id::text as msg_id from pgmq.read_with_poll(${queue}::text, 60,
          ${Math.min(o.batch, free)}::int, 1, 10)`;
      if (messages.length === 0) continue;
      const tasks = await pool<
        { run_id: string; step_slug: string; task_index: number; input: Record<string, never> }[]
      >`
        select run_id, step_slug, task_index, input
          from pgflow.start_tasks(${queue}::text,
            ${pgArray(messages.map((m) => m.msg_id))}::bigint[], ${workerId}::uuid)`;
      for (const t of tasks) {
        inFlight++;
        (async () => {
          try {
            const output = handler(t.step_slug, t.input);
            await pool`select pgflow.complete_task(${t.run_id}::uuid, ${t.step_slug}::text,
              ${t.task_index}::int, ${pool.json(output)}::jsonb)`;
          } catch (e) {
            log(`pgflow consumer: ${(e as Error).message}`);
          } finally {
            inFlight--;
            wake?.();
          }
        })();
      }
    }
  })();
  return {
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      while (inFlight > 0) await sleep(5);
    },
  };
}

/** Runs figure 9. */
export async function vsPgflow(bench: BenchDatabase, o: PgflowOptions): Promise<PgflowResult> {
  let fetched: Awaited<ReturnType<typeof fetchPgflow>>;
  try {
    fetched = await fetchPgflow(o.version);
  } catch (e) {
    return { skipped: `npm pack @pgflow/core@${o.version} failed: ${(e as Error).message}` };
  }
  const pools: postgres.Sql[] = [];
  try {
    const db = await bench.createDatabase('vs_pgflow');
    const [{ extension }] = await db.sql<{ extension: boolean }[]>`
      select exists (select 1 from pg_extension where extname = 'pgmq') as extension`;
    await db.sql.unsafe(`
      create schema if not exists realtime;
      create or replace function realtime.send(payload jsonb, event text, topic text,
                                               private boolean default true)
      returns void language plpgsql as $$ begin end $$;`);
    for (const file of fetched.files) {
      let text = await Deno.readTextFile(file);
      if (!extension) text = text.replace(/create extension if not exists "?pgmq"?[^;]*;/gi, '');
      try {
        await db.sql.unsafe(text);
      } catch (e) {
        return {
          skipped: `pgflow migration ${file.split('/').pop()} failed: ${(e as Error).message}`,
        };
      }
    }
    log(`vs pgflow: installed @pgflow/core@${o.version} (${fetched.files.length} migrations)`);
    await db.sql`select pgflow.create_flow('pf3', 3, 1, 60)`;
    await db.sql`select pgflow.add_step('pf3', 'first')`;
    await db.sql`select pgflow.add_step('pf3', 'second', array['first'])`;
    await db.sql`select pgflow.add_step('pf3', 'third', array['second'])`;
    const flow = new Flow<{ i: number }>({ slug: 'sy3', maxAttempts: 3, baseDelay: 1, timeout: 60 })
      .step({ slug: 'first' }, () => ({ n: 1 }))
      .step({ slug: 'second', dependsOn: ['first'] }, (i) => ({ n: i.first.n + 1 }))
      .step({ slug: 'third', dependsOn: ['second'] }, (i) => ({ n: i.second.n + 1 }));
    await compile(db.sql, [flow]);
    const enginePool = postgres(db.url, { max: o.connections, prepare: false, onnotice: () => {} });
    const pgflowPool = postgres(db.url, { max: o.connections, prepare: false, onnotice: () => {} });
    pools.push(enginePool, pgflowPool);
    const hold = (q: string) =>
      db.sql.unsafe(`update pgmq.q_${q} set vt = clock_timestamp() + interval '1 hour'`);
    const release = (q: string) => db.sql.unsafe(`update pgmq.q_${q} set vt = clock_timestamp()`);
    const runEngine = async () => {
      await db.sql`select count(switchyard.start_flow('sy3', jsonb_build_object('i', i)))
                     from generate_series(1, ${o.runs}::int) i`;
      await hold('sy3');
      const worker: Worker = await startWorkerImpl(flow, {
        ...benchWorkerOptions(o),
        sql: enginePool,
      });
      try {
        return await timed(bench, o.runs * 3, async () => {
          await release('sy3');
          await waitUntil('the engine runs to complete', async () => {
            const [{ open }] = await db.sql<{ open: boolean }[]>`
              select exists (select 1 from switchyard.runs where status = 'started') as open`;
            return !open;
          });
        });
      } finally {
        await worker.stop();
      }
    };
    const runPgflow = async () => {
      await db.sql`select count(*) from generate_series(1, ${o.runs}::int) i,
                     lateral pgflow.start_flow('pf3', jsonb_build_object('i', i))`;
      await hold('pf3');
      const workerId = crypto.randomUUID();
      await db.sql`insert into pgflow.workers (worker_id, queue_name, function_name)
                   values (${workerId}::uuid, 'pf3', 'bench-pgflow')`;
      const consumer = pgflowConsumer(pgflowPool, o, 'pf3', workerId);
      try {
        return await timed(bench, o.runs * 3, async () => {
          await release('pf3');
          await waitUntil('the pgflow runs to complete', async () => {
            const [{ open }] = await db.sql<{ open: boolean }[]>`
              select exists (select 1 from pgflow.runs where status = 'started') as open`;
            return !open;
          });
        });
      } finally {
        await consumer.stop();
      }
    };
    const checkOutputs = async () => {
      const [c] = await db.sql<{ engine: number; pgflow: number }[]>`
        select (select count(*)::int from switchyard.runs where status <> 'completed') as engine,
               (select count(*)::int from pgflow.runs where status <> 'completed') as pgflow`;
      if (c.engine || c.pgflow) {
        throw new Error(`vs pgflow: runs not completed: engine ${c.engine}, pgflow ${c.pgflow}`);
      }
    };
    log('vs pgflow: warm-up');
    await runEngine();
    await runPgflow();
    await checkOutputs();
    const engine: Sample[] = [], pgflow: Sample[] = [];
    for (let r = 0; r < o.rounds; r++) {
      if (r % 2 === 0) {
        engine.push(await runEngine());
        pgflow.push(await runPgflow());
      } else {
        pgflow.push(await runPgflow());
        engine.push(await runEngine());
      }
      log(
        `vs pgflow round ${r + 1}/${o.rounds}: engine ${fmt(engine[r].rate, 0)} tasks/s, ` +
          `pgflow ${fmt(pgflow[r].rate, 0)} tasks/s`,
      );
    }
    await checkOutputs();
    return { engine, pgflow, version: o.version, migrations: fetched.files.length };
  } finally {
    await Promise.all(pools.map((p) => p.end({ timeout: 2 })));
    await fetched.remove();
  }
}

/** Figure 9: vs pgflow. */
export const figure: Figure = {
  number: 9,
  name: 'vs pgflow',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
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
    return { rows, notes };
  },
};
