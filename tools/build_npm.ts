/**
 * `deno task build-npm [--output DIR] [--pack]`: the npm package `@switchyard/switchyard`, built
 * from this checkout (docs/design/local-runs.md#the-switchyard-command). It gives a Node user two
 * things:
 *
 * - the `switchyard` command (`npx switchyard <command>` in a project that installed the package
 *   as `switchyard`, or `npx @switchyard/switchyard <command>`): `bin/switchyard.mjs`, a small
 *   Node script that runs the kit's own `cli/cli.ts` (under `kit/`, with the files its
 *   commands read: the runtime, the SQL core, templates, the PGMQ-compatible layer, the import
 *   map and lock) on the Deno binary of npm's `deno` package, a dependency: nothing is downloaded
 *   from outside the npm registry;
 * - the flow DSL, the typed client, the error classes and the test engine for Node apps
 *   (`switchyard`, `switchyard/client`, `switchyard/errors`, `switchyard/testing`), as JavaScript
 *   with declaration files, built from `lib/` by `tools/_npm_node.ts`.
 *
 * `--pack` runs `npm pack` on the result and prints the tarball's path.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join, relative, resolve } from 'node:path';
import { KIT_VERSION, moduleGraph } from '../cli/_kit.ts';
import { copyTree, KIT_ROOT } from '../cli/_project.ts';
import { helpOption } from '../cli/_help.ts';
import { EMBEDDED } from './build_cli.ts';
import { buildNodeEntries, nodeDependencies } from './_npm_node.ts';

/** The package's name on npm (and JSR, deno.json's `name`). */
export const NPM_NAME = '@switchyard/switchyard';

const USAGE = `usage: deno task build-npm [--output DIR] [--pack]

Writes the npm package ${NPM_NAME} (the switchyard command, and the flow DSL, client and
errors for Node) into DIR (default: dist/npm); --pack also runs npm pack there and prints the tarball.`;

/** The Node script behind `switchyard`: finds npm's Deno and runs the kit's CLI with it. */
const BIN = `#!/usr/bin/env node
// The switchyard command of the npm package: runs the kit's cli/cli.ts on the Deno binary
// of npm's deno package (or SWITCHYARD_DENO), in the caller's directory, with its arguments.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const kit = join(root, 'kit');

function deno() {
  if (process.env.SWITCHYARD_DENO) return process.env.SWITCHYARD_DENO;
  let dir;
  try {
    dir = dirname(require.resolve('deno/package.json'));
  } catch {
    console.error('error: npm\\'s deno package is missing (a dependency of ${NPM_NAME}): ' +
      'reinstall the package (npm install), or set SWITCHYARD_DENO to a Deno 2 binary');
    process.exit(1);
  }
  const exe = join(dir, process.platform === 'win32' ? 'deno.exe' : 'deno');
  if (existsSync(exe)) return exe;
  // Installed with --ignore-scripts: the deno package finds its platform binary itself.
  return require(join(dir, 'install_api.cjs')).runInstall();
}

// What the user typed, for the commands the kit prints: the package's folder is the name it was
// installed under (\`switchyard\` for npm install switchyard@npm:${NPM_NAME}).
const invocation = basename(dirname(root)) === '@switchyard'
  ? 'npx ${NPM_NAME}'
  : \`npx \${basename(root)}\`;
const result = spawnSync(deno(), [
  'run', '-A', '--quiet',
  '--config', join(kit, 'deno.json'),
  '--lock', join(kit, 'deno.lock'), '--frozen',
  join(kit, 'cli', 'cli.ts'),
  ...process.argv.slice(2),
], {
  stdio: 'inherit',
  env: {
    ...process.env,
    SWITCHYARD_INVOCATION: process.env.SWITCHYARD_INVOCATION ?? invocation,
    DENO_NO_UPDATE_CHECK: '1',
  },
});
if (result.error) {
  console.error(\`error: cannot run Deno for switchyard: \${result.error.message}\`);
  process.exit(1);
}
process.exit(result.status ?? 1);
`;

/**
 * The kit files the CLI needs, relative to the kit: every local module `cli/cli.ts` loads
 * (its commands are literal dynamic imports, so the graph has them all) and what the commands
 * read at run time (the compiled binary's list, `EMBEDDED`), without the runtime file list the
 * binary alone needs.
 *
 * @example
 * ```ts
 * import { cliFiles } from './build_npm.ts';
 * console.log((await cliFiles()).length, 'files and folders');
 * ```
 */
export async function cliFiles(): Promise<string[]> {
  const graph = await moduleGraph(join(KIT_ROOT, 'cli', 'cli.ts'), {
    config: join(KIT_ROOT, 'deno.json'),
  });
  const modules = graph.flatMap((m) => (m.local ? [relative(KIT_ROOT, m.local)] : []));
  const read = EMBEDDED.filter((e) => !e.startsWith('dist/'));
  const outside = modules.filter((m) => m.startsWith('..'));
  if (outside.length > 0) {
    throw new Error(`cli/cli.ts loads modules outside the kit: ${outside.join(', ')}`);
  }
  return [...new Set([...read, ...modules.filter((m) => !read.some((r) => inside(m, r)))])]
    .sort();
}

const inside = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

/**
 * Writes the npm package into `outDir` (emptied first) and returns its package.json.
 *
 * @example
 * ```ts
 * import { buildNpm } from './build_npm.ts';
 * const pkg = await buildNpm('/tmp/switchyard-npm');
 * console.log(pkg.name, pkg.version);
 * ```
 */
export async function buildNpm(outDir: string): Promise<Record<string, unknown>> {
  await Deno.remove(outDir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  await Deno.mkdir(outDir, { recursive: true });
  for (const file of await cliFiles()) {
    await copyTree(join(KIT_ROOT, file), join(outDir, 'kit', file));
  }
  await Deno.mkdir(join(outDir, 'bin'));
  await Deno.writeTextFile(join(outDir, 'bin', 'switchyard.mjs'), BIN, { mode: 0o755 });
  const exports = await buildNodeEntries(outDir);
  for (const file of ['LICENSE', 'README.md', 'CHANGELOG.md']) {
    await Deno.copyFile(join(KIT_ROOT, file), join(outDir, file)).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound) || file !== 'CHANGELOG.md') throw e;
    });
  }
  const pkg = {
    name: NPM_NAME,
    version: KIT_VERSION,
    description: 'Durable multi-step workflows on Supabase (PostgreSQL + PGMQ) with explicit ' +
      'shared queues: the switchyard command, and the flow DSL, typed client and errors for ' +
      'Node apps',
    license: 'Apache-2.0',
    keywords: ['supabase', 'workflows', 'pgmq', 'postgres', 'durable', 'queue', 'edge-functions'],
    type: 'module',
    bin: { switchyard: 'bin/switchyard.mjs' },
    exports: { ...exports, './package.json': './package.json' },
    files: ['bin/', 'kit/', 'node/', 'LICENSE', 'README.md', 'CHANGELOG.md'],
    // Node 20: the client's JSON checks use ES2024's well-formed strings (tools/_npm_node.ts).
    engines: { node: '>=20' },
    dependencies: {
      // The Deno that runs the CLI: the one this package was built and tested with.
      deno: Deno.version.deno,
      ...await nodeDependencies(),
    },
  };
  await Deno.writeTextFile(join(outDir, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
  return pkg;
}

/**
 * `npm pack` in `dir` (the tarball written into `into`, default `dir`); returns its path.
 *
 * @example
 * ```ts
 * import { buildNpm, npmPack } from './build_npm.ts';
 * await buildNpm('/tmp/switchyard-npm');
 * console.log(await npmPack('/tmp/switchyard-npm'));
 * ```
 */
export async function npmPack(dir: string, into: string = dir): Promise<string> {
  const out = await new Deno.Command('npm', {
    args: ['pack', '--json', '--pack-destination', into],
    cwd: dir,
    stdout: 'piped',
    stderr: 'piped',
    stdin: 'null',
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`npm pack failed: ${new TextDecoder().decode(out.stderr).trim() || text}`);
  }
  const [{ filename }] = JSON.parse(text) as { filename: string }[];
  return join(into, filename);
}

if (import.meta.main) {
  helpOption(USAGE);
  let values: { output?: string; pack?: boolean };
  try {
    values = parseArgs({
      args: Deno.args,
      options: { output: { type: 'string' }, pack: { type: 'boolean' } },
    }).values;
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    Deno.exit(2);
  }
  const out = resolve(values.output ?? join(KIT_ROOT, 'dist', 'npm'));
  try {
    const pkg = await buildNpm(out);
    console.log(`built ${pkg.name}@${pkg.version} in ${out}`);
    if (values.pack) console.log(await npmPack(out));
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
