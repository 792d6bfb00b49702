/**
 * Which `deno` runs a child process (the Supabase CLI from npm, a project's own TypeScript).
 * From `deno run` that is the running `deno` itself; from the compiled `switchyard` command
 * (`deno task build-cli`, docs/design/local-runs.md#the-switchyard-command) `Deno.execPath()` is
 * that binary, which
 * runs only its embedded code, so it is `SWITCHYARD_DENO` when set, else a `deno` on PATH.
 *
 * @module
 */

/** Whether this process is a `deno compile`d binary. */
export function isCompiled(): boolean {
  return (Deno.build as { standalone?: boolean }).standalone === true;
}

/**
 * A Deno 2 other than this process, for `purpose` (named in the error): `SWITCHYARD_DENO` when
 * set, else `deno` on PATH, checked with `deno --version`. None found is an error saying what
 * needs it and how to provide one.
 *
 * @example
 * ```ts
 * import { separateDeno } from './deno_executable.ts';
 * console.log(await separateDeno('the registry probe'));
 * ```
 */
export async function separateDeno(purpose: string): Promise<string> {
  const set = Deno.env.get('SWITCHYARD_DENO');
  const wanted = set || 'deno';
  let seen = 'not found';
  try {
    const out = await new Deno.Command(wanted, {
      args: ['--version'],
      stdout: 'piped',
      stderr: 'null',
      stdin: 'null',
    }).output();
    const first = new TextDecoder().decode(out.stdout).split('\n')[0].trim();
    if (out.success && /^deno 2\./.test(first)) return wanted;
    seen = first ? `it says "${first.slice(0, 60)}"` : `exit code ${out.code}`;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) seen = (e as Error).message.slice(0, 100);
  }
  throw new Error(
    `no Deno 2 found (${
      set ? `SWITCHYARD_DENO=${set.slice(0, 200)}` : '`deno` on PATH'
    }: ${seen}): ` +
      `the compiled switchyard command runs ${purpose} with a separate Deno 2; install one ` +
      '(https://deno.com) or set SWITCHYARD_DENO to its path',
  );
}

let found: Promise<string> | undefined;

/**
 * The path or name of the `deno` to spawn for `purpose`: `Deno.execPath()` outside a compiled
 * binary, {@linkcode separateDeno} inside one (found once per process).
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
  found ??= separateDeno(purpose).catch((e) => {
    found = undefined;
    throw e;
  });
  return found;
}
