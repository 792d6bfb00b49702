/**
 * A fresh machine: `deno task test` needs PostgreSQL 15's server binaries (and pg_cron for the
 * keep-alive suites). When they are missing from Debian's default location and the command
 * runs as root on a machine with `apt-get`, they are installed (`postgresql-15`,
 * `postgresql-15-cron`, `postgresql-15-plpgsql-check`) with a progress line; otherwise the error says exactly what to install.
 * The dashboard's browser test (tests/ops/dashboard_browser_test.ts) needs Debian's `chromium`
 * the same way: installed as root with apt-get when the run includes that test, otherwise a line
 * saying exactly what to install (that test then fails with the same words, never skips).
 * docs/design/local-runs.md.
 *
 * @module
 */
import { DEFAULT_PG_BIN, PostgresBinariesMissingError } from './_cluster.ts';
import { relative, resolve } from 'node:path';
import { exists } from '../cli/_util.ts';

/** The Debian packages of the server, of pg_cron and of plpgsql_check. */
export const PG_PACKAGES = [
  'postgresql-15',
  'postgresql-15-cron',
  'postgresql-15-plpgsql-check',
] as const;

/** Where Debian's postgresql-15-plpgsql-check puts its extension (static checks of the SQL core). */
export const PLPGSQL_CHECK_CONTROL = '/usr/share/postgresql/15/extension/plpgsql_check.control';

/**
 * What {@linkcode provisionPlan} decides.
 *
 * @example
 * ```ts
 * import type { ProvisionPlan } from './_provision.ts';
 * const plan: ProvisionPlan = { action: 'ready' };
 * ```
 */
export type ProvisionPlan =
  | { action: 'ready' }
  | { action: 'install'; commands: string[][] }
  | { action: 'instruct'; message: string };

/**
 * What the machine needs before a throwaway cluster can start, as a pure decision: ready when
 * `initdb` and `postgres` exist in `binDir`; `apt-get` install when they are missing from the
 * default Debian location and the process is root with `apt-get`; otherwise instructions.
 *
 * @example
 * ```ts
 * import { provisionPlan } from './_provision.ts';
 * const plan = provisionPlan({ binDir: '/opt/pg/bin', haveBinaries: false, root: false, aptGet: false });
 * console.assert(plan.action === 'instruct');
 * ```
 */
export function provisionPlan(
  { binDir, haveBinaries, root, aptGet }: {
    binDir: string;
    haveBinaries: boolean;
    root: boolean;
    aptGet: boolean;
  },
): ProvisionPlan {
  if (haveBinaries) return { action: 'ready' };
  if (binDir.replace(/\/$/, '') === DEFAULT_PG_BIN && root && aptGet) {
    return {
      action: 'install',
      commands: [
        ['apt-get', 'update', '-qq'],
        ['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...PG_PACKAGES],
      ],
    };
  }
  let message = new PostgresBinariesMissingError(binDir).message;
  if (binDir.replace(/\/$/, '') === DEFAULT_PG_BIN && !root) {
    message += `; as root this command installs them itself (sudo apt-get install -y ${
      PG_PACKAGES.join(' ')
    })`;
  }
  return { action: 'instruct', message };
}

async function onPath(command: string): Promise<boolean> {
  for (const dir of (Deno.env.get('PATH') ?? '').split(':')) {
    if (dir && await exists(`${dir}/${command}`)) return true;
  }
  return false;
}

/**
 * Makes sure the server binaries exist in `binDir`, installing them per
 * {@linkcode provisionPlan}; `log` gets the progress line.
 *
 * @throws {PostgresBinariesMissingError} (its message) when they are missing and cannot be
 *   installed here
 * @example
 * ```ts
 * import { ensurePostgresBinaries } from './_provision.ts';
 * await ensurePostgresBinaries('/usr/lib/postgresql/15/bin', (line) => console.error(line));
 * ```
 */
export async function ensurePostgresBinaries(
  binDir: string,
  log: (line: string) => void,
): Promise<void> {
  // In Debian's location the suite also needs plpgsql_check (tests/sql/plpgsql_check_test.ts).
  const have = async () =>
    (await exists(`${binDir}/initdb`)) && (await exists(`${binDir}/postgres`)) &&
    (binDir.replace(/\/$/, '') !== DEFAULT_PG_BIN || await exists(PLPGSQL_CHECK_CONTROL));
  const plan = provisionPlan({
    binDir,
    haveBinaries: await have(),
    root: Deno.uid?.() === 0,
    aptGet: await onPath('apt-get'),
  });
  if (plan.action === 'ready') return;
  if (plan.action === 'instruct') throw new Error(plan.message);
  log(
    `PostgreSQL 15 or an extension the suite needs is missing: installing ${
      PG_PACKAGES.join(', ')
    } with apt-get ` +
      '(once; about a minute)',
  );
  const started = performance.now();
  await runApt(
    plan.commands,
    log,
    `Install ${PG_PACKAGES.join(' ')} yourself (on Ubuntu and older Debian from the ` +
      'PostgreSQL apt repository, apt.postgresql.org), set PG_BIN to their directory, or set ' +
      'DATABASE_URL to a running server',
  );
  if (!(await have())) throw new Error(new PostgresBinariesMissingError(binDir).message);
  log(`installed PostgreSQL 15 in ${Math.round((performance.now() - started) / 1000)} s`);
}

/** Runs apt-get commands with progress lines on `log`; a failure names `help`. */
async function runApt(commands: string[][], log: (line: string) => void, help: string) {
  for (const [command, ...args] of commands) {
    const child = new Deno.Command(command, {
      args,
      stdin: 'null',
      stdout: 'piped',
      stderr: 'piped',
      env: { DEBIAN_FRONTEND: 'noninteractive' },
    }).spawn();
    let tail = '';
    const progress = (async () => {
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        tail = (tail + chunk).slice(-4000);
        for (const line of chunk.split('\n')) {
          const step = /^(Get:\d+|Unpacking|Setting up) (\S+)/.exec(line.trim());
          if (step) log(`  ${args[0]}: ${step[1].replace(/:\d+$/, '')} ${step[2]}`);
        }
      }
    })();
    const errText = new Response(child.stderr).text();
    const status = await child.status;
    await progress;
    if (!status.success) {
      throw new Error(
        `\`${command} ${args.join(' ')}\` failed (exit ${status.code}): ${
          ((await errText) + tail).trim().slice(-1500)
        }\n${help}`,
      );
    }
  }
}

/** Where the dashboard's browser test finds Chromium unless `CHROMIUM` names another binary. */
export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** The Debian package of Chromium (the browser test drives it over CDP with playwright-core). */
export const CHROMIUM_PACKAGES = ['chromium'] as const;

/** The dashboard's browser test, the first that needs Chromium, relative to the kit. */
export const BROWSER_TEST = 'tests/ops/dashboard_browser_test.ts';

/** Every test that needs Chromium, relative to the kit. */
export const BROWSER_TESTS: readonly string[] = [
  BROWSER_TEST,
  'tests/ops/follow_run_browser_test.ts',
  'tests/ops/dashboard_charts_browser_test.ts',
  'tests/e2e/readme_follow_test.ts',
];

/**
 * Whether `deno test` with these arguments (run in `cwd`, the kit) runs one of
 * {@linkcode BROWSER_TESTS}: no path argument (the default `tests/`), or a path that is such a
 * file or a folder holding one.
 *
 * @example
 * ```ts
 * import { runsBrowserTest } from './_provision.ts';
 * console.assert(runsBrowserTest(['tests/sql/'], '/kit') === false);
 * console.assert(runsBrowserTest(['--filter', 'dashboard', 'tests/ops/'], '/kit'));
 * ```
 */
export function runsBrowserTest(args: string[], cwd: string): boolean {
  const paths = args.filter((a) => !a.startsWith('-') && (a.includes('/') || a.endsWith('.ts')));
  if (paths.length === 0) return true;
  return BROWSER_TESTS.some((file) => {
    const test = resolve(cwd, file);
    return paths.some((p) => {
      const rel = relative(resolve(cwd, p), test);
      return rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'));
    });
  });
}

/**
 * What the browser test needs, as a pure decision like {@linkcode provisionPlan}: ready when the
 * binary exists; `apt-get` install of `chromium` when it is missing from Debian's location
 * ({@linkcode DEFAULT_CHROMIUM}) and the process is root with `apt-get`; otherwise instructions
 * (a `CHROMIUM` elsewhere is never installed).
 *
 * @example
 * ```ts
 * import { chromiumPlan } from './_provision.ts';
 * const plan = chromiumPlan({ path: '/usr/bin/chromium', have: false, root: false, aptGet: true });
 * console.assert(plan.action === 'instruct');
 * ```
 */
export function chromiumPlan(
  { path, have, root, aptGet }: { path: string; have: boolean; root: boolean; aptGet: boolean },
): ProvisionPlan {
  if (have) return { action: 'ready' };
  if (path === DEFAULT_CHROMIUM && root && aptGet) {
    return {
      action: 'install',
      commands: [
        ['apt-get', 'update', '-qq'],
        ['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...CHROMIUM_PACKAGES],
      ],
    };
  }
  let message = `chromium not found at ${path} (the dashboard's browser test, ${BROWSER_TEST}, ` +
    'needs it): ';
  message += path === DEFAULT_CHROMIUM
    ? `install it with \`sudo apt-get install -y ${CHROMIUM_PACKAGES.join(' ')}\`${
      root ? '' : ' (as root this command installs it itself)'
    }, or point CHROMIUM at a Chromium binary`
    : "point CHROMIUM at a Chromium binary, or unset it to use Debian's /usr/bin/chromium";
  return { action: 'instruct', message };
}

/**
 * Makes sure Chromium exists at `path`, installing it per {@linkcode chromiumPlan}; answers null
 * when it does, else why not (exact instructions). The suite still runs: only the browser test
 * fails, with the same words.
 *
 * @example
 * ```ts
 * import { ensureChromium } from './_provision.ts';
 * const missing = await ensureChromium('/usr/bin/chromium', (line) => console.error(line));
 * if (missing) console.error(missing);
 * ```
 */
export async function ensureChromium(
  path: string,
  log: (line: string) => void,
): Promise<string | null> {
  const plan = chromiumPlan({
    path,
    have: await exists(path),
    root: Deno.uid?.() === 0,
    aptGet: await onPath('apt-get'),
  });
  if (plan.action === 'ready') return null;
  if (plan.action === 'instruct') return plan.message;
  log(
    `chromium (for ${BROWSER_TEST}) is missing: installing ${CHROMIUM_PACKAGES.join(', ')} ` +
      'with apt-get (once; about a minute)',
  );
  const started = performance.now();
  try {
    await runApt(
      plan.commands,
      log,
      `Install ${CHROMIUM_PACKAGES.join(' ')} yourself or point CHROMIUM at a Chromium binary`,
    );
  } catch (e) {
    return (e as Error).message;
  }
  if (!(await exists(path))) return `apt-get installed chromium but ${path} is still missing`;
  log(`installed chromium in ${Math.round((performance.now() - started) / 1000)} s`);
  return null;
}
