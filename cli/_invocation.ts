/**
 * Where the user stands and how they run the kit (docs/design/local-runs.md): the project a
 * command acts on, the command lines the kit prints for its next steps and fixes, and the
 * Supabase CLI those lines name.
 *
 * The kit runs three ways, and a printed command must work in the one the user is in:
 *
 * - the npm package (`npx switchyard <command>` in a project that installed
 *   `@switchyard/switchyard`): its `bin/switchyard.mjs` sets `SWITCHYARD_INVOCATION` to what
 *   the user typed (`npx switchyard`, `npx @switchyard/switchyard`);
 * - the compiled binary (`deno task build-cli`, `Deno.build.standalone`): `switchyard <command>`;
 * - a checkout of the kit: `npx -y deno@2 task <command> --project DIR`, run in the checkout
 *   (`deno task` runs there and passes the caller's directory as `INIT_CWD`).
 *
 * Commands that act on a project find it: `--project DIR` when given, otherwise the nearest
 * directory, from where the user stands upward, that holds `supabase/config.toml`. A printed
 * command names `--project` only when the project would not be found from where the user runs
 * it: where they stand (npm, binary), or the kit's checkout (`deno task`), where every project
 * but the kit's own needs it.
 *
 * @module
 */
import { join, relative, resolve } from 'node:path';
import { isCompiled } from '../lib/sql/deno_executable.ts';
import { KIT_ROOT } from './_project.ts';

/** The kit commands that act on a project (`--project DIR`); the others need only a database. */
export const PROJECT_COMMANDS: ReadonlySet<string> = new Set([
  'install',
  'scaffold-queue',
  'compile',
  'db:push',
  'serve',
  'doctor',
]);

/** What marks a Supabase project's root (`supabase init` writes it). */
const CONFIG = join('supabase', 'config.toml');

/**
 * No Supabase project where the command looked: the message says where and what to do.
 *
 * @example
 * ```ts
 * import { ProjectNotFoundError } from './_invocation.ts';
 * console.assert(new ProjectNotFoundError('x').name === 'ProjectNotFoundError');
 * ```
 */
export class ProjectNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProjectNotFoundError';
  }
}

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined; // no env permission
  }
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * The directory the user ran the command from. `deno task` of a checkout runs in the kit's
 * directory and passes the caller's as `INIT_CWD` (npm and npx set it too); anywhere else (npm's
 * shim, the compiled binary, `deno run` of a script) the current directory is the user's, and an
 * `INIT_CWD` there may be left over from some outer tool.
 *
 * @example
 * ```ts
 * import { userDirectory } from './_invocation.ts';
 * console.log(userDirectory());
 * ```
 */
export function userDirectory(): string {
  const cwd = Deno.cwd();
  if (!isCompiled() && resolve(cwd) === resolve(KIT_ROOT)) {
    const init = env('INIT_CWD');
    if (init) return resolve(init);
  }
  return cwd;
}

/**
 * The nearest directory from `start` upward that holds `supabase/config.toml`, or null.
 *
 * @example
 * ```ts
 * import { nearestProject } from './_invocation.ts';
 * console.log(nearestProject('.') ?? 'not in a Supabase project');
 * ```
 */
export function nearestProject(start: string): string | null {
  let dir = resolve(start);
  for (;;) {
    if (isFile(join(dir, CONFIG))) return dir;
    const up = resolve(dir, '..');
    if (up === dir) return null;
    dir = up;
  }
}

/**
 * The project the last {@linkcode findProject} returned: its directory, the `--project` the user
 * gave for it (as typed) and where the user stood.
 */
let current: { dir: string; explicit?: string; from: string } | null = null;

/**
 * The project directory (absolute) a command acts on: `explicit` (`--project DIR`, relative to
 * where the user stands), which must hold `supabase/config.toml`; otherwise the nearest
 * directory from `start` (default: {@linkcode userDirectory}) upward that holds one. Either
 * failing is a {@linkcode ProjectNotFoundError} naming the path and the rule. The project is
 * remembered for the commands {@linkcode userCommand} prints.
 *
 * @example
 * ```ts
 * import { findProject } from './_invocation.ts';
 * console.log(findProject());              // from where the user stands
 * console.log(findProject('../my-app'));   // --project ../my-app
 * ```
 */
export function findProject(explicit?: string, start?: string): string {
  const from = start === undefined ? userDirectory() : resolve(start);
  if (explicit !== undefined) {
    if (explicit.trim() === '') {
      throw new ProjectNotFoundError(
        '--project "" is empty: give the directory of a Supabase project (it holds ' +
          'supabase/config.toml), or leave --project out to use the one you are in',
      );
    }
    const dir = resolve(from, explicit);
    if (!isFile(join(dir, CONFIG))) {
      throw new ProjectNotFoundError(
        `--project ${explicit}: ${join(dir, CONFIG)} is missing; a Supabase project holds ` +
          'supabase/config.toml: pass the directory of one, or run `supabase init` there first',
      );
    }
    current = { dir, explicit, from };
    return dir;
  }
  const dir = nearestProject(from);
  if (dir === null) {
    throw new ProjectNotFoundError(
      `no Supabase project in ${from} or any directory above it (none holds ` +
        'supabase/config.toml): run the command from inside a Supabase project, create one ' +
        'there with `supabase init`, or pass --project DIR',
    );
  }
  current = { dir, from };
  return dir;
}

/** How the kit was started, for the command lines it prints. */
export type InvocationMode = 'npm' | 'compiled' | 'checkout';

/**
 * How the kit is running: `npm` (the npm package's shim set `SWITCHYARD_INVOCATION`),
 * `compiled` (the `switchyard` binary) or `checkout` (`deno task` or `deno run` in the kit).
 *
 * @example
 * ```ts
 * import { invocationMode } from './_invocation.ts';
 * console.log(invocationMode());
 * ```
 */
export function invocationMode(): InvocationMode {
  if (env('SWITCHYARD_INVOCATION')) return 'npm';
  return isCompiled() ? 'compiled' : 'checkout';
}

/**
 * A command's name as its usage line writes it where the user stands: `npx switchyard install`
 * (npm), `switchyard install` (the binary), `deno task install` (a checkout).
 *
 * @example
 * ```ts
 * import { commandName } from './_invocation.ts';
 * console.log(`usage: ${commandName('compile')} [--project DIR] [--check]`);
 * ```
 */
export function commandName(name: string): string {
  const mode = invocationMode();
  if (mode === 'npm') return `${env('SWITCHYARD_INVOCATION')!.trim()} ${name}`;
  return mode === 'compiled' ? `switchyard ${name}` : `deno task ${name}`;
}

/** A path as a shell word: quoted when it holds anything a shell would read otherwise. */
function shellWord(text: string): string {
  return /^[\w./:@%+=,~-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command line a user types to run kit command `name` with `args` where they stand:
 * `npx switchyard compile` under the npm package (what `SWITCHYARD_INVOCATION` says),
 * `switchyard compile` from the binary, `npx -y deno@2 task compile` from a checkout. A command
 * that acts on a project ({@linkcode PROJECT_COMMANDS}) gets `--project <dir>` when the project
 * would not be found where the command runs (see the module docs): the `--project` the user
 * gave, else the project's path. The project is the one {@linkcode findProject} returned last,
 * or `options.project` (a path as the user gave it, or the project's directory; `.` adds
 * nothing). `args` are written as given.
 *
 * @example
 * ```ts
 * import { userCommand } from './_invocation.ts';
 * console.log(userCommand('scaffold-queue', ['<queue>']));
 * console.log(userCommand('resume', ['greetings-worker']));
 * console.log(userCommand('db:push', [], { project: '../my-app' }));
 * ```
 */
export function userCommand(
  name: string,
  args: readonly string[] = [],
  options: { project?: string } = {},
): string {
  const mode = invocationMode();
  const prefix = mode === 'npm'
    ? env('SWITCHYARD_INVOCATION')!.trim()
    : mode === 'compiled'
    ? 'switchyard'
    : 'npx -y deno@2 task';
  const words = [prefix, name, ...args];
  if (PROJECT_COMMANDS.has(name)) {
    const given = options.project;
    const flag = given === undefined
      ? (current === null ? null : projectFlag(current, mode))
      : current !== null && resolve(current.from, given) === current.dir
      ? projectFlag(current, mode)
      : given === '.'
      ? null
      : given;
    if (flag !== null) words.push('--project', shellWord(flag));
  }
  return words.join(' ');
}

/**
 * The `--project` a printed command needs for the project `p`, or null. From the npm package
 * and the binary the user runs it where they stand: none when the project is found from there,
 * else the `--project` they gave. From a checkout the command is a `deno task` of the kit, run in
 * the kit's directory: none for the kit's own project, else the `--project` the user gave (taken
 * from where they run it, as before), else the project's absolute path.
 */
function projectFlag(
  p: { dir: string; explicit?: string; from: string },
  mode: InvocationMode,
): string | null {
  if (mode !== 'checkout') return nearestProject(p.from) === p.dir ? null : (p.explicit ?? p.dir);
  if (p.dir === resolve(KIT_ROOT)) return null;
  return p.explicit ?? p.dir;
}

/**
 * `command` run at the root of the project {@linkcode findProject} found: prefixed with
 * `cd <project> && ` when the user stands elsewhere.
 *
 * @example
 * ```ts
 * import { atProjectRoot } from './_invocation.ts';
 * console.log(atProjectRoot('npx deno run -A example.ts'));
 * ```
 */
export function atProjectRoot(command: string): string {
  if (current === null || current.from === current.dir) return command;
  const path = current.explicit ?? relative(current.from, current.dir);
  return `cd ${shellWord(path)} && ${command}`;
}

/**
 * The Deno command a user types for `args` where they stand: `npx deno …` under the npm package
 * (its `deno` dependency is in the project), else `npx -y deno@2 …`.
 *
 * @example
 * ```ts
 * import { denoCommand } from './_invocation.ts';
 * console.log(denoCommand('run -A --config supabase/functions/deno.json example.ts'));
 * ```
 */
export function denoCommand(args: string): string {
  return `${invocationMode() === 'npm' ? 'npx deno' : 'npx -y deno@2'} ${args}`;
}

/**
 * The Supabase CLI a user has, as {@linkcode supabaseCli} found it.
 *
 * @example
 * ```ts
 * import type { SupabaseCli } from './_invocation.ts';
 * const cli: SupabaseCli = { command: 'npx supabase', version: '3.1.0', major: 3 };
 * ```
 */
export interface SupabaseCli {
  /** How the user runs it: `npx supabase` (the project's npm package) or `supabase` (PATH). */
  command: string;
  /** Its `--version`, or null when none was found. */
  version: string | null;
  /** Its major version, or null when unknown. */
  major: number | null;
}

async function versionOf(executable: string): Promise<string | null> {
  try {
    const out = await new Deno.Command(executable, {
      args: ['--version'],
      stdout: 'piped',
      stderr: 'null',
      stdin: 'null',
      env: { NO_COLOR: '1', DO_NOT_TRACK: '1', SUPABASE_TELEMETRY_DISABLED: '1' },
      signal: AbortSignal.timeout(20_000),
    }).output();
    if (!out.success) return null;
    return /\b(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\b/.exec(new TextDecoder().decode(out.stdout))
      ?.[1] ?? null;
  } catch {
    return null; // not there, not runnable, no permission, or too slow
  }
}

/**
 * The version of the npm package `supabase` whose bin `local` is (`node_modules/.bin/supabase`
 * links into it): the package's version is the CLI's. Null when the link leads elsewhere, so
 * the caller asks the executable instead. Reading it spares starting the CLI (over a CPU second).
 */
export function npmPackageVersion(local: string): string | null {
  try {
    let dir = resolve(Deno.realPathSync(local), '..');
    for (let depth = 0; depth < 3; depth++, dir = resolve(dir, '..')) {
      const file = join(dir, 'package.json');
      if (!isFile(file)) continue;
      const manifest = JSON.parse(Deno.readTextFileSync(file));
      if (manifest?.name !== 'supabase') return null;
      const version = String(manifest.version ?? '');
      return /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/.test(version) ? version : null;
    }
    return null;
  } catch {
    return null;
  }
}

const found = new Map<string, Promise<SupabaseCli>>();

/**
 * The Supabase CLI the user runs for `projectDir` (default: where the user stands), found once
 * per process: the project's npm package (`node_modules/.bin/supabase` there or above, what
 * `npx supabase` runs; its version from the package's manifest), else `supabase` on PATH, asked
 * for `--version`. None found: version and major null, and the command `npx supabase` under the
 * npm package, else `supabase`.
 *
 * @example
 * ```ts
 * import { supabaseCli } from './_invocation.ts';
 * const cli = await supabaseCli('../my-app');
 * console.log(cli.command, cli.version ?? 'not found');
 * ```
 */
export function supabaseCli(projectDir?: string): Promise<SupabaseCli> {
  const start = resolve(projectDir ?? userDirectory());
  let detection = found.get(start);
  if (!detection) {
    detection = (async (): Promise<SupabaseCli> => {
      for (let dir = start;; dir = resolve(dir, '..')) {
        const local = join(dir, 'node_modules', '.bin', 'supabase');
        if (isFile(local)) {
          const version = npmPackageVersion(local) ?? await versionOf(local);
          if (version !== null) return { command: 'npx supabase', version, major: major(version) };
        }
        if (resolve(dir, '..') === dir) break;
      }
      const version = await versionOf('supabase');
      if (version !== null) return { command: 'supabase', version, major: major(version) };
      return {
        command: invocationMode() === 'npm' ? 'npx supabase' : 'supabase',
        version: null,
        major: null,
      };
    })();
    found.set(start, detection);
  }
  return detection;
}

function major(version: string): number {
  return Number(version.split('.')[0]);
}

/**
 * The flag of `supabase db push` and `supabase migration repair` that targets the linked
 * (hosted) project: `--linked` up to CLI 2 (CLI 2 refuses `--remote`), `--remote` from CLI 3 (which
 * targets the local database by default and still takes `--linked`, deprecated until CLI 4);
 * unknown, `--linked`, which both take.
 *
 * @example
 * ```ts
 * import { remoteFlag } from './_invocation.ts';
 * console.assert(remoteFlag(2) === '--linked' && remoteFlag(3) === '--remote');
 * ```
 */
export function remoteFlag(major: number | null): '--linked' | '--remote' {
  return major !== null && major >= 3 ? '--remote' : '--linked';
}

/**
 * `supabase <words>` against the linked project, for the user's CLI: `supabase db push --linked`
 * (CLI 2), `npx supabase db push --remote` (CLI 3 from the project's npm package). `more.then`
 * follows the flag (`--status applied …`). With an unknown CLI it is the `--linked` form both
 * majors take, and an aside in parentheses says CLI 3's; `more.aside` (words for the reader)
 * joins it there.
 *
 * @example
 * ```ts
 * import { supabaseRemote } from './_invocation.ts';
 * const cli = { command: 'supabase', version: '3.1.0', major: 3 };
 * console.assert(supabaseRemote(cli, 'db push') === 'supabase db push --remote');
 * const unknown = { command: 'supabase', version: null, major: null };
 * console.log(supabaseRemote(unknown, 'db push', { aside: 'the migrations first' }));
 * // supabase db push --linked (Supabase CLI 3: --remote; the migrations first)
 * ```
 */
export function supabaseRemote(
  cli: SupabaseCli,
  words: string,
  more: { then?: string; aside?: string } = {},
): string {
  const asides = [cli.major === null ? 'Supabase CLI 3: --remote' : '', more.aside ?? '']
    .filter((a) => a !== '');
  const command = `${cli.command} ${words} ${remoteFlag(cli.major)}${
    more.then ? ` ${more.then}` : ''
  }`;
  return asides.length === 0 ? command : `${command} (${asides.join('; ')})`;
}
