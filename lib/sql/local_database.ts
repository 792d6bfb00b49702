/**
 * Whether a connection string names a local database (docs/design/supabase.md): the rule the
 * PGMQ-compatible layer, development mode and the test engine share. No runtime APIs, so it
 * loads in Deno, Node and a browser alike.
 *
 * @module
 */

/**
 * Whether a connection string names a local server: a loopback address, `localhost`, a name
 * without a dot (a Docker network's service) or `host.docker.internal`.
 *
 * @example
 * ```ts
 * import { isLocalDatabase } from './local_database.ts';
 * console.assert(isLocalDatabase('postgres://postgres@127.0.0.1:5432/app'));
 * console.assert(!isLocalDatabase('postgresql://postgres@db.abcd.supabase.co:5432/postgres'));
 * ```
 */
export function isLocalDatabase(connectionString: string): boolean {
  let host: string;
  try {
    host = new URL(connectionString).hostname.toLowerCase();
  } catch {
    return false;
  }
  return ['127.0.0.1', 'localhost', '[::1]', '::1', 'host.docker.internal'].includes(host) ||
    /^127(\.\d{1,3}){3}$/.test(host) || /^[a-z][a-z0-9_-]*$/.test(host);
}
