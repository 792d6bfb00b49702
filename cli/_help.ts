/**
 * `--help` for the kit's commands that take no other options parser.
 *
 * @module
 */

/**
 * Prints `usage` and exits 0 when the command line asks for help (`--help` or `-h`).
 *
 * @example
 * ```ts
 * import { helpOption } from './_help.ts';
 * helpOption('usage: deno task demo');
 * ```
 */
export function helpOption(usage: string, args: readonly string[] = commandArgs()): void {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage);
    Deno.exit(0);
  }
}

let dispatched: string[] | null = null;

/**
 * The arguments of the running command: `Deno.args`, or under the one `switchyard` command
 * (cli/cli.ts) what follows the command's name there.
 *
 * @example
 * ```ts
 * import { commandArgs } from './_help.ts';
 * console.log(commandArgs().join(' '));
 * ```
 */
export function commandArgs(): string[] {
  return [...(dispatched ?? Deno.args)];
}

/**
 * Sets what {@linkcode commandArgs} returns, before cli/cli.ts loads a command's module.
 *
 * @example
 * ```ts
 * import { commandArgs, setCommandArgs } from './_help.ts';
 * setCommandArgs(['greetings-worker']);
 * console.assert(commandArgs()[0] === 'greetings-worker');
 * ```
 */
export function setCommandArgs(args: readonly string[]): void {
  dispatched = [...args];
}
