/**
 * The migrated core's snapshot cached on disk
 * (docs/design/clock.md#speed-and-what-the-engine-is-not): the first test engine
 * of a process builds an embedded database with the SQL core (PGlite's own start, then the core),
 * seconds; from a snapshot it starts in a few hundred milliseconds. The snapshot a process built
 * is written to a cache folder under a key that hashes everything it was built from and the PGlite
 * that built it, so the next `deno test` (or `node --test`) starts from it, and a changed kit or
 * PGlite builds afresh.
 *
 * The folder: `SWITCHYARD_TEST_CACHE` when set (`off` turns the cache off), else
 * `$XDG_CACHE_HOME/switchyard`, else `~/.cache/switchyard`. A cache that cannot be read or written
 * (no permission, a full disk) is passed over: the engine builds, as without one.
 *
 * @module
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { snapshotSource } from '../sql/testing_queries.ts';

/** An environment variable, in Deno or Node, or undefined (none, or no permission to read it). */
function env(name: string): string | undefined {
  const g = globalThis as {
    Deno?: { env: { get(n: string): string | undefined } };
    process?: { env: Record<string, string | undefined> };
  };
  try {
    return g.Deno ? g.Deno.env.get(name) : g.process?.env[name];
  } catch {
    return undefined;
  }
}

/** The cache folder, or null when the cache is off or no folder can be named. */
function cacheDir(): string | null {
  const set = env('SWITCHYARD_TEST_CACHE');
  if (set === 'off') return null;
  if (set) return set;
  const xdg = env('XDG_CACHE_HOME');
  if (xdg) return join(xdg, 'switchyard');
  try {
    return join(homedir(), '.cache', 'switchyard');
  } catch {
    return null;
  }
}

/**
 * What identifies the PGlite in use: its resolved module (in Deno the npm specifier with its
 * version), and in Node its package.json's version too.
 */
async function pgliteIdentity(): Promise<string> {
  const resolved = import.meta.resolve('@electric-sql/pglite');
  if (!resolved.startsWith('file:')) return resolved;
  for (const up of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(await readFile(new URL(up, resolved), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === '@electric-sql/pglite') return `${resolved}@${pkg.version}`;
    } catch { /* not there */ }
  }
  return resolved;
}

let file: Promise<string | null> | undefined;

/** The cache file of this kit's snapshot, or null without a cache. */
function cacheFile(): Promise<string | null> {
  file ??= (async () => {
    const dir = cacheDir();
    if (dir === null) return null;
    const text = `switchyard-test-snapshot/1\n${await pgliteIdentity()}\n${snapshotSource()}`;
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
    const key = [...new Uint8Array(digest)].slice(0, 16)
      .map((b) => b.toString(16).padStart(2, '0')).join('');
    return join(dir, `test-engine-${key}.tar`);
  })().catch(() => null);
  return file;
}

/**
 * The cached snapshot of this kit's core, or null (no cache, none yet, unreadable).
 *
 * @example
 * ```ts
 * import { readCachedSnapshot } from './snapshot_cache.ts';
 * const blob = await readCachedSnapshot(); // null the first time
 * ```
 */
export async function readCachedSnapshot(): Promise<Blob | null> {
  const path = await cacheFile();
  if (path === null) return null;
  try {
    return new Blob([new Uint8Array(await readFile(path))]);
  } catch {
    return null;
  }
}

/**
 * Writes `snapshot` to the cache (whole or not at all: a temporary file renamed into place, so a
 * concurrent reader never sees half of it); a failure is passed over.
 *
 * @example
 * ```ts
 * import { writeCachedSnapshot } from './snapshot_cache.ts';
 * await writeCachedSnapshot(new Blob([]));
 * ```
 */
export async function writeCachedSnapshot(snapshot: Blob): Promise<void> {
  const path = await cacheFile();
  if (path === null) return;
  const partial = `${path}.${crypto.randomUUID()}.partial`;
  try {
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(partial, new Uint8Array(await snapshot.arrayBuffer()));
    await rename(partial, path);
  } catch {
    await rm(partial, { force: true }).catch(() => {});
  }
}
