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
 * Throws, with the reason, unless the test server has pg_cron in its admin database
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
