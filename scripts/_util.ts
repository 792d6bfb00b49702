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
