/**
 * `deno task mutate`: the mutation check. Plants every mutant of tools/mutants.ts, one at a
 * time, in a scratch copy of the kit (the files git knows, copied to a temporary directory; the
 * real tree is only read), runs the test files named for it there with `deno task test
 * --fail-fast <files>` and reports `N killed, M survived`, the survivors named. A mutant is
 * killed when its tests fail (or pass their time bound); it survives when they pass.
 *
 * An SQL mutant is planted in its function's source file (supabase/schemas/functions/<area>/) and
 * reaches the database through the unreleased migration, assembled again in the copy.
 *
 * First it checks every mutant still applies (its text occurs once; an SQL mutant's file is its
 * function's source file) and runs the named files unmutated: a kill only counts
 * against a baseline that passes. Each run's `deno task test` starts a throwaway PostgreSQL
 * cluster of its own (or uses `DATABASE_URL`) and migrates a template from the mutated copy.
 *
 * @module
 */
import { join } from 'node:path';
import { DEFAULT_PG_BIN } from './_cluster.ts';
import { helpOption } from '../cli/_help.ts';
import { KIT_ROOT } from '../cli/_project.ts';
import { ensurePostgresBinaries } from './_provision.ts';
import { type Mutant, MUTANTS } from './mutants.ts';
import { assemble, coreMigrationFiles, functionSourcePath, SCHEMAS } from './sql_source.ts';

helpOption(`usage: deno task mutate [--only NAME,...] [--tests FILE,...] [--list] [--no-baseline]
                        [--bound-minutes N]

Plants each mutant of tools/mutants.ts in a scratch copy of the kit, one at a time, runs the
test files named for it and prints "N killed, M survived" with the survivors named (exit code 1
when one survives or a mutant no longer applies).

  --only NAME,...     only these mutants
  --list              list the mutants and their tests, run nothing
  --no-baseline       skip the unmutated run of the named test files
  --tests FILE,...    run these test files instead of the ones named for each mutant (to show
                      that a second test kills a mutant on its own)
  --bound-minutes N   stop one mutant's tests after N minutes (default 10): counted as killed`);

const log = (line: string) => console.error(`[mutate] ${line}`);

function option(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

/** Why a mutant cannot be planted as written, or undefined. */
export async function staleness(root: string, m: Mutant): Promise<string | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(root, m.file));
  } catch {
    return `${m.file} is missing`;
  }
  const count = text.split(m.search).length - 1;
  if (count !== 1) return `its text occurs ${count} times in ${m.file} (expected once)`;
  if (m.fn) {
    const source = await functionSourcePath(m.fn, root);
    if (m.file !== source) {
      return `switchyard.${m.fn} is defined in ${source ?? '(no source file)'}, not ${m.file}`;
    }
  }
  for (const t of m.tests) {
    try {
      await Deno.stat(join(root, t));
    } catch {
      return `its test file ${t} is missing`;
    }
  }
  return undefined;
}

/**
 * Writes `root`'s unreleased migration as `deno task sql:assemble` would; returns what puts the
 * previous one back.
 */
async function reassemble(root: string): Promise<() => Promise<void>> {
  const { unreleased } = await coreMigrationFiles(root);
  if (unreleased.length !== 1) {
    throw new Error(
      `expected one unreleased migration in the scratch copy, found ${unreleased.length}`,
    );
  }
  const path = join(root, 'supabase/migrations', unreleased[0]);
  const before = await Deno.readTextFile(path);
  const text = await assemble(root);
  if (text === null) throw new Error('the mutated source assembles to no migration');
  await Deno.writeTextFile(path, text);
  return () => Deno.writeTextFile(path, before);
}

/** Copies the files git knows (tracked and untracked, not ignored) into a new directory. */
async function scratchCopy(): Promise<string> {
  const out = await new Deno.Command('git', {
    args: ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    cwd: KIT_ROOT,
    stdout: 'piped',
    stderr: 'piped',
  }).output();
  if (!out.success) throw new Error(`git ls-files failed: ${new TextDecoder().decode(out.stderr)}`);
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-mutate-' });
  for (const file of new TextDecoder().decode(out.stdout).split('\0').filter(Boolean)) {
    const target = join(dir, file);
    await Deno.mkdir(join(target, '..'), { recursive: true });
    try {
      await Deno.copyFile(join(KIT_ROOT, file), target);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e; // deleted but not yet committed
    }
  }
  return dir;
}

interface RunResult {
  passed: boolean;
  timedOut: boolean;
  seconds: number;
  /** The first failing test (or error line) of a failed run. */
  first: string;
  output: string;
}

/** `deno task test --fail-fast <files>` in `dir`, bounded; SIGINT at the bound, then SIGKILL. */
async function runTests(
  dir: string,
  files: string[],
  env: Record<string, string>,
  boundMs: number,
): Promise<RunResult> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ['task', '-q', 'test', '--fail-fast', ...files],
    cwd: dir,
    env: { ...env, NO_COLOR: '1' },
    stdin: 'null',
    stdout: 'piped',
    stderr: 'piped',
  }).spawn();
  let output = '';
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output += chunk;
  };
  let timedOut = false;
  const interrupt = setTimeout(() => {
    timedOut = true;
    try {
      child.kill('SIGINT');
    } catch { /* exited */ }
  }, boundMs);
  const kill = setTimeout(() => {
    try {
      child.kill('SIGKILL');
    } catch { /* exited */ }
  }, boundMs + 40_000);
  const [status] = await Promise.all([child.status, collect(child.stdout), collect(child.stderr)]);
  clearTimeout(interrupt);
  clearTimeout(kill);
  const failed = output.split('\n').find((l) => / \.\.\. FAILED/.test(l)) ??
    output.split('\n').find((l) => /^error: /.test(l)) ?? `exit code ${status.code}`;
  return {
    passed: status.success && !timedOut,
    timedOut,
    seconds: Math.round((performance.now() - started) / 1000),
    first: timedOut
      ? `stopped after ${Math.round(boundMs / 1000)} s`
      : failed.replace(/ \.\.\. FAILED.*$/, '').replace(/^\.\//, '').trim(),
    output,
  };
}

if (import.meta.main) {
  const only = option('--only')?.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = (only ?? []).filter((n) => !MUTANTS.some((m) => m.name === n));
  if (unknown.length > 0) {
    console.error(`error: unknown mutant(s): ${unknown.join(', ')} (see --list)`);
    Deno.exit(1);
  }
  const tests = option('--tests')?.split(',').map((s) => s.trim()).filter(Boolean);
  const mutants = MUTANTS.filter((m) => !only || only.includes(m.name))
    .map((m) => (tests ? { ...m, tests } : m));
  if (Deno.args.includes('--list')) {
    for (const m of MUTANTS) {
      console.log(`${m.name}: ${m.bug}\n  ${m.file} -> ${m.tests.join(' ')}`);
    }
    Deno.exit(0);
  }
  const boundMs = Number(option('--bound-minutes') ?? '10') * 60_000;
  if (!(boundMs > 0)) {
    console.error('error: --bound-minutes must be a positive number');
    Deno.exit(1);
  }

  const stale: string[] = [];
  for (const m of mutants) {
    const why = await staleness(KIT_ROOT, m);
    if (why) stale.push(`${m.name}: ${why}`);
  }
  if (stale.length > 0) {
    console.error(`error: mutants that no longer apply (update tools/mutants.ts):`);
    for (const s of stale) console.error(`  ${s}`);
    Deno.exit(1);
  }

  let scratch: string | undefined;
  const started = performance.now();
  let code = 1;
  try {
    // Without DATABASE_URL each run's `deno task test` starts a cluster of its own (a few
    // seconds): the pg_cron tests' database is cloned from the run's own migrated template and
    // cannot be dropped while pg_cron runs (tools/test.ts), so a cluster shared by the runs would
    // serve every run after the first the previous run's (mutated) core in it.
    const url = Deno.env.get('DATABASE_URL');
    if (!url) await ensurePostgresBinaries(Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN, log);
    scratch = await scratchCopy();
    log(`scratch copy: ${scratch}`);
    // The copy has no .git: tests that read releases from history (upgrade, release) use the
    // kit's own repository through GIT_DIR; they read commits, never the work tree.
    const gitDir = new TextDecoder().decode(
      (await new Deno.Command('git', {
        args: ['rev-parse', '--absolute-git-dir'],
        cwd: KIT_ROOT,
        stdout: 'piped',
      }).output()).stdout,
    ).trim();
    const env: Record<string, string> = { ...Deno.env.toObject(), GIT_DIR: gitDir };
    if (url) env.DATABASE_URL = url;

    if (!Deno.args.includes('--no-baseline')) {
      const files = [...new Set(mutants.flatMap((m) => m.tests))].sort();
      log(`baseline: ${files.length} test file(s) unmutated`);
      const base = await runTests(scratch, files, env, boundMs * 2);
      if (!base.passed) {
        console.error(base.output);
        throw new Error(`the unmutated tests fail (${base.first}): a kill would mean nothing`);
      }
      log(`baseline passed in ${base.seconds} s`);
    }

    const rows: { m: Mutant; r: RunResult }[] = [];
    for (const [i, m] of mutants.entries()) {
      const path = join(scratch, m.file);
      const original = await Deno.readTextFile(path);
      await Deno.writeTextFile(path, original.replace(m.search, () => m.replace));
      // A mutant of the SQL source reaches the database as an edit would: through the
      // unreleased migration, assembled again.
      const restoreMigration = m.file.startsWith(`${SCHEMAS}/`) ? await reassemble(scratch) : null;
      let r: RunResult;
      try {
        r = await runTests(scratch, m.tests, env, boundMs);
      } finally {
        await Deno.writeTextFile(path, original);
        await restoreMigration?.();
      }
      rows.push({ m, r });
      const verdict = r.passed ? 'SURVIVED' : r.timedOut ? 'killed (bound)' : 'killed';
      log(`${i + 1}/${mutants.length} ${m.name}: ${verdict} in ${r.seconds} s — ${r.first}`);
      if (r.passed) console.error(r.output.split('\n').slice(-15).join('\n'));
    }

    const width = Math.max(...rows.map(({ m }) => m.name.length));
    console.log('');
    console.log(`${'mutant'.padEnd(width)}  verdict     s  caught by`);
    for (const { m, r } of rows) {
      const verdict = r.passed ? 'SURVIVED' : r.timedOut ? 'killed*' : 'killed';
      const by = r.passed ? `(${m.tests.join(', ')} pass)` : r.first;
      console.log(
        `${m.name.padEnd(width)}  ${verdict.padEnd(8)} ${String(r.seconds).padStart(4)}  ${by}`,
      );
    }
    const survivors = rows.filter(({ r }) => r.passed).map(({ m }) => m.name);
    console.log('');
    console.log(
      `${rows.length - survivors.length} killed, ${survivors.length} survived` +
        (survivors.length ? `: ${survivors.join(', ')}` : '') +
        ` (${Math.round((performance.now() - started) / 1000)} s)`,
    );
    if (rows.some(({ r }) => r.timedOut)) console.log('* stopped at the bound (--bound-minutes)');
    code = survivors.length === 0 ? 0 : 1;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    code = 1;
  } finally {
    if (scratch) await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
  Deno.exit(code);
}
