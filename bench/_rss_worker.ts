/**
 * A worker process for the memory figure: polls `BENCH_QUEUE` with a registry of
 * `BENCH_FLOWS` routed deployments (3 steps each, prefix `BENCH_PREFIX`). Prints `ready` once
 * it polls; stops when its stdin closes. The parent reads its peak RSS from /proc.
 *
 * @module
 */
import { startWorker } from '../lib/mod.ts';
import { routedRegistry } from './_flows.ts';

const count = Number(Deno.env.get('BENCH_FLOWS') ?? '1');
const prefix = Deno.env.get('BENCH_PREFIX') ?? 'rss';
const queue = Deno.env.get('BENCH_QUEUE') ?? 'bench_rss';
const worker = await startWorker(routedRegistry(prefix, count, 3, queue), {
  queueName: queue,
  connectionString: Deno.env.get('DATABASE_URL'),
  maxConcurrent: 10,
  maxPollSeconds: 1,
  pollIntervalMs: 10,
  logger: { info() {}, warn() {}, error: (m) => console.error(m) },
});
console.log('ready');
// The parent closes stdin to stop the worker.
for await (const _ of Deno.stdin.readable) { /* drain until EOF */ }
await worker.stop();
