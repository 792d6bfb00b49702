/**
 * Local development, as a worker tells it
 * (docs/design/worker.md#compiling-at-deploy-and-in-local-development): where a changed shape of
 * a concrete flow is recompiled (`switchyard.recompile_flow`, the flow's runs deleted) instead of
 * refused with SY004. It is asked for explicitly, and production never recompiles: a worker on
 * the hosted runtime, or connected to a database that is not on this machine or a local
 * container network, refuses as always.
 *
 * @module
 */
import { parseConnectionString } from '../sql/connection.ts';

/**
 * Environment variables that Supabase's hosted Edge Runtime sets and local runs do not
 * (docs/design/supabase.md, Auth): `SB_REGION` (the region the function runs in) and
 * `DENO_DEPLOYMENT_ID` (the deployed version, `<project-ref>_<function-id>_<version>`; Deno
 * Deploy sets it too). `SB_EXECUTION_ID` is not one of them (the local edge runtime sets it as
 * well), nor are the `SUPABASE_INTERNAL_*` variables, which only the CLI's local serve sets.
 *
 * @example
 * ```ts
 * import { HOSTED_RUNTIME_ENV_VARS } from './development.ts';
 *
 * console.log(HOSTED_RUNTIME_ENV_VARS.join(', ')); // SB_REGION, DENO_DEPLOYMENT_ID
 * ```
 */
export const HOSTED_RUNTIME_ENV_VARS: readonly string[] = ['SB_REGION', 'DENO_DEPLOYMENT_ID'];

/**
 * The first of {@linkcode HOSTED_RUNTIME_ENV_VARS} that the platform's environment sets (the
 * function runs on a hosted runtime), or `null` (a local run: `deno task serve`, `supabase
 * functions serve`, a plain `deno run`, a test).
 *
 * @example
 * ```ts
 * import { hostedRuntimeSignal } from './development.ts';
 *
 * console.assert(hostedRuntimeSignal({ env: () => undefined }) === null);
 * console.assert(hostedRuntimeSignal({ env: (n) => n === 'SB_REGION' ? 'eu-west-1' : undefined }) === 'SB_REGION');
 * ```
 */
export function hostedRuntimeSignal(
  platform: { env(name: string): string | undefined },
): string | null {
  return HOSTED_RUNTIME_ENV_VARS.find((name) => (platform.env(name) ?? '') !== '') ?? null;
}

/**
 * Whether a database host is local: loopback (`localhost`, `127.0.0.0/8`, `::1`), a Unix socket
 * path, `host.docker.internal`, or a name without a dot that starts with a letter (a container
 * on a local Docker network, such as the Supabase CLI's `supabase_db_<project>` or `db`).
 *
 * @example
 * ```ts
 * import { isLocalDatabaseHost } from './development.ts';
 * console.assert(isLocalDatabaseHost('127.0.0.1') && isLocalDatabaseHost('supabase_db_app'));
 * console.assert(!isLocalDatabaseHost('db.abcdefghijklmnop.supabase.co'));
 * ```
 */
export function isLocalDatabaseHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) ||
    h.startsWith('/') || h === 'host.docker.internal' || /^[a-z][a-z0-9_-]*$/.test(h);
}

/**
 * Whether a worker recompiles changed shapes. Only where it is asked to (`option`, else the
 * variable `SWITCHYARD_DEVELOPMENT=true`, which `deno task serve` sets), never on the hosted
 * runtime (`SB_REGION`, `DENO_DEPLOYMENT_ID`) whatever is asked, and only against a local
 * database (its connection string's host, {@linkcode isLocalDatabaseHost}; a worker given its own
 * client has no URL, and its `option` decides). A connection string that does not parse is not
 * local.
 *
 * @example
 * ```ts
 * import { localDevelopment } from './development.ts';
 * const url = 'postgres://postgres@127.0.0.1:54322/postgres';
 * const dev = (n: string) => n === 'SWITCHYARD_DEVELOPMENT' ? 'true' : undefined;
 * console.assert(localDevelopment({ env: dev, url }));
 * console.assert(!localDevelopment({ env: () => undefined, url }));
 * console.assert(!localDevelopment({ env: dev, url: 'postgres://u@db.abcd.supabase.co/postgres' }));
 * console.assert(!localDevelopment({ env: (n) => n === 'SB_REGION' ? 'eu' : dev(n), url }));
 * ```
 */
export function localDevelopment(options: {
  env: (name: string) => string | undefined;
  url?: string;
  option?: boolean;
}): boolean {
  if (hostedRuntimeSignal({ env: options.env }) !== null) return false;
  const asked = options.option ?? options.env(DEVELOPMENT_ENV) === 'true';
  if (!asked) return false;
  if (options.url === undefined) return true;
  try {
    return isLocalDatabaseHost(parseConnectionString(options.url).host);
  } catch {
    return false;
  }
}

/** The variable that asks a worker for local development (`true`); `deno task serve` sets it. */
export const DEVELOPMENT_ENV = 'SWITCHYARD_DEVELOPMENT';
