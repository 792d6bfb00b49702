/**
 * `deno task build-cli [--output PATH]`: compiles cli/cli.ts into one `switchyard` binary
 * (default `dist/switchyard`) that carries the kit, so it installs and operates a project
 * without a checkout (docs/design/local-runs.md#the-switchyard-command). It embeds, with
 * `deno compile --include`,
 * what the commands read at run time: `lib/` (the runtime the installer copies), the SQL core
 * migrations, `cli/templates/`, the registry probe, the PGMQ-compatible layer, `deno.json`,
 * `import_map.json` and `deno.lock` (the versions the installer pins); and
 * `dist/runtime_modules.json`, the runtime's file list, computed here with `deno info` because
 * the binary cannot hand its embedded files to another process.
 *
 * `deno compile` takes its base runtime (`denort`) from Deno's download server, or from the
 * file `DENORT_BIN` names; without either the build fails, saying so.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { RUNTIME_LIST, runtimeModules } from '../cli/_kit.ts';
import { KIT_ROOT } from '../cli/_project.ts';
import { helpOption } from '../cli/_help.ts';

const USAGE = `usage: deno task build-cli [--output PATH]

Compiles the switchyard command (cli/cli.ts) with the kit embedded into PATH
(default: dist/switchyard). Needs denort: Deno's download server, or DENORT_BIN=/path/to/denort.`;

/** What the binary reads at run time, relative to the kit. */
export const EMBEDDED = [
  'lib',
  'supabase/migrations',
  'cli/templates',
  'cli/_registry_probe.ts',
  'pgmq_compat',
  'deno.json',
  'import_map.json',
  'deno.lock',
  RUNTIME_LIST,
];

/**
 * Writes {@linkcode RUNTIME_LIST}, the runtime's module list the binary reads instead of running
 * `deno info` on its embedded files (no other process can read those); returns its path.
 *
 * @example
 * ```ts
 * import { writeRuntimeList } from './build_cli.ts';
 * console.log(await writeRuntimeList());
 * ```
 */
export async function writeRuntimeList(): Promise<string> {
  const list = join(KIT_ROOT, RUNTIME_LIST);
  await Deno.mkdir(dirname(list), { recursive: true });
  await Deno.writeTextFile(list, JSON.stringify(await runtimeModules(), null, 2) + '\n');
  return list;
}

/**
 * Builds the binary at `output` and checks it answers `--help` as switchyard; throws with
 * `deno compile`'s own words when it fails, and removes a binary that runs as something else.
 *
 * @example
 * ```ts
 * import { buildCli } from './build_cli.ts';
 * await buildCli('/tmp/switchyard');
 * ```
 */
export async function buildCli(output: string): Promise<void> {
  await writeRuntimeList();
  const args = ['compile', '-A', '--no-check', '--output', output];
  for (const entry of EMBEDDED) args.push('--include', entry);
  args.push('cli/cli.ts');
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: KIT_ROOT,
    stdout: 'piped',
    stderr: 'piped',
    stdin: 'null',
    env: { NO_COLOR: '1' },
  }).output();
  const text = (new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr))
    .trim();
  if (!out.success) {
    const offline = /denort/.test(text) && !Deno.env.get('DENORT_BIN');
    throw new Error(
      `deno compile failed:\n${text}${
        offline
          ? '\nhint: deno compile downloads its base runtime (denort); where that server is ' +
            'out of reach, set DENORT_BIN to a denort binary of this Deno version'
          : ''
      }`,
    );
  }
  // A DENORT_BIN naming a full `deno` (npm's deno package ships only that) builds without a
  // word, but the result ignores what it carries and runs as plain deno: refuse it.
  const help = await new Deno.Command(output, {
    args: ['--help'],
    stdout: 'piped',
    stderr: 'piped',
    stdin: 'null',
    env: { NO_COLOR: '1' },
  }).output().catch((e: Error) => ({
    success: false,
    stdout: new TextEncoder().encode(e.message),
  }));
  const said = new TextDecoder().decode(help.stdout);
  if (!help.success || !said.startsWith('switchyard ')) {
    await Deno.remove(output).catch(() => {});
    throw new Error(
      `the built ${output} does not run as switchyard (its --help printed ` +
        `${JSON.stringify(said.split('\n')[0])})${
          Deno.env.get('DENORT_BIN')
            ? `: DENORT_BIN=${Deno.env.get('DENORT_BIN')} is not a denort (a full deno ` +
              'ignores what deno compile appends); point it at the denort of this Deno version'
            : ''
        }; it was removed`,
    );
  }
}

if (import.meta.main) {
  helpOption(USAGE);
  let output: string;
  try {
    const { values } = parseArgs({ args: Deno.args, options: { output: { type: 'string' } } });
    output = resolve(values.output ?? join(KIT_ROOT, 'dist', 'switchyard'));
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    Deno.exit(2);
  }
  try {
    await buildCli(output);
    console.log(`built ${output}: run \`${output} --help\``);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
