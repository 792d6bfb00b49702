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
export * from './errors.ts';
export type { FenceFunctionStatus, FenceStatus } from './sql/fence_status.ts';
export * from './dsl/flow.ts';
export type * from './dsl/flow_types.ts';
export type * from './dsl/context.ts';
export * from './dsl/slugs.ts';
export * from './dsl/json.ts';
export * from './dsl/queue_names.ts';
export * from './dsl/with_step_queues.ts';
export * from './dsl/route_flow.ts';
export * from './dsl/deployed_flow.ts';
export * from './dsl/placement.ts';
export type * from './dsl/aliases.ts';
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
