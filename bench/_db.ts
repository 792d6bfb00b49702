/**
 * The benchmark's database: a throwaway cluster (tools/_cluster.ts), or a fresh database on
 * the server named by `DATABASE_URL`. Either way the kit's migrations are applied with
 * `migrate()` and everything is removed afterwards.
 *
 * @module
 */
import postgres from 'postgres';
import { type Cluster, startCluster } from '../tools/_cluster.ts';
import { migrate } from '../lib/sql/migrate.ts';

/** A migrated database that exists only for one benchmark run. */
export interface BenchDatabase {
  /** Connection string of the benchmark database. */
  url: string;
  /** A small pool for set-up and measurement queries. */
  sql: postgres.Sql;
  /** Where it runs: `throwaway cluster` or `DATABASE_URL`. */
  where: string;
  /**
   * CPU seconds used so far by the throwaway cluster's server processes (backends that
   * exited count through the postmaster's reaped-children time) and by this process (which
   * hosts the workers and raw loops), or null with `DATABASE_URL` (the server's processes
   * are not ours to read).
   */
  cpuSeconds(): Promise<{ server: number; bench: number } | null>;
  /**
   * Creates and migrates another database on the same server (for figures that compare
   * databases side by side), dropped by `close()`. `workdir` is a project directory whose
   * `supabase/migrations` are applied instead of this checkout's (a baseline commit).
   */
  createDatabase(label: string, opts?: { workdir?: string }): Promise<ExtraDatabase>;
  /**
   * Copies a database made by `createDatabase` (`create database … template …`: a fresh copy of
   * a migrated database in a fraction of a second). The template must have no session: its pool
   * is ended first, and it can only be a template from then on.
   */
  cloneDatabase(template: ExtraDatabase, label: string): Promise<ExtraDatabase>;
  /** Drops a database made by `createDatabase` or `cloneDatabase` before `close()`. */
  dropDatabase(db: ExtraDatabase): Promise<void>;
  /** Drops the database (and stops the throwaway cluster). Safe to call twice. */
  close(): Promise<void>;
}

/** Another migrated database on the bench's server (see `BenchDatabase.createDatabase`). */
export interface ExtraDatabase {
  /** Its connection string. */
  url: string;
  /** A small pool on it. */
  sql: postgres.Sql;
  /** Its name. */
  name: string;
}

/** Creates and migrates the benchmark database. */
export async function openBenchDatabase(
  log: (line: string) => void,
  opts: { profile?: boolean } = {},
): Promise<BenchDatabase> {
  const given = Deno.env.get('DATABASE_URL');
  let cluster: Cluster | undefined;
  let adminUrl: string;
  if (given) {
    adminUrl = given;
  } else {
    cluster = await startCluster({
      log,
      preload: opts.profile ? ['pg_stat_statements'] : [],
    });
    adminUrl = cluster.url;
  }
  const name = `switchyard_bench_${crypto.randomUUID().slice(0, 8)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  let created = false;
  const extra: ExtraDatabase[] = [];
  const dropAndStop = async () => {
    const names = [...(created ? [name] : []), ...extra.map((e) => e.name)];
    for (const e of extra) await e.sql.end({ timeout: 1 }).catch(() => {});
    if (names.length > 0) {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        for (const n of names) {
          try {
            await a.unsafe(`drop database if exists "${n}" with (force)`);
          } catch (e) {
            log(`could not drop ${n}: ${(e as Error).message}`);
          }
        }
      } finally {
        await a.end({ timeout: 1 });
      }
    }
    await cluster?.stop();
  };
  try {
    await admin.unsafe(`create database "${name}"`);
    created = true;
    // Supabase's roles, so the grants migration behaves as on a real project.
    for (const role of ['anon', 'authenticated', 'service_role']) {
      await admin.unsafe(
        `do $$ begin create role ${role} nologin; exception when duplicate_object then null; end $$`,
      );
    }
    if (opts.profile) {
      // Statements inside functions too, for sessions of this database only.
      await admin.unsafe(`alter database "${name}" set pg_stat_statements.track = 'all'`);
    }
  } catch (e) {
    await admin.end({ timeout: 1 });
    await dropAndStop();
    throw e;
  }
  await admin.end({ timeout: 1 });
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  try {
    await migrate(url);
  } catch (e) {
    await dropAndStop();
    throw e;
  }
  const sql = postgres(url, { max: 4, onnotice: () => {}, prepare: false });
  if (opts.profile) {
    try {
      await sql`create extension if not exists pg_stat_statements`;
      await sql`select pg_stat_statements_reset()`;
    } catch (e) {
      await sql.end({ timeout: 1 });
      await dropAndStop();
      throw new Error(
        `--profile needs pg_stat_statements in shared_preload_libraries of the server ` +
          `(the throwaway cluster preloads it): ${(e as Error).message}`,
      );
    }
  }
  let closed: Promise<void> | undefined;
  const createDatabase = async (label: string, o: { workdir?: string } = {}) => {
    const extraName = `${name}_${label}`;
    const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      await a.unsafe(`create database "${extraName}"`);
      if (opts.profile) {
        await a.unsafe(`alter database "${extraName}" set pg_stat_statements.track = 'all'`);
      }
    } finally {
      await a.end({ timeout: 1 });
    }
    const v = new URL(adminUrl);
    v.pathname = `/${extraName}`;
    const db: ExtraDatabase = {
      url: v.toString(),
      name: extraName,
      sql: postgres(v.toString(), { max: 4, onnotice: () => {}, prepare: false }),
    };
    extra.push(db);
    await migrate(db.url, { workdir: o.workdir });
    return db;
  };
  const cloneDatabase = async (template: ExtraDatabase, label: string) => {
    await template.sql.end({ timeout: 2 });
    const cloneName = `${name}_${label}`;
    const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      await a.unsafe(`create database "${cloneName}" template "${template.name}"`);
      // Database settings are not part of a template.
      if (opts.profile) {
        await a.unsafe(`alter database "${cloneName}" set pg_stat_statements.track = 'all'`);
      }
    } finally {
      await a.end({ timeout: 1 });
    }
    const v = new URL(adminUrl);
    v.pathname = `/${cloneName}`;
    const db: ExtraDatabase = {
      url: v.toString(),
      name: cloneName,
      sql: postgres(v.toString(), { max: 4, onnotice: () => {}, prepare: false }),
    };
    extra.push(db);
    return db;
  };
  const dropDatabase = async (db: ExtraDatabase) => {
    await db.sql.end({ timeout: 2 }).catch(() => {});
    const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      await a.unsafe(`drop database if exists "${db.name}" with (force)`);
    } finally {
      await a.end({ timeout: 1 });
    }
    extra.splice(extra.indexOf(db), 1);
  };
  return {
    createDatabase,
    cloneDatabase,
    dropDatabase,
    url,
    sql,
    where: given ? 'DATABASE_URL' : 'throwaway cluster',
    async cpuSeconds() {
      if (!cluster) return null;
      const postmaster = Number(
        (await Deno.readTextFile(`${cluster.dir}/data/postmaster.pid`)).split('\n')[0],
      );
      let server = 0;
      let bench = 0;
      for await (const entry of Deno.readDir('/proc')) {
        if (!/^\d+$/.test(entry.name)) continue;
        const pid = Number(entry.name);
        // Fields after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15).
        const f = await Deno.readTextFile(`/proc/${pid}/stat`)
          .then((t) => t.slice(t.lastIndexOf(')') + 2).split(' '))
          .catch(() => null);
        if (!f) continue;
        if (pid === postmaster) {
          server += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
        } else if (Number(f[1]) === postmaster) {
          server += Number(f[11]) + Number(f[12]);
        } else if (pid === Deno.pid) {
          bench += Number(f[11]) + Number(f[12]);
        }
      }
      return { server: server / 100, bench: bench / 100 }; // USER_HZ is 100 on Linux
    },
    close() {
      closed ??= (async () => {
        await sql.end({ timeout: 2 });
        await dropAndStop();
      })();
      return closed;
    },
  };
}
