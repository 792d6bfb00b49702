/**
 * Switchyard: durable multi-step workflows on PostgreSQL + PGMQ for Supabase
 * Edge Functions, with explicit shared queues and multi-flow dispatch.
 *
 * This is what a queue function imports: the flow DSL, `EdgeWorker`,
 * `startWorker`, every error class, and the client that starts and follows
 * runs (`createClient`, also alone in `lib/client.ts`), and `createRunEventStream`, the
 * endpoint `followRun` (lib/browser.js) reads, for an Edge Function of one's own. Operator
 * and development calls (migrations, pause/resume, fence, drain, keep-alive, the `connect()`
 * client) are in `lib/ops.ts` (`switchyard/ops.ts`). See docs/ARCHITECTURE.md.
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
// The flow DSL and every error class, also an entry of its own (runtime-neutral, for Node too).
export * from './flows.ts';
export * from './client.ts';
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
  type WorkerState,
} from './worker/worker.ts';
export { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from './sql/windows.ts';
export {
  HEARTBEAT_WINDOW_INTERVALS,
  WORKER_SETTINGS,
  type WorkerSetting,
  type WorkerSettings,
} from './worker/settings.ts';
export {
  type EdgeAuth,
  type EdgeOptions,
  EdgeWorker,
  type EdgeWorkerHandle,
  type EdgeWorkerStatus,
} from './platform/edge_worker.ts';
export {
  createRunEventStream,
  type RunEventStream,
  type RunEventStreamOptions,
  verifyUserJwt,
} from './platform/run_event_stream.ts';
export type { SqlSource } from './sql/source.ts';
export type { EnvReader } from './sql/connection.ts';
export {
  createMemoryPlatform,
  defaultPlatform,
  HOSTED_RUNTIME_ENV_VARS,
  hostedRuntimeSignal,
  type MemoryPlatform,
  type Platform,
  type PlatformServer,
  type RequestHandler,
} from './platform/platform.ts';
