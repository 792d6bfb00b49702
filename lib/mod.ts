/**
 * Switchyard: durable multi-step workflows on PostgreSQL + PGMQ for Supabase
 * Edge Functions, with explicit shared queues and multi-flow dispatch.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow, routeFlow, startWorker } from './mod.ts';
 *
 * const threadsV1 = new Flow<{ text: string }>({ slug: 'threadsV1' })
 *   .step({ slug: 'classify' }, (input) => ({ long: input.text.length > 100 }))
 *   .step({ slug: 'notify', dependsOn: ['classify'] }, (input) => input.classify.long);
 * const deployed = defineDeployedFlow(
 *   routeFlow(threadsV1, { queues: { classify: 'classify_threads', notify: 'notifications' } }),
 *   { alias: 'threads' },
 * );
 * const worker = await startWorker([deployed], { queueName: 'classify_threads' });
 * await worker.stop();
 * ```
 *
 * @module
 */
export * from './errors.ts';
export * from './flow.ts';
export * from './slugs.ts';
export * from './queue_names.ts';
export * from './with_step_queues.ts';
export * from './route_flow.ts';
export * from './deployed_flow.ts';
export * from './placement.ts';
export * from './worker/errors.ts';
export {
  type CommonWorkerOptions,
  consoleLogger,
  defaultFunctionName,
  type PlainWorkerOptions,
  type QueueWorkerOptions,
  startWorker,
  type StepWorkerOptions,
  type Worker,
  type WorkerLogger,
} from './worker/worker.ts';
export { type Client, connect } from './client.ts';
export * from './operations.ts';
export { ensurePgmq, migrate, MigrationError, type PgmqMode } from './migrate.ts';
export {
  type EdgeAuth,
  type EdgeOptions,
  EdgeWorker,
  type EdgeWorkerHandle,
  type EdgeWorkerStatus,
} from './edge_worker.ts';
export {
  createMemoryPlatform,
  defaultPlatform,
  type MemoryPlatform,
  type Platform,
  type PlatformServer,
  type RequestHandler,
} from './platform.ts';
