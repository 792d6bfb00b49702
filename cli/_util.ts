/**
 * Small file-system and network probes shared by the kit's scripts and tests, and the plan of
 * a file a command writes (the installer's and the scaffold's).
 *
 * @module
 */

/** Whether a path exists (any kind of entry). */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * A file's text, or null when there is no such file (other errors are thrown).
 *
 * @example
 * ```ts
 * import { readOrNull } from './_util.ts';
 * console.assert((await readOrNull('/no/such/file')) === null);
 * ```
 */
export async function readOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/**
 * A file a command means to write, compared with what is there before anything is written:
 * its path relative to the project, the content to write (the installer also plans removals,
 * as `Planned<string | null>` with null content) and the file's current text (null: absent).
 *
 * @example
 * ```ts
 * import type { Planned } from './_util.ts';
 * const plan: Planned = { path: 'supabase/config.toml', content: '', existing: null };
 * console.log(plan.existing === plan.content ? 'unchanged' : 'write');
 * ```
 */
export interface Planned<Content extends string | null = string> {
  /** Relative to the project directory. */
  path: string;
  /** What the file is to hold. */
  content: Content;
  /** What it holds now, or null when it does not exist. */
  existing: string | null;
}

/**
 * The names of the `.sql` files directly in `dir`, sorted; none when `dir` does not exist.
 *
 * @example
 * ```ts
 * import { sqlFileNames } from './_util.ts';
 * console.log(await sqlFileNames('supabase/migrations'));
 * ```
 */
export async function sqlFileNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith('.sql')) names.push(entry.name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return names.sort();
}

/** Picks a TCP port that is free right now on 127.0.0.1. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: '127.0.0.1', port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Whether something accepts TCP connections on 127.0.0.1 at `port`. */
export async function canConnect(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: '127.0.0.1', port });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * A migration timestamp (`YYYYMMDDHHMMSS`, UTC), as the Supabase CLI names migrations.
 *
 * @example
 * ```ts
 * import { migrationTimestamp } from './_util.ts';
 * console.assert(migrationTimestamp(new Date(Date.UTC(2026, 11, 1, 9, 5, 0))) === '20261201090500');
 * ```
 */
export function migrationTimestamp(date: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(date.getUTCFullYear(), 4)}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}` +
    `${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}`;
}

/**
 * The UTC time of a migration timestamp (`YYYYMMDDHHMMSS`).
 *
 * @example
 * ```ts
 * import { parseMigrationTimestamp } from './_util.ts';
 * console.assert(parseMigrationTimestamp('20261201090500').getUTCHours() === 9);
 * ```
 */
export function parseMigrationTimestamp(ts: string): Date {
  return new Date(Date.UTC(
    Number(ts.slice(0, 4)),
    Number(ts.slice(4, 6)) - 1,
    Number(ts.slice(6, 8)),
    Number(ts.slice(8, 10)),
    Number(ts.slice(10, 12)),
    Number(ts.slice(12, 14)),
  ));
}

/** How long {@linkcode migrationSlots} lets a command wait for the clock before it refuses. */
export const MAX_MIGRATION_WAIT_MS = 60_000;

/**
 * Where `count` new migrations go, one second apart: after the project's `newest` migration
 * (its 14-digit timestamp) and never after now. The last one is at most the second before the
 * current one, so a `supabase migration new` run afterwards (it names its file after the
 * current UTC time) always sorts after them. `waitMs` is how long the clock must run until the
 * last slot is in the past (0 almost always; up to `count` seconds right after a
 * `supabase migration new`; more when the newest migration is named after a future time).
 *
 * @example
 * ```ts
 * import { migrationSlots, migrationTimestamp } from './_util.ts';
 * const { first, waitMs } = migrationSlots('20261201090000', 3, new Date('2026-12-01T10:00:00Z'));
 * console.assert(migrationTimestamp(first) === '20261201095957' && waitMs === 0);
 * ```
 */
export function migrationSlots(
  newest: string | undefined,
  count: number,
  now: Date,
): { first: Date; waitMs: number } {
  const second = Math.floor(now.getTime() / 1000) * 1000;
  let first = second - count * 1000; // the last slot is the second before the current one
  if (newest) first = Math.max(first, parseMigrationTimestamp(newest).getTime() + 1000);
  const last = first + (count - 1) * 1000;
  return { first: new Date(first), waitMs: Math.max(0, last + 1000 - now.getTime()) };
}

/**
 * {@linkcode migrationSlots}, waiting for the clock when that takes at most
 * {@linkcode MAX_MIGRATION_WAIT_MS} (saying so on stderr), refusing with `refuse(message)`
 * otherwise: the newest migration is named after a future time, and a timestamp after now would
 * sort after the next `supabase migration new`.
 *
 * @example
 * ```ts
 * import { migrationTimestamp, timestampsAfter } from './_util.ts';
 * const first = await timestampsAfter({
 *   newest: undefined,
 *   newestName: undefined,
 *   count: 1,
 *   now: new Date(),
 *   what: 'the registration migration',
 *   refuse: (m) => new Error(m),
 * });
 * console.log(migrationTimestamp(first));
 * ```
 */
export async function timestampsAfter(options: {
  newest: string | undefined;
  /** The newest migration's file name, for the messages. */
  newestName: string | undefined;
  count: number;
  now: Date;
  /** What is written, for the messages: "the kit's 34 migrations". */
  what: string;
  refuse: (message: string) => Error;
}): Promise<Date> {
  const { first, waitMs } = migrationSlots(options.newest, options.count, options.now);
  if (waitMs === 0) return first;
  const last = new Date(first.getTime() + (options.count - 1) * 1000);
  if (waitMs > MAX_MIGRATION_WAIT_MS) {
    throw options.refuse(
      `the newest migration, supabase/migrations/${options.newestName}, is named after ` +
        `${parseMigrationTimestamp(options.newest!).toISOString()}, ${
          Math.ceil(waitMs / 60_000)
        } min from now (${options.now.toISOString()}): ${options.what} must sort after it, and ` +
        'a timestamp after now would also sort after the next `supabase migration new` (it ' +
        'names files after the current UTC time), so nothing was written. Rename that ' +
        'migration to a timestamp not after now (if a database applied it, also ' +
        '`supabase migration repair` its version), or rerun after ' +
        `${new Date(last.getTime() + 1000).toISOString()}`,
    );
  }
  console.error(
    `waiting ${Math.ceil(waitMs / 1000)} s for the clock: ${options.what} must sort after ` +
      `${options.newestName} (one second apart), and none may be named after now`,
  );
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  return first;
}
