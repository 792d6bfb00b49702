/**
 * Small file-system and network probes shared by the kit's scripts and tests.
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
