/**
 * What the kit ships, shared by the installer, the release manifest and the scaffold
 * (docs/design/local-runs.md): its version, its SQL core migrations, the runtime modules
 * (everything
 * `lib/mod.ts`, `lib/client.ts`, `lib/errors.ts` and `lib/browser.ts` import, found with
 * `deno info --json`), the bare specifiers they use and the exact versions `deno.lock` pins for
 * them.
 *
 * @module
 */
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KIT_ROOT } from './_project.ts';
import { denoExecutable, isCompiled } from '../lib/sql/deno_executable.ts';

/**
 * The kit's release. `deno task release-manifest` snapshots the migrations under
 * `releases/<KIT_VERSION>/`; the installer records it in the project's manifest.
 *
 * @example
 * ```ts
 * import { KIT_VERSION } from './_kit.ts';
 * console.log(`switchyard ${KIT_VERSION}`);
 * ```
 */
export const KIT_VERSION = '0.4.0';

/**
 * Migrations the scaffold writes (`<timestamp>_register_<queue>_worker.sql`): never part of the
 * SQL core, even when someone scaffolds inside the kit's own checkout.
 */
const SCAFFOLD_MIGRATION = /_register_[a-z0-9_]+_worker\.sql$/;

/**
 * Whether a file name in `supabase/migrations/` is a migration of the SQL core
 * (`<14-digit timestamp>_<name>.sql`, not one of the scaffold's registrations).
 *
 * @example
 * ```ts
 * import { isCoreMigration } from './_kit.ts';
 * console.assert(isCoreMigration('20261201000300_tables.sql'));
 * console.assert(!isCoreMigration('20261201093422_register_greetings_worker.sql'));
 * ```
 */
export function isCoreMigration(name: string): boolean {
  return /^\d{14}_.+\.sql$/.test(name) && !SCAFFOLD_MIGRATION.test(name);
}

/**
 * The file names of the kit's SQL core in `supabase/migrations/`, in the order they run
 * (`<14-digit timestamp>_<name>.sql`, without the scaffold's registration migrations).
 *
 * @example
 * ```ts
 * import { coreMigrations } from './_kit.ts';
 * console.log((await coreMigrations()).join('\n'));
 * ```
 */
export async function coreMigrations(kitDir: string = KIT_ROOT): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(join(kitDir, 'supabase', 'migrations'))) {
    if (entry.isFile && isCoreMigration(entry.name)) names.push(entry.name);
  }
  return names.sort();
}

/**
 * The SHA-256 of a text, in hex.
 *
 * @example
 * ```ts
 * import { sha256 } from './_kit.ts';
 * console.assert((await sha256('')).startsWith('e3b0c442'));
 * ```
 */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * One module of a module graph, as `deno info --json` reports it.
 *
 * @example
 * ```ts
 * import type { GraphModule } from './_kit.ts';
 * const m: GraphModule = { specifier: 'file:///p/a.ts', local: '/p/a.ts', bare: ['postgres'] };
 * ```
 */
export interface GraphModule {
  /** The module's URL (`file:`, `npm:`, `https:` …). */
  specifier: string;
  /** Its path on disk for a `file:` module, else null. */
  local: string | null;
  /** The bare specifiers it imports as written (`postgres`, `switchyard`), sorted. */
  bare: string[];
}

/**
 * Options of {@linkcode moduleGraph}: which configuration resolves the bare specifiers.
 *
 * @example
 * ```ts
 * import type { GraphOptions } from './_kit.ts';
 * const options: GraphOptions = { config: 'supabase/functions/a-worker/deno.json' };
 * ```
 */
export interface GraphOptions {
  /** A deno.json to resolve with (`--config`). */
  config?: string;
  /** An import map to resolve with (`--import-map`, no deno.json). */
  importMap?: string;
}

/** Whether a specifier as written is bare (resolved by an import map). */
function isBare(specifier: string): boolean {
  return !/^(\.{1,2}\/|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier);
}

/**
 * Every module `entry` loads (statically, types included), from `deno info --json`: the local
 * ones with their paths and the bare specifiers each imports. Npm packages appear as one
 * module each without a path.
 *
 * @example
 * ```ts
 * import { moduleGraph } from './_kit.ts';
 * import { KIT_ROOT } from './_project.ts';
 * const graph = await moduleGraph(`${KIT_ROOT}lib/mod.ts`, { config: `${KIT_ROOT}deno.json` });
 * console.log(graph.filter((m) => m.local).length, 'local modules');
 * ```
 */
export async function moduleGraph(
  entry: string,
  options: GraphOptions = {},
): Promise<GraphModule[]> {
  const args = ['info', '--json', '--no-lock'];
  if (options.config) args.push('--config', options.config);
  else args.push('--no-config');
  if (options.importMap) args.push('--import-map', options.importMap);
  args.push(resolve(entry));
  const out = await new Deno.Command(await denoExecutable('`deno info`'), {
    args,
    stdout: 'piped',
    stderr: 'piped',
    stdin: 'null',
    env: { NO_COLOR: '1' },
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `deno info ${entry} failed: ${new TextDecoder().decode(out.stderr).trim() || text}`,
    );
  }
  const info = JSON.parse(text) as {
    modules: {
      specifier: string;
      local?: string;
      error?: string;
      dependencies?: { specifier: string }[];
    }[];
  };
  const broken = info.modules.filter((m) => m.error);
  if (broken.length > 0) {
    throw new Error(
      `deno info ${entry}: ${broken.map((m) => `${m.specifier}: ${m.error}`).join('; ')}`,
    );
  }
  return info.modules.map((m) => ({
    specifier: m.specifier,
    local: m.specifier.startsWith('file:') ? (m.local ?? fileURLToPath(m.specifier)) : null,
    bare: [...new Set((m.dependencies ?? []).map((d) => d.specifier).filter(isBare))].sort(),
  }));
}

/**
 * The entries of the runtime, in `lib/`: `mod.ts` (queue functions, the run event stream),
 * `client.ts` (apps), `errors.ts` (every error class), `browser.ts` (`followRun`: `browser.js`,
 * which a page loads as it is, and its types) and `testing.ts` (the test engine a project's flow
 * tests import; a queue function never loads it, so a deployed function does not carry it).
 */
const RUNTIME_ENTRIES = ['mod.ts', 'client.ts', 'errors.ts', 'browser.ts', 'testing.ts'];

/** Where `deno task build-cli` records {@linkcode runtimeModules} for the compiled command. */
export const RUNTIME_LIST = 'dist/runtime_modules.json';

/**
 * The runtime of the kit: the paths, relative to `lib/`, of every module its entries
 * (`lib/mod.ts`, `lib/client.ts`, `lib/errors.ts`, `lib/browser.ts`, `lib/testing.ts`) load (what
 * a queue function, an app, a run event stream, a page and a flow's test need; operator and
 * development modules are left out), and the bare specifiers they import.
 *
 * @example
 * ```ts
 * import { runtimeModules } from './_kit.ts';
 * const { files, bare } = await runtimeModules();
 * console.log(files.length, 'files; imports', bare.join(', '));
 * ```
 */
export async function runtimeModules(
  kitDir: string = KIT_ROOT,
): Promise<{ files: string[]; bare: string[] }> {
  if (isCompiled() && resolve(kitDir) === resolve(KIT_ROOT)) {
    // The compiled command embeds lib/ where no other process can read it: `deno task
    // build-cli` wrote the list at build time (tools/build_cli.ts).
    return JSON.parse(await Deno.readTextFile(join(kitDir, RUNTIME_LIST)));
  }
  const lib = join(kitDir, 'lib');
  const local: GraphModule[] = [];
  for (const entry of RUNTIME_ENTRIES) {
    const graph = await moduleGraph(join(lib, entry), { config: join(kitDir, 'deno.json') });
    const mine = graph.filter((m) => m.local !== null);
    const outside = mine.filter((m) => relative(lib, m.local!).startsWith('..'));
    if (outside.length > 0) {
      throw new Error(
        `lib/${entry} loads modules outside lib/: ${outside.map((m) => m.local).join(', ')}`,
      );
    }
    local.push(...mine);
  }
  return {
    files: [...new Set(local.map((m) => relative(lib, m.local!).replaceAll('\\', '/')))].sort(),
    bare: [...new Set(local.flatMap((m) => m.bare))].sort(),
  };
}

/** The `specifiers` table of a deno.lock (`npm:postgres@3` → `3.4.9`), or `{}` without one. */
export async function lockedSpecifiers(lockPath: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await Deno.readTextFile(lockPath);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return {};
    throw e;
  }
  const lock = JSON.parse(text) as { specifiers?: Record<string, string> };
  return lock.specifiers ?? {};
}

/**
 * The exact form of an `npm:` or `jsr:` import as a lock resolved it: `npm:postgres@3` with
 * `{ "npm:postgres@3": "3.4.9" }` becomes `npm:postgres@3.4.9` (a sub-path is kept). Other
 * values, and values the lock does not know, come back unchanged.
 *
 * @example
 * ```ts
 * import { pinned } from './_kit.ts';
 * console.assert(pinned('npm:postgres@3', { 'npm:postgres@3': '3.4.9' }) === 'npm:postgres@3.4.9');
 * ```
 */
export function pinned(value: string, locked: Record<string, string>): string {
  const match = /^(npm|jsr):(@?[^@/]+(?:\/[^@/]+)?)(@[^/]*)?(\/.*)?$/.exec(value);
  if (!match) return value;
  const [, registry, name, range = '', path = ''] = match;
  const resolved = locked[`${registry}:${name}${range}`];
  if (!resolved) return value;
  // npm entries may carry peer-dependency suffixes: `0.2.17_@electric-sql+pglite@0.5.14`.
  const version = resolved.split('_')[0];
  return `${registry}:${name}@${version}${path}`;
}

/**
 * Whether an import-map value names an exact version (`npm:x@1.2.3`), a path or a URL.
 *
 * @example
 * ```ts
 * import { isExact } from './_kit.ts';
 * console.assert(isExact('npm:postgres@3.4.9') && !isExact('npm:postgres@3'));
 * ```
 */
export function isExact(value: string): boolean {
  const match = /^(npm|jsr):(@?[^@/]+(?:\/[^@/]+)?)(@[^/]*)?(\/.*)?$/.exec(value);
  if (!match) return true;
  return /^@\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(match[3] ?? '');
}
