/**
 * `deno task bench [--quick] [--only=1,3] [--json=PATH] [--explain] [--profile] [--rounds=N]
 * [--batch=N] [--concurrency=N] [--connections=N] [--baseline=<git revision>]`: Switchyard's
 * performance figures, with their targets. It prints its environment first (PostgreSQL version,
 * PGMQ kind: the extension or the compatible layer), so figures can be compared across machines.
 *
 * Every figure is a ratio of two measurements taken side by side in this run (the machines are
 * shared and noisy): each round measures both sides back to back, the order rotates every
 * round, and the table shows the median of the per-round ratios with their range.
 *
 * Each figure is one module of `bench/figures/` (`<NN>_<name>.ts`, its measurement and its rows;
 * its documentation says what it measures): 1 queue throughput vs raw PGMQ, 2 end to end, 3 claim
 * scaling, 4 start-up, 5 memory, 6 the worker's connections, 7 history, 8 backlog, 9 vs pgflow,
 * 10 map fan-out, 11 flow control in the claim, 12 a rate limit held by real workers, 13 waiting
 * runs, 14 metrics, 15 events as a choice, 16 scale on one database, 17 the test engine.
 * `--only` selects them (1 and 2 share their rounds: either measures both).
 *
 * The result goes to `bench/results/latest.json` (or `--json=PATH`): the figures this run measured
 * replace their earlier records there, the others stay; `deno task bench:table` then writes
 * BENCHMARKS.md's current table from it.
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
 * included). Runs against a throwaway cluster (tools/_cluster.ts) unless `DATABASE_URL` is
 * set, in which case fresh databases are created on that server; they are dropped afterwards
 * either way. BENCHMARKS.md has the results and where the time goes.
 *
 * @module
 */
import { join } from 'node:path';
import { KIT_ROOT } from '../cli/_project.ts';
import { type BenchDatabase, openBenchDatabase } from './_db.ts';
import { table } from './_stats.ts';
import { log } from './_common.ts';
import type { Baseline, Figure, FigureContext, Options, Row } from './_figure.ts';
import { type FigureRecord, mergeResult, readResult, RESULT_FILE } from './_result.ts';
import { figure as figure1 } from './figures/01_throughput.ts';
import { figure as figure2 } from './figures/02_end_to_end.ts';
import { figure as figure3 } from './figures/03_claim_scaling.ts';
import { figure as figure4 } from './figures/04_startup.ts';
import { figure as figure5 } from './figures/05_memory.ts';
import { figure as figure6 } from './figures/06_connections.ts';
import { figure as figure7 } from './figures/07_history.ts';
import { figure as figure8 } from './figures/08_backlog.ts';
import { figure as figure9 } from './figures/09_pgflow.ts';
import { figure as figure10 } from './figures/10_map_fan_out.ts';
import { figure as figure11 } from './figures/11_flow_control_claim.ts';
import { figure as figure12 } from './figures/12_rate_limit.ts';
import { figure as figure13 } from './figures/13_waiting_runs.ts';
import { figure as figure14 } from './figures/14_metrics.ts';
import { figure as figure15 } from './figures/15_events_option.ts';
import { figure as figure16 } from './figures/16_scale.ts';
import { figure as figure17 } from './figures/17_test_engine.ts';
import { figure as figure18 } from './figures/18_row_trigger_insert.ts';

/** Every figure, by number. */
const ALL: readonly Figure[] = [
  figure1,
  figure2,
  figure3,
  figure4,
  figure5,
  figure6,
  figure7,
  figure8,
  figure9,
  figure10,
  figure11,
  figure12,
  figure13,
  figure14,
  figure15,
  figure16,
  figure17,
  figure18,
];
const FIGURES = ALL.map((f) => f.number);

function parseOptions(args: string[]): Options & { json: string } {
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
      !/^--(quick$|explain$|profile$|rounds=|only=|batch=|concurrency=|connections=|baseline=|pgflow-version=|history-rounds=|history-runs=|json=.)/
        .test(a)
    ) {
      throw new Error(
        `unknown argument "${a}": use --quick, --explain, --profile, --rounds=N, ` +
          `--only=${FIGURES.join(',')}, --batch=N, --concurrency=N, --connections=N, ` +
          '--baseline=<git revision>, --pgflow-version=X.Y.Z, --history-rounds=N, ' +
          '--history-runs=N, --json=PATH',
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
    json: value('json') ?? join(KIT_ROOT, RESULT_FILE),
  };
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
 * `workdir`: figures 1, 2, 7 and 8 then also run on that revision's SQL core.
 */
async function checkoutBaseline(
  rev: string,
): Promise<Baseline & { remove: () => Promise<void> }> {
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

/** The checkout's commit, `+changes` when the tracked files differ from it; null outside git. */
async function commitOf(): Promise<string | null> {
  const git = async (args: string[]) => {
    const out = await new Deno.Command('git', {
      args,
      cwd: KIT_ROOT,
      stdout: 'piped',
      stderr: 'null',
    })
      .output().catch(() => null);
    return out?.success ? new TextDecoder().decode(out.stdout).trim() : null;
  };
  const head = await git(['rev-parse', '--short', 'HEAD']);
  if (head === null) return null;
  const changes = await git(['status', '--porcelain', '--untracked-files=no']);
  return changes ? `${head}+changes` : head;
}

const asRecordRow = ([label, measured, sideBySide, ratio, target, result]: Row) => ({
  label,
  measured,
  sideBySide,
  ratio,
  target,
  result,
});

async function main() {
  if (Deno.args.includes('--help') || Deno.args.includes('-h')) {
    console.log(
      'usage: deno task bench [--quick] [--only=1,...,18] [--json=PATH] [--explain] [--profile]\n' +
        '                       [--rounds=N] [--batch=N] [--concurrency=N] [--connections=N]\n' +
        '                       [--baseline=<git revision>] [--pgflow-version=X.Y.Z]\n' +
        '                       [--history-rounds=N] [--history-runs=N]\n\n' +
        'Side-by-side ratios, one figure per module of bench/figures/:\n' +
        ALL.map((f) => `  ${String(f.number).padStart(2)}  ${f.name}`).join('\n') + '\n\n' +
        "--baseline also runs 1, 2, 7 and 8 on that revision's SQL core. A throwaway cluster\n" +
        'unless DATABASE_URL is set (fresh databases are created there and dropped). The figures\n' +
        `measured replace theirs in ${RESULT_FILE} (or --json=PATH); deno task bench:table\n` +
        'writes the table of BENCHMARKS.md from it.',
    );
    return;
  }
  const o = parseOptions(Deno.args);
  const selected = ALL.filter((f) => o.only.has(f.number));
  const db: BenchDatabase = await openBenchDatabase(log, { profile: o.profile });
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
  const rows: Row[] = [];
  const notes: string[] = [];
  const records: FigureRecord[] = [];
  try {
    const env = await environment(db);
    log(env);
    notes.push(
      `environment: ${env}; batch ${o.batch}, worker maxConcurrent ${o.concurrency}, ` +
        `${o.connections} connections per consumer, ${o.rounds} rounds` +
        (o.quick ? ' (--quick)' : ''),
    );
    const baseline = o.baseline && selected.some((f) => f.usesBaseline)
      ? await checkoutBaseline(o.baseline)
      : undefined;
    if (baseline) cleanups.push(baseline.remove);
    const shared = new Map<string, Promise<unknown>>();
    const ctx: FigureContext = {
      db,
      o,
      baseline,
      once: <T>(key: string, measure: () => Promise<T>) => {
        if (!shared.has(key)) shared.set(key, measure());
        return shared.get(key) as Promise<T>;
      },
    };
    const commit = await commitOf();
    for (const figure of selected) {
      log(`figure ${figure.number}: ${figure.name}`);
      const result = await figure.run(ctx);
      rows.push(...result.rows);
      notes.push(...result.notes);
      records.push({
        figure: figure.number,
        name: figure.name,
        ranAt: new Date().toISOString(),
        commit,
        arguments: [...Deno.args],
        environment: notes[0].slice('environment: '.length),
        rows: result.rows.map(asRecordRow),
        notes: result.notes,
      });
    }
  } finally {
    await cleanup();
    // What finished is kept, also when a later figure failed.
    if (records.length > 0) {
      const merged = mergeResult(await readResult(o.json), records);
      await Deno.mkdir(join(o.json, '..'), { recursive: true });
      await Deno.writeTextFile(o.json, JSON.stringify(merged, null, 2) + '\n');
      log(
        `wrote figure(s) ${records.map((r) => r.figure).join(', ')} to ${o.json}: ` +
          '`deno task bench:table` puts them in BENCHMARKS.md',
      );
    }
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
    // The report is out and the cluster is stopped: end here, not when every handle a figure's
    // library left open lets the event loop drain (a full --quick run once idled after its report
    // on figure 17's idle test engine database, which now closes by itself).
    Deno.exit(0);
  } catch (e) {
    console.error(`bench failed: ${(e as Error).stack ?? e}`);
    Deno.exit(1);
  }
}
