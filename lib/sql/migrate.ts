/**
 * Applies the kit's SQL core with the real Supabase CLI (`supabase db push`),
 * the same path users take, after making sure PGMQ is present.
 *
 * @module
 */
import postgres from 'postgres';
import { MigrationError } from '../errors.ts';
import { denoExecutable } from './deno_executable.ts';
import { isLocalDatabase } from './local_database.ts';

export { MigrationError };

/** The exact Supabase CLI release the kit drives (newer lock files may be refused here). */
export const SUPABASE_CLI = 'npm:supabase@2.117.0';

/** How PGMQ is provided: the real extension, the local compatible layer, or whichever exists. */
export type PgmqMode = 'auto' | 'compat' | 'extension';

/** Options for {@linkcode migrate}. */
export interface MigrateOptions {
  /** Directory holding `supabase/migrations`; defaults to this kit's project root. */
  workdir?: string;
  /** PGMQ provisioning mode; defaults to `PGMQ_MODE` or `auto`. */
  pgmqMode?: PgmqMode;
  /** Receives the CLI's output lines. */
  log?: (line: string) => void;
}

const PROJECT_ROOT = new URL('../../', import.meta.url);

/** The connection string with `sslmode=disable` added for loopback servers that have no TLS. */
export function withLocalSslMode(url: string): string {
  const parsed = new URL(url);
  const local = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(parsed.hostname);
  if (local && !parsed.searchParams.has('sslmode')) parsed.searchParams.set('sslmode', 'disable');
  return parsed.toString();
}

/**
 * The `MIMALLOC_PURGE_DELAY` the Supabase CLI runs with: the caller's, else `-1`. The CLI is a Bun
 * binary whose allocator (mimalloc) hands freed memory back within milliseconds and faults it in
 * again at its next allocation; with `-1` it keeps it until it exits. Only the allocator's timing
 * changes: a push of the kit's migrations takes 3.1 CPU s instead of 7.7 on a machine where a page
 * fault is dear (docs/design/testing.md#what-ci-costs).
 */
export function cliPurgeDelay(): string {
  return Deno.env.get('MIMALLOC_PURGE_DELAY') ?? '-1';
}

/** Reads `PGMQ_MODE` and validates it. */
export function pgmqModeFromEnv(): PgmqMode {
  const mode = Deno.env.get('PGMQ_MODE') ?? 'auto';
  if (mode !== 'auto' && mode !== 'compat' && mode !== 'extension') {
    throw new MigrationError(`PGMQ_MODE "${mode}" is invalid: use auto, compat or extension`);
  }
  return mode;
}

export { isLocalDatabase };

/** The remedy for a server without PGMQ (docs/design/supabase.md, PGMQ). */
export const PGMQ_REMEDY: string =
  'enable the pgmq extension (1.5 or later; Supabase: Database -> Extensions -> pgmq), or, for ' +
  "a local test database, run `npx switchyard db:push`, which loads the kit's PGMQ-compatible " +
  'layer';

/**
 * How PGMQ is provided on a server, from the mode and what the server has; throws the refusal
 * of a server that is not local ({@linkcode isLocalDatabase}) and has no PGMQ in `auto` mode.
 *
 * - `extension`: the real extension must be installable (it is created by the first migration);
 * - `compat`: the local compatible layer is loaded when the `pgmq` schema is absent;
 * - `auto`: nothing when the schema exists or the extension is available, else the compat layer,
 *   on a local server only: another server without PGMQ is refused with the remedy, unless the
 *   layer is asked for with `compat`.
 *
 * @example
 * ```ts
 * import { pgmqProvider } from './migrate.ts';
 * const local = 'postgres://postgres@127.0.0.1:5432/app';
 * console.assert(pgmqProvider('auto', { hasSchema: false, hasExtension: false }, local) === 'compat');
 * ```
 */
export function pgmqProvider(
  mode: PgmqMode,
  server: { hasSchema: boolean; hasExtension: boolean },
  connectionString: string,
): 'existing' | 'extension' | 'compat' {
  if (mode === 'extension') {
    if (!server.hasExtension && !server.hasSchema) {
      throw new MigrationError(
        'PGMQ_MODE=extension but the pgmq extension is not available on this server',
      );
    }
    return server.hasSchema ? 'existing' : 'extension';
  }
  if (server.hasSchema) return 'existing';
  if (mode === 'auto' && server.hasExtension) return 'extension';
  if (mode === 'auto' && !isLocalDatabase(connectionString)) {
    throw new MigrationError(
      `the server of ${redact(connectionString)} has no pgmq extension, and it is not local: ` +
        `${PGMQ_REMEDY}; to load that layer on this server anyway (a test server, never ` +
        'Supabase), set PGMQ_MODE=compat',
    );
  }
  return 'compat';
}

/**
 * Makes PGMQ available before the migrations run, as {@linkcode pgmqProvider} decides. Loading
 * the compatible layer is said in one line through `log` (it is for tests, never for Supabase).
 *
 * @returns which provider is in use.
 */
export async function ensurePgmq(
  connectionString: string,
  mode: PgmqMode = pgmqModeFromEnv(),
  log: (line: string) => void = () => {},
): Promise<'existing' | 'extension' | 'compat'> {
  const sql = postgres(connectionString, { max: 1, onnotice: () => {}, prepare: false });
  try {
    const [{ has_schema, has_ext }] = await sql<{ has_schema: boolean; has_ext: boolean }[]>`
      select exists (select 1 from pg_namespace where nspname = 'pgmq') as has_schema,
             exists (select 1 from pg_available_extensions where name = 'pgmq') as has_ext`;
    const provider = pgmqProvider(
      mode,
      { hasSchema: has_schema, hasExtension: has_ext },
      connectionString,
    );
    if (provider === 'extension') await sql`create extension if not exists pgmq`;
    if (provider === 'compat') {
      const file = new URL('../../pgmq_compat/pgmq.sql', import.meta.url);
      await sql.unsafe(await Deno.readTextFile(file));
      log(
        `PGMQ is not installed on ${redact(connectionString)}: loaded the kit's ` +
          'PGMQ-compatible layer (pgmq_compat/pgmq.sql; for local runs and tests, never for ' +
          'Supabase)',
      );
    }
    return provider;
  } finally {
    await sql.end();
  }
}

/**
 * Applies `supabase/migrations` to the database with `supabase db push`.
 *
 * @example
 * ```ts
 * import { migrate } from './migrate.ts';
 * await migrate(Deno.env.get('DATABASE_URL')!);
 * ```
 */
export async function migrate(connectionString: string, opts: MigrateOptions = {}): Promise<void> {
  if (!connectionString) {
    throw new MigrationError('no database: set DATABASE_URL to a PostgreSQL connection string');
  }
  let url: string;
  try {
    url = withLocalSslMode(connectionString);
  } catch {
    throw new MigrationError(
      `database URL is not a valid connection string: "${connectionString}"`,
    );
  }
  try {
    await ensurePgmq(connectionString, opts.pgmqMode ?? pgmqModeFromEnv(), opts.log);
  } catch (e) {
    if (e instanceof MigrationError) throw e;
    throw new MigrationError(
      `cannot prepare PGMQ on ${redact(connectionString)}: ${(e as Error).message}`,
    );
  }
  const workdir = opts.workdir ?? decodeURIComponent(PROJECT_ROOT.pathname);
  let deno: string;
  try {
    deno = await denoExecutable(`the Supabase CLI (${SUPABASE_CLI})`);
  } catch (e) {
    throw new MigrationError((e as Error).message);
  }
  const out = await new Deno.Command(deno, {
    args: ['run', '-A', SUPABASE_CLI, 'db', 'push', '--db-url', url, '--yes', '--workdir', workdir],
    stdout: 'piped',
    stderr: 'piped',
    stdin: 'null',
    env: {
      NO_COLOR: '1',
      DO_NOT_TRACK: '1',
      SUPABASE_TELEMETRY_DISABLED: '1',
      MIMALLOC_PURGE_DELAY: cliPurgeDelay(),
    },
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  for (const line of text.split('\n')) if (line.trim()) opts.log?.(line);
  if (!out.success) {
    const failing = text.match(/Applying migration (\S+)\.\.\./g)?.pop()?.replace(
      /Applying migration (\S+)\.\.\./,
      '$1',
    );
    let reason = text.split('\n').filter((l) => /error|ERROR|failed/i.test(l)).join('\n') ||
      text.trim();
    if (/extension "pgmq" is not available/.test(text)) reason += `\nremedy: ${PGMQ_REMEDY}`;
    throw new MigrationError(
      `supabase db push failed${failing ? ` in ${failing}` : ''} on ${
        redact(connectionString)
      }:\n${reason.trim()}`,
    );
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
