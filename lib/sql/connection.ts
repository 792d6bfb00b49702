/**
 * The one connection resolver (docs/design/supabase.md): the `connectionString`
 * option, then `SWITCHYARD_DB_URL`, then `SUPABASE_DB_URL`, then `DATABASE_URL`, in this
 * order everywhere (workers, queue functions, the client and the operator commands).
 *
 * The kit parses the connection string itself, with the WHATWG `URL` parser, and hands
 * postgres.js explicit host, port, user, password, database and TLS options: user names with
 * dots (the pooler's `postgres.<project-ref>`), percent-encoded passwords and `sslmode` work
 * the same on every runtime, and postgres.js never parses a URL or reads `PG*` variables.
 *
 * @module
 */
import postgres from 'postgres';
import { ConnectionStringError, DatabaseConnectionError } from '../errors.ts';

export { ConnectionStringError };

/** A postgres.js client (pool), as the kit's calls take it. */
export type Sql = postgres.Sql;

/**
 * The environment variables that may hold the database URL, in the order they are read.
 * `SWITCHYARD_DB_URL` comes first because `supabase secrets set` refuses names starting with
 * `SUPABASE_`: it is how a deployed function is pointed at the transaction pooler.
 *
 * @example
 * ```ts
 * import { CONNECTION_ENV_VARS } from './connection.ts';
 * console.assert(CONNECTION_ENV_VARS[0] === 'SWITCHYARD_DB_URL');
 * ```
 */
export const CONNECTION_ENV_VARS: readonly string[] = [
  'SWITCHYARD_DB_URL',
  'SUPABASE_DB_URL',
  'DATABASE_URL',
];

/**
 * Reads one environment variable; undefined without permission or when unset.
 *
 * @example
 * ```ts
 * import type { EnvReader } from './connection.ts';
 * const env: EnvReader = (name) => (name === 'DATABASE_URL' ? 'postgres://localhost/app' : undefined);
 * ```
 */
export type EnvReader = (name: string) => string | undefined;

/** The globals {@linkcode runtimeEnv} reads, where the runtime has them. */
type EnvGlobals = {
  Deno?: { env: { get(name: string): string | undefined } };
  process?: { env: Record<string, string | undefined> };
};

/**
 * The default {@linkcode EnvReader}: `Deno.env` under Deno (undefined without permission),
 * `process.env` under Node (the npm package's client, docs/design/code-layout.md). Read at call
 * time, so importing this module touches no runtime global.
 */
function runtimeEnv(name: string): string | undefined {
  const runtime = globalThis as EnvGlobals;
  if (runtime.Deno) {
    try {
      return runtime.Deno.env.get(name);
    } catch {
      return undefined; // no env permission
    }
  }
  return runtime.process?.env[name];
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
  env: EnvReader = runtimeEnv,
): string | undefined {
  if (option) return option;
  for (const name of CONNECTION_ENV_VARS) {
    const value = env(name);
    if (value) return value;
  }
  return undefined;
}

/**
 * Where {@linkcode resolveConnectionString} takes the URL from: `the connectionString option`
 * when one is given, else the name of the first set variable of
 * {@linkcode CONNECTION_ENV_VARS}; undefined when there is none. Errors name it.
 *
 * @example
 * ```ts
 * import { connectionOrigin } from './connection.ts';
 * const env = (name: string) => (name === 'DATABASE_URL' ? 'postgres://localhost/app' : undefined);
 * console.assert(connectionOrigin(undefined, env) === 'DATABASE_URL');
 * ```
 */
export function connectionOrigin(
  option?: string,
  env: EnvReader = runtimeEnv,
): string | undefined {
  if (option) return 'the connectionString option';
  return CONNECTION_ENV_VARS.find((name) => env(name));
}

/**
 * Words for the error when no database is configured, naming every way to configure one.
 *
 * @example
 * ```ts
 * import { NO_CONNECTION_MESSAGE } from './connection.ts';
 * console.assert(NO_CONNECTION_MESSAGE.includes('SWITCHYARD_DB_URL'));
 * ```
 */
export const NO_CONNECTION_MESSAGE: string =
  'no database connection: pass connectionString or set SWITCHYARD_DB_URL, SUPABASE_DB_URL ' +
  'or DATABASE_URL';

/**
 * libpq's `sslmode` values. `allow` is treated as `prefer` (either is accepted) and `verify-ca`
 * checks the certificate chain but not the host name.
 *
 * @example
 * ```ts
 * import type { SslMode } from './connection.ts';
 * const mode: SslMode = 'require';
 * ```
 */
export type SslMode = 'disable' | 'allow' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';

const SSL_MODES: readonly SslMode[] = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
];

/**
 * What kind of endpoint a connection string names, from its host and port: Supabase's
 * transaction pooler listens on port 6543 (Supavisor at `*.pooler.supabase.com`, or the
 * dedicated pooler at `db.<ref>.supabase.co`); its session pooler is `*.pooler.supabase.com`
 * on 5432; anything else counts as a direct connection.
 *
 * @example
 * ```ts
 * import type { ConnectionKind } from './connection.ts';
 * const kind: ConnectionKind = 'transaction_pooler';
 * ```
 */
export type ConnectionKind = 'direct' | 'session_pooler' | 'transaction_pooler';

/** The transaction pooler port of Supabase projects. */
const TRANSACTION_POOLER_PORT = 6543;

/**
 * At most this many connections per pool behind a transaction pooler: the pooler multiplexes
 * them onto few server connections, and every function instance opens its own pool.
 *
 * @example
 * ```ts
 * import { TRANSACTION_POOLER_MAX_CONNECTIONS } from './connection.ts';
 * console.log(`at most ${TRANSACTION_POOLER_MAX_CONNECTIONS} connections per worker`);
 * ```
 */
export const TRANSACTION_POOLER_MAX_CONNECTIONS = 4;

/**
 * A parsed connection string: what {@linkcode openSql} hands postgres.js.
 *
 * @example
 * ```ts
 * import { parseConnectionString, type ConnectionSettings } from './connection.ts';
 * const settings: ConnectionSettings = parseConnectionString('postgres://postgres@127.0.0.1:5432/app');
 * console.assert(settings.sslmode === 'disable');
 * ```
 */
export interface ConnectionSettings {
  /** Host name or IP address (IPv6 without brackets). */
  host: string;
  /** Port (5432 when the URL has none; 6543 is the transaction pooler). */
  port: number;
  /** User name, percent-decoded (`postgres.<project-ref>` on the pooler). */
  user: string;
  /** Password, percent-decoded; empty when the URL has none. */
  password: string;
  /** Database name, percent-decoded; `postgres` when the URL has none. */
  database: string;
  /**
   * The URL's `sslmode`; without one, `disable` for loopback hosts and `prefer` (libpq's
   * default) for every other host.
   */
  sslmode: SslMode;
  /** `application_name`, when the URL sets it. */
  applicationName?: string;
  /** `connect_timeout` in seconds, when the URL sets it. */
  connectTimeoutSeconds?: number;
  /** Direct connection, session pooler or transaction pooler (see {@linkcode ConnectionKind}). */
  kind: ConnectionKind;
  /** Query parameters the kit does not use (they are not sent to the server). */
  ignoredParameters: string[];
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConnectionStringError(
      `the connection string's ${what} is not percent-encoded correctly: write each of ` +
        '@ : / ? # [ ] % and spaces as %XX (for example @ as %40)',
    );
  }
}

/**
 * Parses a `postgres://` or `postgresql://` URL with the WHATWG `URL` parser. The user name and
 * password are percent-decoded (a password holding `@ : / ? #` must be percent-encoded, as
 * Supabase's dashboard does); supported query parameters are `sslmode`,
 * `sslrootcert=system` (same as `sslmode=verify-full`), `application_name` and
 * `connect_timeout`; others are listed in `ignoredParameters`. Errors never contain the
 * password.
 *
 * @throws {ConnectionStringError} when the string is not such a URL, names several hosts, or
 *   has an unknown `sslmode`
 * @example
 * ```ts
 * import { parseConnectionString } from './connection.ts';
 * const s = parseConnectionString(
 *   'postgresql://postgres.abcdefghijklmnop:p%40ss@aws-0-eu-central-1.pooler.supabase.com:6543/postgres',
 * );
 * console.assert(s.user === 'postgres.abcdefghijklmnop' && s.password === 'p@ss');
 * console.assert(s.kind === 'transaction_pooler' && s.sslmode === 'prefer');
 * ```
 */
export function parseConnectionString(connectionString: string): ConnectionSettings {
  let url: URL;
  try {
    url = new URL(connectionString.trim());
  } catch {
    throw new ConnectionStringError(
      'the connection string is not a URL: use postgresql://USER:PASSWORD@HOST:PORT/DATABASE ' +
        '(percent-encode special characters in the password)',
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConnectionStringError(
      `the connection string's scheme "${url.protocol}" is invalid: use postgresql:// or postgres://`,
    );
  }
  let host = decode(url.hostname, 'host');
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (!host) {
    throw new ConnectionStringError(
      'the connection string has no host: use postgresql://USER:PASSWORD@HOST:PORT/DATABASE',
    );
  }
  if (host.includes(',')) {
    throw new ConnectionStringError(
      `the connection string names several hosts (${host}): give exactly one`,
    );
  }
  const port = url.port === '' ? 5432 : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ConnectionStringError(`the connection string's port "${url.port}" is invalid`);
  }
  const path = url.pathname.replace(/^\//, '');
  if (path.includes('/')) {
    throw new ConnectionStringError(
      'the connection string\'s database name contains "/": a password with "/", "?" or "#" ' +
        'must be percent-encoded (%2F, %3F, %23)',
    );
  }
  const database = decode(path, 'database name') || 'postgres';
  const user = decode(url.username, 'user name') || 'postgres';
  const password = decode(url.password, 'password');

  let sslmode: SslMode | undefined;
  let applicationName: string | undefined;
  let connectTimeoutSeconds: number | undefined;
  const ignoredParameters: string[] = [];
  for (const [key, value] of url.searchParams) {
    if (key === 'sslmode') {
      if (!SSL_MODES.includes(value as SslMode)) {
        throw new ConnectionStringError(
          `sslmode "${value}" is invalid: use ${SSL_MODES.join(', ')}`,
        );
      }
      sslmode = value as SslMode;
    } else if (key === 'sslrootcert') {
      if (value !== 'system') {
        throw new ConnectionStringError(
          `sslrootcert "${value}" is not supported: use sslrootcert=system or ` +
            'sslmode=verify-full (the system certificate store)',
        );
      }
      sslmode ??= 'verify-full';
    } else if (key === 'application_name') {
      applicationName = value;
    } else if (key === 'connect_timeout') {
      const seconds = Number(value);
      if (!/^\d+$/.test(value) || seconds < 1 || seconds > 3600) {
        throw new ConnectionStringError(
          `connect_timeout "${value}" is invalid: use whole seconds from 1 to 3600`,
        );
      }
      connectTimeoutSeconds = seconds;
    } else {
      ignoredParameters.push(key);
    }
  }
  const loopback = LOOPBACK.has(host.toLowerCase());
  const kind: ConnectionKind = port === TRANSACTION_POOLER_PORT
    ? 'transaction_pooler'
    : /\.pooler\.supabase\.com$/i.test(host)
    ? 'session_pooler'
    : 'direct';
  return {
    host,
    port,
    user,
    password,
    database,
    sslmode: sslmode ?? (loopback ? 'disable' : 'prefer'),
    ...(applicationName !== undefined ? { applicationName } : {}),
    ...(connectTimeoutSeconds !== undefined ? { connectTimeoutSeconds } : {}),
    kind,
    ignoredParameters,
  };
}

/** postgres.js' `ssl` option for an `sslmode`. */
function sslOption(mode: SslMode): postgres.Options<Record<string, never>>['ssl'] {
  switch (mode) {
    case 'disable':
      return false;
    case 'allow':
    case 'prefer':
      return 'prefer';
    case 'require':
      return 'require';
    case 'verify-ca':
      // The chain is verified; the host name is not.
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined };
    case 'verify-full':
      return 'verify-full';
  }
}

/**
 * Options of {@linkcode openSql}.
 *
 * @example
 * ```ts
 * import type { OpenSqlOptions } from './connection.ts';
 * const options: OpenSqlOptions = { max: 4 };
 * ```
 */
export interface OpenSqlOptions {
  /**
   * Connections in the pool; behind a transaction pooler at most
   * {@linkcode TRANSACTION_POOLER_MAX_CONNECTIONS}.
   */
  max: number;
  /**
   * `application_name` of its sessions (shown in `pg_stat_activity`); default the URL's, else
   * `switchyard`.
   */
  applicationName?: string;
  /**
   * Where the URL came from (a variable's name, or the option), named by a
   * {@linkcode DatabaseConnectionError}; default `the connection string`.
   */
  origin?: string;
}

/** Where each pool's URL came from, and its host and port, for the errors of its calls. */
const ORIGINS = new WeakMap<object, { origin: string; host: string; port: number }>();

/** Failures to reach the server or to log in (network codes, postgres.js' and SQLSTATEs). */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '28P01', // password authentication failed
  '28000', // role does not exist, no pg_hba.conf entry
  '3D000', // database does not exist
  '53300', // too many connections
  '57P03', // the database system is starting up
  '08001',
  '08006',
]);

/**
 * `e` as a {@linkcode DatabaseConnectionError} naming where the pool's URL came from, its host
 * and port, when it is a failure to reach the server or to log in; else `e` unchanged.
 *
 * @example
 * ```ts
 * import { connectionFailure, openSql } from './connection.ts';
 * const sql = openSql('postgres://u:secret@127.0.0.1:1/app', { max: 1, origin: 'DATABASE_URL' });
 * const e = await sql`select 1`.catch((e) => connectionFailure(e, sql));
 * console.assert(!String((e as Error).message).includes('secret'));
 * await sql.end();
 * ```
 */
export function connectionFailure(e: unknown, sql: object): unknown {
  const where = ORIGINS.get(sql);
  const code = (e as { code?: unknown } | null)?.code;
  if (!where || typeof code !== 'string' || !CONNECTION_CODES.has(code)) return e;
  const message = String((e as Error).message ?? e);
  return new DatabaseConnectionError(where.origin, where.host, where.port, message, code, {
    cause: e,
  });
}

/**
 * A postgres.js pool with the kit's settings, from explicit options of the parsed URL (see
 * {@linkcode parseConnectionString}): no prepared statements (works behind Supabase's
 * transaction pooler), a small pool behind the transaction pooler, notices ignored, bounded
 * connect and idle timeouts.
 *
 * @throws {ConnectionStringError} when the connection string cannot be used
 * @example
 * ```ts
 * import { openSql } from './connection.ts';
 * const sql = openSql('postgres://localhost/app', { max: 2 });
 * await sql.end();
 * ```
 */
export function openSql(
  url: string,
  { max, applicationName, origin }: OpenSqlOptions,
): postgres.Sql {
  guardEndedSockets();
  const s = parseConnectionString(url);
  const sql = postgres({
    host: s.host,
    port: s.port,
    user: s.user,
    password: s.password,
    database: s.database,
    ssl: sslOption(s.sslmode),
    prepare: false,
    max: s.kind === 'transaction_pooler' ? Math.min(max, TRANSACTION_POOLER_MAX_CONNECTIONS) : max,
    onnotice: () => {},
    connect_timeout: s.connectTimeoutSeconds ?? 10,
    idle_timeout: 30,
    connection: { application_name: applicationName ?? s.applicationName ?? 'switchyard' },
  });
  ORIGINS.set(sql, { origin: origin ?? 'the connection string', host: s.host, port: s.port });
  return sql;
}

/** The message of the EPIPE error Deno's `node:net` raises for a write after the server's FIN. */
export const ENDED_SOCKET_MESSAGE = 'This socket has been ended by the other party';

let endedSocketGuard = false;

/**
 * The message of the ECONNRESET error Deno's `node:net` raises when a read finds the connection
 * reset by the server (a restart, a terminated backend).
 */
export const RESET_SOCKET_MESSAGE = 'read ECONNRESET';

/**
 * Keeps a database restart from killing the process
 * (docs/design/worker.md#worker-states-and-parts). When the server
 * ends a connection while postgres.js is about to write to it, Deno's `node:net` raises EPIPE
 * from the write (postgres.js's `nextWrite`), which postgres.js does not catch there; when the
 * server resets a connection postgres.js is reading from, Deno's `node:net` raises ECONNRESET
 * from the read (`onStreamRead`) as a promise of its own that nothing awaits. Either error
 * escapes as an unhandled rejection, which ends a Deno process. The
 * queries on that connection have already failed with CONNECTION_CLOSED (or the reset), and the
 * pool reconnects: nothing is lost but the process. Installed once, with the first pool the kit
 * opens; it stops those two errors (each by its message and code) and nothing else, and says so
 * on the console at most once a minute. The chaos suite (SIGKILLs and a PostgreSQL restart) found
 * the first when idle workers polled an ordered queue every 20 ms, and the second on the real
 * PGMQ extension.
 */
export function guardEndedSockets(): void {
  if (endedSocketGuard || typeof globalThis.addEventListener !== 'function') return;
  endedSocketGuard = true;
  let warnedAt = -Infinity;
  globalThis.addEventListener('unhandledrejection', (event) => {
    const reason = event.reason;
    if (!(reason instanceof Error)) return;
    const code = (reason as { code?: unknown }).code;
    const ended = reason.message === ENDED_SOCKET_MESSAGE && (code ?? 'EPIPE') === 'EPIPE';
    const reset = reason.message === RESET_SOCKET_MESSAGE &&
      (code ?? 'ECONNRESET') === 'ECONNRESET';
    if (!ended && !reset) return;
    event.preventDefault();
    if (performance.now() - warnedAt >= 60_000) {
      warnedAt = performance.now();
      console.warn(
        ended
          ? '[switchyard] a database connection ended while a query was being written to it ' +
            '(EPIPE, a server restart?); its queries failed and the pool reconnects'
          : '[switchyard] a database connection was reset while it was being read ' +
            '(ECONNRESET, a server restart?); its queries failed and the pool reconnects',
      );
    }
  });
}
