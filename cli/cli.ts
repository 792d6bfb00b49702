/**
 * `switchyard <command> [args]`: the kit's user commands behind one entry, for the binary that
 * `deno task build-cli` compiles (docs/design/local-runs.md#the-switchyard-command), for the npm
 * package's
 * `npx switchyard <command>` (`deno task build-npm`) and for
 * `deno run -A cli/cli.ts <command>` from a checkout. Each command is the script its
 * `deno task` runs, with the same options, output and exit codes; the descriptions are the
 * tasks' own (deno.json). `switchyard --help` lists them, `switchyard <command> --help` gives
 * one's usage, `switchyard --version` the kit release.
 *
 * @module
 */
import config from '../deno.json' with { type: 'json' };
import { KIT_VERSION } from './_kit.ts';
import { setCommandArgs } from './_help.ts';
import { invocationMode, PROJECT_COMMANDS } from './_invocation.ts';

/** Runs a script whose module body is the command (it reads its arguments from `_help.ts`). */
function body(load: () => Promise<unknown>): (args: string[]) => Promise<number> {
  return async (args) => {
    setCommandArgs(args);
    await load();
    return 0;
  };
}

/**
 * The commands, by the name of their `deno task`. Each loads its script only when chosen (a
 * literal `import()`, so `deno compile` embeds it).
 */
export const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  'install': async (args) => (await import('./install.ts')).main(args),
  'scaffold-queue': async (args) => (await import('./scaffold_queue.ts')).main(args),
  'scaffold-webhook': async (args) => (await import('./scaffold_webhook.ts')).main(args),
  'compile': async (args) => (await import('./compile.ts')).main(args),
  'db:push': body(() => import('./db_push.ts')),
  'serve': async (args) => (await import('./serve.ts')).main(args),
  'pause': body(() => import('./pause.ts')),
  'resume': body(() => import('./resume.ts')),
  'quarantine': body(() => import('./quarantine.ts')),
  'fence': body(() => import('./fence.ts')),
  'drain': body(() => import('./drain.ts')),
  'keep-alive': async (args) => {
    setCommandArgs(args);
    return await (await import('./keep_alive.ts')).keepAliveCommand();
  },
  'prune': async (args) => {
    setCommandArgs(args);
    return await (await import('./prune.ts')).pruneCommand();
  },
  'cancel': body(() => import('./cancel.ts')),
  'retry': body(() => import('./retry.ts')),
  'rerun': body(() => import('./rerun.ts')),
  'fork': body(() => import('./fork.ts')),
  'move': body(() => import('./move.ts')),
  'export-run': body(() => import('./export_run.ts')),
  'schedule': body(() => import('./schedule.ts')),
  'trigger': body(() => import('./trigger.ts')),
  'dashboard': async (args) => (await import('./dashboard.ts')).dashboardCommand(args),
  'doctor': async (args) => {
    setCommandArgs(args);
    return await (await import('./doctor.ts')).doctorCommand();
  },
};

const tasks = config.tasks as Record<string, { description?: string }>;

/**
 * The text of `switchyard --help`: every command with its task's description.
 *
 * @example
 * ```ts
 * import { helpText } from './cli.ts';
 * console.log(helpText());
 * ```
 */
export function helpText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.keys(COMMANDS).map((name) =>
    `  ${name.padEnd(width)}  ${tasks[name]?.description ?? ''}`
  );
  const mode = invocationMode();
  const me = mode === 'npm' ? Deno.env.get('SWITCHYARD_INVOCATION')!.trim() : 'switchyard';
  const runtime = mode === 'npm'
    ? "It runs on the Deno of npm's deno package (a dependency of the package), or on\n" +
      'SWITCHYARD_DENO.'
    : 'The compiled command carries the kit (runtime, SQL core, templates). A few steps run a\n' +
      "separate Deno 2 (`deno` on PATH, or SWITCHYARD_DENO): loading the project's registry\n" +
      '(scaffold-queue, compile), the Supabase CLI (db:push) and the functions of serve.';
  return `switchyard ${KIT_VERSION}: durable workflows on Supabase PostgreSQL + PGMQ

usage: ${me} <command> [args]   (${me} <command> --help for one command)

Each command is the kit's \`deno task <command>\` with the same arguments. The project commands
(${[...PROJECT_COMMANDS].join(', ')}) act on the Supabase project you are in
(the nearest directory upward with supabase/config.toml), or on --project DIR (relative to
the current directory). Operator commands read DATABASE_URL.

commands:
${lines.join('\n')}

${runtime}`;
}

/**
 * Runs `switchyard <args>`; returns the exit code (commands that exit themselves do so).
 *
 * @example
 * ```ts
 * import { run } from './cli.ts';
 * Deno.exit(await run(['--help']));
 * ```
 */
export async function run(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(helpText());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === 'version') {
    console.log(`switchyard ${KIT_VERSION}`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(
      `error: unknown command ${JSON.stringify(name.slice(0, 60))}: use one of ${
        Object.keys(COMMANDS).join(', ')
      } (switchyard --help)`,
    );
    return 2;
  }
  return await command(rest);
}

if (import.meta.main) Deno.exit(await run(Deno.args));
