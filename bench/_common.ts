/**
 * What the benchmark's figures share: compiling deployments, timing a side with its CPU
 * use, polling with a deadline.
 *
 * @module
 */
import type postgres from 'postgres';
import { toPlacement } from '../lib/dsl/placement.ts';
import type { WorkerTarget } from '../lib/dsl/placement.ts';
import { since } from './_stats.ts';

/** Bench progress goes to stderr; the results table goes to stdout. */
export const log = (line: string) => console.error(`[bench] ${line}`);
/** A worker logger that only reports errors. */
export const silent = { info() {}, warn() {}, error: (m: string) => log(`worker error: ${m}`) };
/** Resolves after `ms` milliseconds. */
/** The worker options every engine side of the bench uses: the run's concurrency and batch. */
export function benchWorkerOptions(o: { concurrency: number; batch: number }) {
  return {
    maxConcurrent: o.concurrency,
    batchSize: o.batch,
    visibilityTimeout: 60,
    maxPollSeconds: 1,
    pollIntervalMs: 10,
    logger: silent,
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Compiles deployments straight through SQL, 100 shapes per statement. */
export async function compile(
  sql: postgres.Sql,
  registry: readonly WorkerTarget[],
): Promise<void> {
  const shapes = registry.map((d) => toPlacement(d).shape);
  for (let i = 0; i < shapes.length; i += 100) {
    const chunk = shapes.slice(i, i + 100);
    await sql`select switchyard.ensure_flow(s) from jsonb_array_elements(${
      sql.json(chunk as never)
    }::jsonb) s`;
  }
}

/** Polls `check` every 10 ms until it is true; throws after `timeoutMs`. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(10);
  }
}

/**
 * One timed side of a round: items per second, and CPU milliseconds per item in total and
 * in the database server (null against `DATABASE_URL`).
 */
export interface Sample {
  rate: number;
  cpuMs: number | null;
  serverCpuMs: number | null;
}

/** Where CPU time is read from (the bench database's `cpuSeconds`). */
export interface CpuSource {
  cpuSeconds(): Promise<{ server: number; bench: number } | null>;
}

/** Times `body`, which handles `items` items, and the CPU the bench and its server used. */
export async function timed(db: CpuSource, items: number, body: () => Promise<void>) {
  const cpu0 = await db.cpuSeconds();
  const t0 = performance.now();
  await body();
  const seconds = since(t0) / 1000;
  const cpu1 = await db.cpuSeconds();
  const per = (a: number, b: number) => ((b - a) * 1000) / items;
  return {
    rate: items / seconds,
    cpuMs: cpu0 && cpu1 ? per(cpu0.server + cpu0.bench, cpu1.server + cpu1.bench) : null,
    serverCpuMs: cpu0 && cpu1 ? per(cpu0.server, cpu1.server) : null,
  } satisfies Sample;
}
