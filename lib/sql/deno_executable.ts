/**
 * Which `deno` runs a child process (the Supabase CLI from npm, a project's own TypeScript).
 * From `deno run` that is the running `deno` itself; from the compiled `switchyard` command
 * (`deno task build-cli`, docs/ARCHITECTURE.md §8.2) `Deno.execPath()` is that binary, which
 * runs only its embedded code, so it is `SWITCHYARD_DENO` when set, else a `deno` on PATH.
 *
 * @module
 */

/** Whether this process is a `deno compile`d binary. */
export function isCompiled(): boolean {
  return (Deno.build as { standalone?: boolean }).standalone === true;
}

let found: Promise<string> | undefined;

/**
 * The path or name of the `deno` to spawn for `purpose` (named in the error). Outside a compiled
 * binary: `Deno.execPath()`. Inside one: `SWITCHYARD_DENO`, else `deno` on PATH, checked with
 * `deno --version`; none found is an error saying what needs it and how to provide it.
 *
 * @example
 * ```ts
 * import { denoExecutable } from './deno_executable.ts';
 * const deno = await denoExecutable('deno info');
 * await new Deno.Command(deno, { args: ['--version'] }).output();
 * ```
 */
export function denoExecutable(purpose: string): Promise<string> {
  if (!isCompiled()) return Promise.resolve(Deno.execPath());
  found ??= (async () => {
    const wanted = Deno.env.get('SWITCHYARD_DENO') || 'deno';
    try {
      const out = await new Deno.Command(wanted, {
        args: ['--version'],
        stdout: 'piped',
        stderr: 'null',
        stdin: 'null',
      }).output();
      if (out.success && /^deno 2\./.test(new TextDecoder().decode(out.stdout))) return wanted;
    } catch { /* not found or not executable */ }
    found = undefined;
    throw new Error(
      `no Deno 2 found (${
        Deno.env.get('SWITCHYARD_DENO') ? `SWITCHYARD_DENO=${wanted}` : '`deno` on PATH'
      }): the compiled switchyard command runs ${purpose} with a separate Deno 2; install ` +
        'one (https://deno.com) or set SWITCHYARD_DENO to its path',
    );
  })();
  return found;
}
