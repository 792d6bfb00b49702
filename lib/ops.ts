/**
 * Switchyard's operator entry (`switchyard/ops`): every operator capability. Pause and resume
 * queue functions, quarantine foreign messages, run a fenced rollout, read drain states,
 * configure the keep-alive, prune finished runs (retention), schedules, metrics (also as
 * Prometheus text), rate limits and the other dashboard reads, a flow's option history, refused
 * starts and failed wake-ups, start, signal, cancel and retry runs by hand, and the dashboard
 * itself (`createDashboard`). Queue functions import `switchyard`, applications
 * `switchyard/client`; nothing here is needed inside an Edge Function. See
 * docs/design/versions.md and docs/design/client.md.
 *
 * Every operator call takes a postgres.js client or any object that carries one as `sql`, such
 * as the client of `createClient()` (`switchyard/client`).
 *
 * @example
 * ```ts
 * import { createClient } from './client.ts';
 * import { fenceBegin, fenceEnd, waitForFence } from './ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * await fenceBegin(client, ['classify-threads-worker', 'notifications-worker']);
 * await waitForFence(client, { onProgress: (s) => console.log(s.functions) });
 * // ... deploy the replacement registries while the functions are disabled ...
 * await fenceEnd(client);
 * await client.close();
 * ```
 *
 * @module
 */
export type { SqlSource } from './sql/source.ts';
export {
  type FunctionState,
  functionState,
  listFunctions,
  pauseFunction,
  type PauseResult,
  resumeFunction,
  type ResumeResult,
} from './sql/function_state.ts';
export { quarantineMessages, type QuarantineResult } from './sql/quarantine.ts';
export {
  keepAlive,
  keepAliveCommand,
  type KeepAliveOptions,
  type KeepAliveSetting,
  scheduleKeepAlive,
  setKeepAliveSetting,
  unscheduleKeepAlive,
  type WakeRequest,
} from './sql/keep_alive.ts';
export {
  fenceBegin,
  fenceEnd,
  type FenceEndResult,
  type FenceMember,
  fenceStatus,
  waitForFence,
  type WaitForFenceOptions,
} from './sql/fence.ts';
export type { FenceFunctionStatus, FenceStatus } from './sql/fence_status.ts';
export { type DrainState, drainStatus } from './sql/drain.ts';
export {
  type FlowOptionChange,
  flowOptionHistory,
  type FlowRuntimeOptions,
} from './sql/flow_options.ts';
export {
  prune,
  pruneAll,
  type PruneAllOptions,
  pruneCommand,
  type PruneOptions,
  type PruneResult,
  schedulePrune,
  type SchedulePruneOptions,
  unschedulePrune,
} from './sql/prune.ts';
export * from './sql/schedules.ts';
export * from './sql/row_triggers.ts';
export { type BatchOverview, batchOverviews, type BatchOverviewsOptions } from './sql/batches.ts';
export {
  type DashboardSnapshot,
  dashboardSnapshot,
  type DashboardSnapshotOptions,
  type FunctionOverview,
  functionOverviews,
  type FunctionWorker,
  type QueueDepth,
  queueDepths,
  type QueueOverview,
  type QueueThroughput,
  type QueueTotals,
  rateLimits,
  type RateLimitState,
  recentRuns,
  type RecentRunsOptions,
  type RunOverview,
  type RunStepOverview,
  throughput,
} from './sql/dashboard_queries.ts';
export {
  type MetricBucket,
  type MetricCounter,
  type MetricGauge,
  type MetricSnapshot,
  metricSnapshot,
} from './sql/metric_snapshot.ts';
export {
  type Metrics,
  metrics,
  metricsHistory,
  type QueueHistory,
  type QueueMetrics,
  type StepMetrics,
} from './sql/metrics.ts';
export {
  type FunctionRefusal,
  functionRefusals,
  type WakeFailure,
  wakeFailures,
} from './sql/refusals.ts';
export { PROMETHEUS_CONTENT_TYPE, prometheusText } from './ops/prometheus.ts';
export {
  cancelRun,
  type RetryOptions,
  retryRun,
  runEvents,
  type RunEventsOptions,
  runStatus,
  signalRun,
  startRun,
} from './sql/runs.ts';
// The types of these calls (ActorOption, RerunResult, BulkRunOptions…) are ./client's, where the
// typed client names them too.
export {
  bulkRunAction,
  forkRun,
  moveRun,
  pauseRun,
  rerunRun,
  resumeRun,
} from './sql/run_controls.ts';
export {
  createDashboard,
  type Dashboard,
  type DashboardAccess,
  type DashboardAction,
  type DashboardOptions,
  type DashboardOverview,
  type DashboardRunDetail,
} from './ops/dashboard.ts';
