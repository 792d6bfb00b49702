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
export function helpOption(usage: string, args: readonly string[] = Deno.args): void {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage);
    Deno.exit(0);
  }
}
