/**
 * Per-file test databases. `deno task test` (tools/test.ts) prepares a migrated
 * template database and passes its name here; every test file clones it, so files
 * run in parallel without seeing each other's rows.
 *
 * @module
 */
import postgres from 'postgres';

/** One isolated, migrated database. */
export interface TestDatabase {
  /** Connection string of the cloned database. */
  url: string;
  /** A postgres.js client on it (max 10 connections). */
  sql: postgres.Sql;
  /** Ends the client and drops the database. */
  close(): Promise<void>;
}

function env(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(`${name} is not set: run the suite with \`npx -y deno@2 task test\``);
  }
  return value;
}

/** The admin URL of the test server (a throwaway cluster or `DATABASE_URL`). */
export function adminUrl(): string {
  return env('SWITCHYARD_TEST_ADMIN_URL');
}

/** Builds a connection string for another database on the test server. */
export function urlFor(database: string): string {
  const u = new URL(adminUrl());
  u.pathname = `/${database}`;
  return u.toString();
}

/** Clones the migrated template into a fresh database. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = env('SWITCHYARD_TEST_TEMPLATE');
  const name = `sy_test_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
  try {
    // CREATE DATABASE ... TEMPLATE fails while anyone else is cloning the same template.
    for (let attempt = 0;; attempt++) {
      try {
        await admin.unsafe(`create database "${name}" template "${template}"`);
        break;
      } catch (e) {
        if (attempt > 100 || !/being accessed by other users/.test(String(e))) throw e;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
  const url = urlFor(name);
  const sql = postgres(url, { max: 10, onnotice: () => {}, prepare: false });
  return {
    url,
    sql,
    async close() {
      await sql.end({ timeout: 5 });
      const a = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
      try {
        await a.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await a.end();
      }
    },
  };
}

/**
 * Throws, with the reason, unless the test server has pg_cron and its database for the tests
 * (tools/test.ts probes it and passes `1` or why not): the tests that need pg_cron run or
 * fail, never skip.
 */
export function requirePgCron(): void {
  const found = Deno.env.get('SWITCHYARD_TEST_PG_CRON');
  if (found !== '1') {
    throw new Error(
      `this test needs pg_cron on the test server: ${
        found || 'SWITCHYARD_TEST_PG_CRON is not set (run the suite with `deno task test`)'
      }`,
    );
  }
}

/** The database pg_cron runs its jobs from on the test server (`cron.database_name`). */
export function cronDatabaseName(): string {
  requirePgCron();
  return env('SWITCHYARD_TEST_CRON_DATABASE');
}

/** The pg_cron database, held by one test at a time ({@linkcode withCronDatabase}). */
export interface CronDatabase {
  /** Its name: the server's `cron.database_name`. */
  name: string;
  /** Its connection string. */
  url: string;
  /** A postgres.js client on it (max 4 connections), ended when the test's turn ends. */
  sql: postgres.Sql;
}

/**
 * The advisory lock that orders the pg_cron tests: one at a time holds the pg_cron database,
 * across the files `deno test --parallel` runs at once (each in a process of its own), and the
 * harness's own migration of that database again (tools/test.ts) when an earlier run made it.
 */
export const CRON_LOCK = 0x5359_4352; // "SYCR"

/**
 * Runs `fn` with the server's pg_cron database, the kit migrated in it (a clone of the
 * template that tools/test.ts made). pg_cron runs jobs from one database per server, so the
 * tests that need it take that database in turn: an advisory lock, held on a connection of its
 * own until `fn` ends, makes every other test (in any file or process) wait; and the database
 * is reset before each turn — every cron job unscheduled and its run history gone (the job and
 * run ids start again at 1), every PGMQ queue dropped and every table of schema switchyard
 * emptied — so a test never sees the previous one's jobs, runs or rows. The database itself is
 * never dropped: pg_cron's launcher would stop for good.
 */
export async function withCronDatabase<T>(fn: (db: CronDatabase) => Promise<T>): Promise<T> {
  const name = cronDatabaseName();
  const url = urlFor(name);
  const lock = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
  let sql: postgres.Sql | undefined;
  try {
    await lock`select pg_advisory_lock(${CRON_LOCK})`;
    sql = postgres(url, { max: 4, onnotice: () => {}, prepare: false });
    await resetCronDatabase(sql);
    return await fn({ name, url, sql });
  } finally {
    await sql?.end({ timeout: 5 });
    // Ending the session releases the lock too; unlock first so the next test starts at once.
    await lock`select pg_advisory_unlock(${CRON_LOCK})`.catch(() => {});
    await lock.end({ timeout: 5 });
  }
}

/** Empties the pg_cron database of what any test left: jobs, runs, queues and kit rows. */
async function resetCronDatabase(sql: postgres.Sql): Promise<void> {
  await sql.begin(async (tx) => {
    // Deleting from cron.job is what cron.unschedule does (pg_cron's trigger reloads its jobs).
    await tx`delete from cron.job`;
    await tx`truncate cron.job_run_details`;
    await tx`alter sequence cron.jobid_seq restart`;
    await tx`alter sequence cron.runid_seq restart`;
    await tx`select pgmq.drop_queue(queue_name) from pgmq.list_queues()`;
    const tables = await tx<{ name: string }[]>`
      select format('%I.%I', n.nspname, c.relname) as name from pg_class c
        join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'switchyard' and c.relkind in ('r', 'p')`;
    if (tables.length > 0) {
      await tx.unsafe(
        `truncate ${tables.map((t) => t.name).join(', ')} restart identity cascade`,
      );
    }
  });
}
