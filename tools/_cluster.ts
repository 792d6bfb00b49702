/**
 * A throwaway PostgreSQL cluster for tests, benchmarks and local tools.
 *
 * The cluster lives in a fresh temp directory, listens on 127.0.0.1 at a port
 * picked free at run time, runs with fsync off and preloads pg_cron when the
 * pg_cron package is installed. `initdb`/`postgres` refuse to run as root, so
 * under root they run as the `postgres` system user.
 *
 * @module
 */
import postgres from 'postgres';
import { canConnect, exists, freePort } from '../cli/_util.ts';

/** Where Debian's `postgresql-15` package puts the server binaries. */
export const DEFAULT_PG_BIN = '/usr/lib/postgresql/15/bin';

/** Raised when the server binaries are missing, with the install hint. */
export class PostgresBinariesMissingError extends Error {
  constructor(binDir: string) {
    super(
      `PostgreSQL server binaries not found in ${binDir} (initdb, postgres): install them with ` +
        '`apt-get update && apt-get install -y postgresql-15 postgresql-15-cron postgresql-15-plpgsql-check`, ' +
        'set PG_BIN to their directory, or set DATABASE_URL to use a running server',
    );
    this.name = 'PostgresBinariesMissingError';
  }
}

/** A running throwaway cluster. */
export interface Cluster {
  /** Superuser connection string for the `postgres` database. */
  url: string;
  port: number;
  dir: string;
  pid: number;
  /**
   * Whether pg_cron is preloaded: its jobs run in `cronDatabase` (`cron.database_name`), where
   * it is created at start when that is `postgres`; another database is the caller's to create.
   */
  pgCron: boolean;
  /** The database pg_cron runs its jobs from (`cron.database_name`). */
  cronDatabase: string;
  /** Stops the server and removes its directory. Safe to call twice. */
  stop(): Promise<void>;
  /**
   * Restarts the server on the same data directory and port: a fast shutdown (sessions are
   * aborted, every committed transaction is kept), then a new postmaster. `pid` changes.
   * Resolves once the server accepts queries again.
   */
  restart(): Promise<void>;
}

function isRoot(): boolean {
  return Deno.uid?.() === 0;
}

function asServerUser(cmd: string, args: string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

async function run(cmd: string, args: string[]): Promise<void> {
  const [c, a] = asServerUser(cmd, args);
  const out = await new Deno.Command(c, { args: a, stdout: 'piped', stderr: 'piped' }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(`${cmd} failed: ${text.trim()}`);
  }
}

/** Starts a throwaway cluster. Call `stop()` in a `finally`. */
export async function startCluster(
  opts: {
    binDir?: string;
    maxConnections?: number;
    log?: (line: string) => void;
    /** Extra libraries to preload (for example `pg_stat_statements` for profiling). */
    preload?: string[];
    /**
     * pg_cron's database (`cron.database_name`, default `postgres`, where the extension is then
     * created at start). Another name is left to the caller to create, with the extension in it:
     * the test harness gives the pg_cron tests a database of their own this way.
     */
    cronDatabase?: string;
  } = {},
): Promise<Cluster> {
  const binDir = opts.binDir ?? Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN;
  const initdb = `${binDir}/initdb`;
  const postgresBin = `${binDir}/postgres`;
  if (!(await exists(initdb)) || !(await exists(postgresBin))) {
    throw new PostgresBinariesMissingError(binDir);
  }
  const libDir = binDir.replace(/\/bin\/?$/, '/lib');
  const pgCron = await exists(`${libDir}/pg_cron.so`);

  const dir = await Deno.makeTempDir({ prefix: 'switchyard-pg-' });
  if (isRoot()) {
    await new Deno.Command('chown', { args: ['postgres:postgres', dir] }).output();
  }
  const dataDir = `${dir}/data`;
  const removeDir = () => Deno.remove(dir, { recursive: true }).catch(() => undefined);
  try {
    await run(initdb, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  } catch (e) {
    await removeDir();
    throw e;
  }

  const port = freePort();
  const settings = [
    `listen_addresses=127.0.0.1`,
    `port=${port}`,
    `unix_socket_directories=${dir}`,
    'fsync=off',
    'synchronous_commit=off',
    'full_page_writes=off',
    `max_connections=${opts.maxConnections ?? 400}`,
    'shared_buffers=128MB',
    'log_min_messages=warning',
  ];
  const preload = [...(pgCron ? ['pg_cron'] : []), ...(opts.preload ?? [])];
  if (preload.length > 0) settings.push(`shared_preload_libraries=${preload.join(',')}`);
  const cronDatabase = opts.cronDatabase ?? 'postgres';
  if (!/^[a-z_][a-z0-9_]*$/.test(cronDatabase)) {
    throw new Error(
      `cronDatabase "${cronDatabase}" is invalid: use a lower-case identifier (letters, digits, _)`,
    );
  }
  if (pgCron) settings.push(`cron.database_name=${cronDatabase}`);
  const args = ['-D', dataDir, ...settings.flatMap((s) => ['-c', s])];
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;

  let server: Server | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (server) await shutdown(server, dataDir);
    await removeDir();
  };

  // Starts a postmaster on the data directory and waits until it answers queries.
  const launch = async (firstStart: boolean) => {
    const [c, a] = asServerUser(postgresBin, args);
    // Append: a restart keeps the log of the previous server.
    const logFile = await Deno.open(`${dir}/server.log`, {
      write: true,
      create: true,
      append: true,
    });
    const child = new Deno.Command(c, { args: a, stdout: 'null', stderr: 'piped' }).spawn();
    // Copy server stderr into a log file so a failed start can be explained.
    const logDone = child.stderr.pipeTo(logFile.writable).catch(() => undefined);
    server = { child, logDone };

    const deadline = Date.now() + 30_000;
    for (;;) {
      if (await canConnect(port)) break;
      const status = await Promise.race([
        child.status,
        new Promise<null>((r) => setTimeout(() => r(null), 100)),
      ]);
      if (status !== null || Date.now() > deadline) {
        const log = await Deno.readTextFile(`${dir}/server.log`).catch(() => '');
        await stop();
        throw new Error(`PostgreSQL did not start on port ${port}: ${log.trim().slice(-2000)}`);
      }
    }
    // The postmaster accepts TCP before it accepts logins; wait for a real query.
    for (;;) {
      const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
      try {
        await sql`select 1`;
        if (pgCron && firstStart && cronDatabase === 'postgres') {
          await sql`create extension if not exists pg_cron`;
        }
        await sql.end();
        break;
      } catch (e) {
        await sql.end({ timeout: 0 }).catch(() => undefined);
        if (Date.now() > deadline) {
          await stop();
          throw e;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  await launch(true);
  opts.log?.(`PostgreSQL started on port ${port} in ${dir}${pgCron ? ' (pg_cron)' : ''}`);
  return {
    url,
    port,
    dir,
    get pid() {
      return server!.child.pid;
    },
    pgCron,
    cronDatabase,
    stop,
    async restart() {
      if (stopped) throw new Error(`cannot restart PostgreSQL on port ${port}: it was stopped`);
      await shutdown(server!, dataDir);
      await launch(false);
      opts.log?.(`PostgreSQL restarted on port ${port}`);
    },
  };
}

interface Server {
  child: Deno.ChildProcess;
  logDone: Promise<unknown>;
}

// `runuser` does not forward signals, so stop the postmaster itself: SIGINT is
// PostgreSQL's "fast shutdown" (abort sessions, clean exit), SIGKILL the fallback.
async function shutdown(server: Server, dataDir: string): Promise<void> {
  const postmasterPid = await readPostmasterPid(dataDir);
  const signal = (sig: Deno.Signal) => {
    try {
      if (postmasterPid) Deno.kill(postmasterPid, sig);
      else server.child.kill(sig);
    } catch { /* already gone */ }
  };
  signal('SIGINT');
  const killer = setTimeout(() => signal('SIGKILL'), 10_000);
  await server.child.status;
  clearTimeout(killer);
  await server.logDone;
}

async function readPostmasterPid(dataDir: string): Promise<number | undefined> {
  try {
    const pid = Number((await Deno.readTextFile(`${dataDir}/postmaster.pid`)).split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
