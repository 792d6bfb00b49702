/**
 * The one connection resolver (docs/ARCHITECTURE.md §7): the `connectionString`
 * option, then `SUPABASE_DB_URL`, then `DATABASE_URL`, in this order everywhere
 * (workers, queue functions, the client and the operator commands).
 *
 * @module
 */
import postgres from 'postgres';

/** A postgres.js client (pool), as the kit's calls take it. */
export type Sql = postgres.Sql;

/** The environment variables that may hold the database URL, in the order they are read. */
export const CONNECTION_ENV_VARS: readonly string[] = ['SUPABASE_DB_URL', 'DATABASE_URL'];

/** Reads one environment variable; undefined without permission or when unset. */
export type EnvReader = (name: string) => string | undefined;

function denoEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no env permission
  }
}

/**
 * The database URL: `option` when given, else the first set variable of
 * {@linkcode CONNECTION_ENV_VARS}; undefined when there is none.
 *
 * @example
 * ```ts
 * import { resolveConnectionString } from './connection.ts';
 * const env = (name: string) => (name === 'DATABASE_URL' ? 'postgres://localhost/app' : undefined);
 * console.assert(resolveConnectionString(undefined, env) === 'postgres://localhost/app');
 * ```
 */
export function resolveConnectionString(
  option?: string,
  env: EnvReader = denoEnv,
): string | undefined {
  if (option) return option;
  for (const name of CONNECTION_ENV_VARS) {
    const value = env(name);
    if (value) return value;
  }
  return undefined;
}

/** Words for the error when no database is configured, naming every way to configure one. */
export const NO_CONNECTION_MESSAGE: string =
  'no database connection: pass connectionString or set SUPABASE_DB_URL or DATABASE_URL';

/** Options of {@linkcode openSql}. */
export interface OpenSqlOptions {
  /** Connections in the pool. */
  max: number;
  /** `application_name` of its sessions (shown in `pg_stat_activity`). */
  applicationName?: string;
}

/**
 * A postgres.js pool with the kit's settings: no prepared statements (works behind Supabase's
 * transaction pooler), notices ignored, bounded connect and idle timeouts.
 *
 * @example
 * ```ts
 * import { openSql } from './connection.ts';
 * const sql = openSql('postgres://localhost/app', { max: 2 });
 * await sql.end();
 * ```
 */
export function openSql(url: string, { max, applicationName }: OpenSqlOptions): postgres.Sql {
  return postgres(url, {
    prepare: false,
    max,
    onnotice: () => {},
    connect_timeout: 10,
    idle_timeout: 30,
    ...(applicationName === undefined ? {} : { connection: { application_name: applicationName } }),
  });
}
