/**
 * The port of `deno task serve` (cli/serve.ts): the same on every restart, so a page, an app's
 * `SUPABASE_URL` or a curl line written once keeps working (issue 37, item 7).
 *
 * - `--port N` (or `PORT`) is used as given; taken, it is refused, naming it.
 * - Otherwise the port the project's last serve used (`supabase/.temp/switchyard-serve-port`,
 *   in the Supabase CLI's own scratch folder, which it keeps out of version control), else
 *   54321, the port `supabase start` and `supabase functions serve` answer on: the first of
 *   those that is free. When neither is, a free port. The port chosen is written to that file,
 *   so the next serve takes it again.
 *
 * @module
 */
import { dirname, join } from 'node:path';
import { freePort, readOrNull } from './_util.ts';

/** The port Supabase's local API gateway answers on; serve's default. */
export const DEFAULT_SERVE_PORT = 54321;

/** Where serve keeps its port, relative to the project. */
export const SERVE_PORT_FILE = 'supabase/.temp/switchyard-serve-port';

/** What {@linkcode chooseServePort} decided, and why when it is not the expected port. */
export interface ServePort {
  port: number;
  /** A line for the log when the port is not the one the user would expect, else null. */
  note: string | null;
}

/**
 * Whether nothing listens on 127.0.0.1:`port` right now.
 *
 * @example
 * ```ts
 * import { DEFAULT_SERVE_PORT, portIsFree } from './_serve_port.ts';
 * console.log(portIsFree(DEFAULT_SERVE_PORT) ? 'free' : 'taken');
 * ```
 */
export function portIsFree(port: number): boolean {
  try {
    Deno.listen({ hostname: '127.0.0.1', port }).close();
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse || e instanceof Deno.errors.PermissionDenied) {
      return false;
    }
    throw e;
  }
}

/**
 * The gateway's port for a project (see the module doc); `explicit` is `--port` or `PORT`.
 *
 * @example
 * ```ts
 * import { chooseServePort } from './_serve_port.ts';
 * const { port, note } = await chooseServePort('.', undefined);
 * if (note) console.error(note);
 * console.log(port);
 * ```
 */
export async function chooseServePort(
  projectDir: string,
  explicit: number | undefined,
): Promise<ServePort> {
  if (explicit !== undefined) {
    if (!portIsFree(explicit)) {
      throw new Error(
        `port ${explicit} is in use (another serve, or \`supabase start\`?): stop what listens ` +
          'there, or pass --port with a free one',
      );
    }
    return { port: explicit, note: null };
  }
  const file = join(projectDir, SERVE_PORT_FILE);
  const text = (await readOrNull(file))?.trim() ?? '';
  const remembered = /^\d{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65535
    ? Number(text)
    : null;
  let port: number;
  let note: string | null = null;
  if (remembered !== null && portIsFree(remembered)) {
    port = remembered;
  } else if (portIsFree(DEFAULT_SERVE_PORT)) {
    port = DEFAULT_SERVE_PORT;
    if (remembered !== null && remembered !== DEFAULT_SERVE_PORT) {
      note = `port ${remembered}, the last serve's, is in use (another serve?): serving on ` +
        `${port}`;
    }
  } else {
    port = freePort();
    note =
      `port ${remembered ?? DEFAULT_SERVE_PORT}${
        remembered === null ? '' : ", the last serve's,"
      } is in use (another serve, or \`supabase start\`?): serving on ${port}, kept in ` +
      `${SERVE_PORT_FILE} for the next serve (--port N chooses)`;
  }
  if (port !== remembered) {
    await Deno.mkdir(dirname(file), { recursive: true });
    await Deno.writeTextFile(file, `${port}\n`);
  }
  return { port, note };
}
