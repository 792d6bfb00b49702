/**
 * Switchyard: durable multi-step workflows on PostgreSQL + PGMQ for Supabase
 * Edge Functions, with explicit shared queues and multi-flow dispatch.
 *
 * This is what a queue function imports: the flow DSL (`Flow`, `withStepQueues`, `routeFlow`,
 * `defineDeployedFlow`), the worker (`EdgeWorker`, `startWorker`), what a handler throws to
 * control its retries (`RetryAfter`, `NonRetriable`), every error class as the `errors`
 * namespace, `createRunEventStream`, the endpoint `followRun` reads, for an Edge Function of
 * one's own, and `runSpanIdGenerator` for a tracer provider (run spans). The other audiences
 * have entries of their own: `switchyard/client` (an app starts
 * and follows runs), `switchyard/ops` (an operator), `switchyard/errors` (every error class),
 * `switchyard/testing` (a test) and `switchyard/browser` (a page). See docs/design/code-layout.md.
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
// The runtime-neutral half (the DSL, RetryAfter, NonRetriable, errors): npm's `switchyard`.
export * from './flows.ts';
// What `createRunEventStream`'s options name: `deno doc --lint` of this entry alone needs it.
export type { SqlSource } from './sql/source.ts';
export type { Sql } from './sql/connection.ts';
export {
  type CommonWorkerOptions,
  type PlainWorkerOptions,
  type QueueWorkerOptions,
  startWorker,
  type StepWorkerOptions,
  type Worker,
  type WorkerLogger,
  type WorkerState,
} from './worker/worker.ts';
export type { WorkerSettings } from './worker/settings.ts';
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
} from './platform/run_event_stream.ts';
export { runSpanIdGenerator } from './tracing.ts';
export type { EnvReader } from './sql/connection.ts';
export type { Platform, PlatformServer, RequestHandler } from './platform/platform.ts';
export {
  createWebhook,
  hmacSha256Hex,
  serveWebhook,
  type SignatureCheck,
  type VerifyOptions,
  verifyWebhookSignature,
  type Webhook,
  type WebhookOptions,
} from './platform/webhook.ts';
