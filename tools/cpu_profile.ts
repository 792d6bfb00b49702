/**
 * `deno run -A tools/cpu_profile.ts [options] <test files…>`: the CPU seconds each test file
 * costs, not its wall time (which a shared machine stretches). Each file runs alone, as CI runs
 * it (`deno task test --tier <its tier> --no-check <file>`, `DENO_JOBS=1`, the caller's
 * `PGMQ_MODE` and `PG_BIN`), inside a control group of its own created for the run
 * (cgroup v2 — `/sys/fs/cgroup` or the hybrid `/sys/fs/cgroup/unified` — else cgroup v1's
 * cpuacct), so the busy CPU it reads counts everything the run started: the harness, its
 * PostgreSQL cluster (every backend), deno test, and every process a test spawns, daemons
 * included. The group is removed afterwards; a process still in it when the run ends is named
 * and killed.
 *
 * Besides the total it splits the CPU two ways, both honestly approximate and said to be:
 *
 * - **setup / tests**: the group's CPU when `deno test` first appears (the cluster started and
 *   the template migrated) and the rest;
 * - **by process kind** (postgres, deno test, deno run/task/check/compile…, node, npm, supabase,
 *   chromium, other), from polling `/proc/<pid>/stat` of the group's processes every
 *   `--poll-ms`: a process's CPU is its last sample, so what short-lived processes spend after
 *   the last sample (or all of it, for one that lives less than a poll) is left "unattributed".
 *   The count of processes seen of each kind shows how many a file starts.
 *
 * Needs root (it writes the control group). It runs one file at a time (or files joined by `+`
 * in one run, to see what they share, such as the run's npm package; or `--cmd` a shell command,
 * such as one build step) and prints a Markdown table; `--json PATH` writes the figures too.
 *
 * @module
 */
import { join, relative, resolve } from 'node:path';
import { helpOption } from '../cli/_help.ts';
import { KIT_ROOT } from '../cli/_project.ts';
import { TIERS } from '../tests/tiers.ts';
import type { Tier } from './_tiers.ts';

helpOption(`usage: deno run -A tools/cpu_profile.ts [--runs N] [--poll-ms MS] [--json PATH]
                                         [--keep-logs] <test files…> | --cmd 'COMMAND'

Runs each test file alone, as CI does (deno task test --tier <its tier> --no-check FILE with
DENO_JOBS=1; PGMQ_MODE and PG_BIN as set), in a control group of its own, and prints the CPU
seconds of everything the run started (the harness, the PostgreSQL cluster, deno test and every
subprocess), its wall time, the setup share (cluster and template, before deno test starts) and a
split by process kind (sampled; the rest is "unattributed"). Needs root.

  FILE+FILE      files joined by + run together, in one run of their tier (what one file's
                 run shares with another's, such as the run's npm package, shows there)
  --cmd COMMAND  profile a shell command instead (bash -c COMMAND), e.g. one build step
  --runs N       run each file N times (default 1) and print every run
  --poll-ms MS   how often the group's processes are sampled (default 100)
  --json PATH    also write the figures as JSON
  --keep-logs    keep each run's output (its path is printed); otherwise it is printed only when
                 the run fails`);

const log = (line: string) => console.error(`[cpu] ${line}`);

function option(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  if (i < 0) return undefined;
  const value = Deno.args[i + 1];
  if (value === undefined || value.startsWith('--')) {
    console.error(`error: ${name} needs a value`);
    Deno.exit(2);
  }
  return value;
}

function positiveInt(name: string, fallback: number): number {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`error: ${name} "${raw}" is invalid: use a whole number of at least 1`);
    Deno.exit(2);
  }
  return n;
}

const RUNS = positiveInt('--runs', 1);
const POLL_MS = positiveInt('--poll-ms', 100);
const JSON_PATH = option('--json');
const KEEP_LOGS = Deno.args.includes('--keep-logs');
const COMMAND = option('--cmd');
const WITH_VALUE = new Set(['--runs', '--poll-ms', '--json', '--cmd']);
const files = Deno.args.filter((a, i) =>
  !a.startsWith('--') && !WITH_VALUE.has(Deno.args[i - 1] ?? '')
);
if (files.length === 0 && !COMMAND) {
  console.error('error: name at least one test file, or --cmd (see --help)');
  Deno.exit(2);
}

/** The tier tests/tiers.ts puts a file in; exits naming a file in none. */
function tierOf(file: string): { tier: Tier; path: string } {
  const path = relative(KIT_ROOT, resolve(file));
  for (const [tier, list] of Object.entries(TIERS) as [Tier, readonly string[]][]) {
    if (list.includes(path)) return { tier, path };
  }
  console.error(`error: ${file} is in no tier of tests/tiers.ts: name a test file listed there`);
  Deno.exit(2);
}

/** A control group of our own: where its processes go and how its CPU is read. */
interface Group {
  dir: string;
  /** Busy CPU of everything that ran in it, in microseconds: total, user, system. */
  usage(): { total: number; user: number; system: number };
  pids(): number[];
  remove(): Promise<void>;
}

function readText(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** Creates the group: cgroup v2 where it is mounted (alone or hybrid), else v1's cpuacct. */
function createGroup(): Group {
  const name = `switchyard-cpu-${crypto.randomUUID().slice(0, 8)}`;
  const v2 = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((root) =>
    readText(join(root, 'cgroup.controllers')) !== null
  );
  const v1 = '/sys/fs/cgroup/cpuacct';
  const root = v2 ?? (readText(join(v1, 'cpuacct.usage')) !== null ? v1 : undefined);
  if (!root) {
    console.error(
      'error: no cgroup v2 (/sys/fs/cgroup or /sys/fs/cgroup/unified) nor cgroup v1 cpuacct ' +
        '(/sys/fs/cgroup/cpuacct) is mounted: this tool reads the CPU of a run from a control group',
    );
    Deno.exit(1);
  }
  const dir = join(root, name);
  try {
    Deno.mkdirSync(dir);
  } catch (e) {
    console.error(
      `error: cannot create the control group ${dir}: ${(e as Error).message} (run as root)`,
    );
    Deno.exit(1);
  }
  const usage = v2
    ? () => {
      const stat = Object.fromEntries(
        (readText(join(dir, 'cpu.stat')) ?? '').trim().split('\n').map((l) => {
          const [k, v] = l.split(' ');
          return [k, Number(v)];
        }),
      );
      return { total: stat.usage_usec, user: stat.user_usec, system: stat.system_usec };
    }
    : () => {
      const ns = (f: string) => Number(readText(join(dir, f)) ?? 'NaN');
      return {
        total: ns('cpuacct.usage') / 1000,
        user: ns('cpuacct.usage_user') / 1000,
        system: ns('cpuacct.usage_sys') / 1000,
      };
    };
  return {
    dir,
    usage,
    pids: () => (readText(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean).map(Number),
    async remove() {
      for (let i = 0; i < 50; i++) {
        try {
          Deno.removeSync(dir);
          return;
        } catch (e) {
          if (e instanceof Deno.errors.NotFound) return;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      log(`could not remove ${dir}`);
    },
  };
}

const TICK_US = 10_000; // /proc/<pid>/stat counts in clock ticks of 1/100 s (USER_HZ on Linux)

/** What kind of process a command line is, for the split. */
export function processKind(comm: string, argv: string[]): string {
  const exe = (argv[0] ?? '').split('/').pop() ?? '';
  if (comm === 'postgres' || exe === 'postgres' || comm.startsWith('postgres')) return 'postgres';
  if (exe === 'deno' || comm === 'deno') {
    const sub = argv[1] ?? '';
    if (sub === 'test') return 'deno test';
    if (sub === 'run' && argv.some((a) => a.endsWith('tools/test.ts'))) return 'deno (harness)';
    return `deno ${sub || '?'}`;
  }
  if (exe === 'node' || comm === 'node' || comm === 'MainThread') {
    const script = argv.slice(1).find((a) => !a.startsWith('-')) ?? '';
    if (/\bnpx?-cli\.js$|\/npm$|\/npx$/.test(script)) return 'npm/npx';
    if (/deno/.test(script)) return 'node (deno launcher)';
    return 'node';
  }
  if (/^npm\b|^npx\b/.test(comm)) return 'npm/npx';
  if (/supabase/.test(exe) || comm === 'supabase') return 'supabase';
  if (/chrom/.test(comm) || /chrom/.test(exe)) return 'chromium';
  if (comm === 'denort' || exe === 'denort') return 'deno compiled';
  return comm || exe || '?';
}

/**
 * One sample of a process: a key that tells a reused pid apart (pid and start time), its kind
 * and the CPU ticks it has used (self only).
 */
function sample(pid: number): { key: string; kind: string; ticks: number } | null {
  const stat = readText(`/proc/${pid}/stat`);
  if (!stat) return null;
  const close = stat.lastIndexOf(')');
  const comm = stat.slice(stat.indexOf('(') + 1, close);
  const fields = stat.slice(close + 2).split(' ');
  // After ")": state(0) ppid(1) … utime(11) stime(12) … starttime(19).
  const ticks = Number(fields[11]) + Number(fields[12]);
  const argv = (readText(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean);
  return { key: `${pid}@${fields[19]}`, kind: processKind(comm, argv), ticks };
}

/** The figures of one run of one file. */
interface Profile {
  /** The test file (files joined by `+` when they ran together), or the command. */
  file: string;
  tier: Tier | 'command';
  pgmq: string;
  code: number;
  summary: string;
  wallSeconds: number;
  cpuSeconds: number;
  userSeconds: number;
  systemSeconds: number;
  setupSeconds: number | null;
  byKind: Record<string, { cpuSeconds: number; processes: number }>;
  unattributedSeconds: number;
  leftover: string[];
}

async function profile(label: string, tier: Tier | 'command', argv: string[]): Promise<Profile> {
  const group = createGroup();
  try {
    return await profileIn(group, label, tier, argv);
  } finally {
    await group.remove();
  }
}

async function profileIn(
  group: Group,
  label: string,
  tier: Tier | 'command',
  argv: string[],
): Promise<Profile> {
  const logPath = await Deno.makeTempFile({ prefix: 'switchyard-cpu-', suffix: '.log' });
  const started = performance.now();
  // The shell joins the group, then becomes the run: everything it starts is born in the group.
  const child = new Deno.Command('sh', {
    args: [
      '-c',
      'log="$1"; shift; echo $$ > "$0/cgroup.procs" && exec "$@" >"$log" 2>&1',
      group.dir,
      logPath,
      ...argv,
    ],
    cwd: KIT_ROOT,
    env: { DENO_JOBS: '1', NO_COLOR: '1' },
    stdin: 'null',
  }).spawn();
  // Ctrl-C goes to the run (tools/test.ts stops its cluster on it); the group goes after it.
  const interrupt = () => {
    interrupted = true;
    try {
      child.kill('SIGINT');
    } catch { /* ended */ }
  };
  Deno.addSignalListener('SIGINT', interrupt);
  const last = new Map<string, { kind: string; ticks: number }>();
  let setupUs: number | null = null;
  let ended = false;
  const status = child.status.finally(() => (ended = true));
  while (!ended) {
    for (const pid of group.pids()) {
      const s = sample(pid);
      if (!s) continue;
      last.set(s.key, s);
      if (setupUs === null && s.kind === 'deno test') setupUs = group.usage().total;
    }
    await Promise.race([status, new Promise((r) => setTimeout(r, POLL_MS))]);
  }
  const { code } = await status;
  Deno.removeSignalListener('SIGINT', interrupt);
  const wallSeconds = (performance.now() - started) / 1000;
  // What the run left behind (a daemon it did not stop): named, then killed.
  const leftover: string[] = [];
  for (let i = 0; i < 50 && group.pids().length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const pid of group.pids()) {
    const argv = (readText(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean);
    leftover.push(`${pid} ${argv.join(' ')}`);
    try {
      Deno.kill(pid, 'SIGKILL');
    } catch { /* gone */ }
  }
  for (let i = 0; i < 50 && group.pids().length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const usage = group.usage();

  const byKind: Profile['byKind'] = {};
  let attributed = 0;
  for (const { kind, ticks } of last.values()) {
    const k = (byKind[kind] ??= { cpuSeconds: 0, processes: 0 });
    k.cpuSeconds += ticks * TICK_US / 1e6;
    k.processes++;
    attributed += ticks * TICK_US;
  }
  const text = await Deno.readTextFile(logPath);
  // deno test's closing line ("ok | 7 passed | 0 failed (1m2s)"; NO_COLOR keeps it plain).
  const summary = text.split('\n').findLast((l) => /^(ok|FAILED) \| \d+ passed/.test(l)) ??
    (tier === 'command' ? `exit ${code}` : '(no summary line)');
  const pgmq = text.match(/\[test\] PGMQ: (.*)/)?.[1] ??
    (tier === 'unit' ? 'none' : tier === 'command' ? '–' : '?');
  if (code !== 0 || KEEP_LOGS) {
    if (code !== 0) {
      log(`${label} exited ${code}; its output (${logPath}):`);
      console.error(text.split('\n').slice(-60).join('\n'));
    }
    if (KEEP_LOGS) log(`${label}: its output is in ${logPath}`);
  }
  if (!KEEP_LOGS) await Deno.remove(logPath).catch(() => {});
  return {
    file: label,
    tier,
    pgmq: /extension/.test(pgmq) ? 'extension' : /compatible/.test(pgmq) ? 'compat' : pgmq,
    code,
    summary,
    wallSeconds,
    cpuSeconds: usage.total / 1e6,
    userSeconds: usage.user / 1e6,
    systemSeconds: usage.system / 1e6,
    setupSeconds: setupUs === null ? null : setupUs / 1e6,
    byKind,
    unattributedSeconds: Math.max(0, usage.total - attributed) / 1e6,
    leftover,
  };
}

/** What to run: each argument a file (or files joined by `+`, run together), or --cmd's command. */
const plan: { label: string; tier: Tier | 'command'; argv: string[] }[] = COMMAND
  ? [{ label: COMMAND, tier: 'command', argv: ['bash', '-c', COMMAND] }]
  : files.map((arg) => {
    const group = arg.split('+').map(tierOf);
    const tiers = [...new Set(group.map((g) => g.tier))];
    if (tiers.length > 1) {
      console.error(`error: ${arg} joins files of tiers ${tiers.join(' and ')}: one tier per run`);
      Deno.exit(2);
    }
    const paths = group.map((g) => g.path);
    return {
      label: paths.join(' + '),
      tier: tiers[0],
      argv: [
        Deno.execPath(),
        'run',
        '-A',
        join(KIT_ROOT, 'tools/test.ts'),
        '--tier',
        tiers[0],
        '--no-check',
        ...paths,
      ],
    };
  });
const results: Profile[] = [];
let interrupted = false;
for (const { label, tier, argv } of plan) {
  for (let run = 1; run <= RUNS && !interrupted; run++) {
    log(
      `${label} (${tier === 'command' ? 'a command' : `tier ${tier}`})${
        RUNS > 1 ? `, run ${run} of ${RUNS}` : ''
      }…`,
    );
    const p = await profile(label, tier, argv);
    results.push(p);
    log(
      `${label}: ${p.cpuSeconds.toFixed(1)} CPU s in ${
        p.wallSeconds.toFixed(1)
      } s wall; ${p.summary}`,
    );
    for (const l of p.leftover) log(`  left running after the run (killed): ${l}`);
  }
}

const fmt = (n: number) => n.toFixed(1);
console.log(
  '| file | PGMQ | result | wall s | CPU s | user s | sys s | setup s | by process kind (CPU s, processes) | unattributed s |',
);
console.log('|---|---|---|--:|--:|--:|--:|--:|---|--:|');
for (const p of results) {
  const kinds = Object.entries(p.byKind)
    .sort((a, b) => b[1].cpuSeconds - a[1].cpuSeconds)
    .filter(([, k]) => k.cpuSeconds >= 0.05)
    .map(([name, k]) => `${name} ${fmt(k.cpuSeconds)} (${k.processes})`)
    .join(', ');
  // deno test's "ok | 9 passed | 0 failed (1m33s)", without the bars that would split the cell.
  const summary = p.summary.replace(/ \(.*\)$/, '').replaceAll(' | ', ', ');
  const result = p.code === 0 ? summary : `exit ${p.code}: ${summary}`;
  console.log(
    `| ${p.file} | ${p.pgmq} | ${result} | ${fmt(p.wallSeconds)} | ${fmt(p.cpuSeconds)} | ${
      fmt(p.userSeconds)
    } | ${fmt(p.systemSeconds)} | ${
      p.setupSeconds === null ? '–' : fmt(p.setupSeconds)
    } | ${kinds} | ${fmt(p.unattributedSeconds)} |`,
  );
}
if (JSON_PATH) await Deno.writeTextFile(JSON_PATH, JSON.stringify(results, null, 2) + '\n');
Deno.exit(results.every((p) => p.code === 0) ? 0 : 1);
