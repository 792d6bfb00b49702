/**
 * Switchyard's operator and development entry (`switchyard/ops.ts`): apply the
 * migrations, pause and resume queue functions, quarantine foreign messages, run a fenced
 * rollout, read drain states, configure the keep-alive, prune finished runs (retention), serve
 * the dashboard (`createDashboard`), cancel and retry runs (`cancelRun`, `retryRun`), and the
 * client that starts and follows runs (`createClient`, also in `lib/client.ts` for
 * applications; `connect()` is its deprecated untyped predecessor). Queue functions import
 * `lib/mod.ts` instead; nothing here is needed inside an Edge Function. See
 * docs/ARCHITECTURE.md §6 and §14.
 *
 * Every operator call takes a postgres.js client, the client of `createClient()`
 * or the client of `connect()`.
 *
 * @example
 * ```ts
 * import { connect, fenceBegin, fenceEnd, waitForFence } from './ops.ts';
 *
 * const client = connect(Deno.env.get('DATABASE_URL'));
 * await fenceBegin(client, ['classify-threads-worker', 'notifications-worker']);
 * await waitForFence(client, { onProgress: (s) => console.log(s.functions) });
 * // ... deploy the replacement registries while the functions are disabled ...
 * await fenceEnd(client);
 * await client.close();
 * ```
 *
 * @module
 */
export * from './errors.ts';
export {
  type Client,
  type ClientConnection,
  connect,
  createClient,
  type EventsOptions,
  type RunHandle,
  type StartFlowOptions,
  type SwitchyardClient,
  type WaitOptions,
} from './sql/client_queries.ts';
export * from './sql/runs.ts';
// The DSL's types the client's signatures name (no DSL code is imported for them).
export type * from './dsl/types.ts';
export {
  CONNECTION_ENV_VARS,
  connectionFailure,
  type ConnectionKind,
  connectionOrigin,
  type ConnectionSettings,
  type EnvReader,
  parseConnectionString,
  resolveConnectionString,
  type Sql,
  type SslMode,
  TRANSACTION_POOLER_MAX_CONNECTIONS,
} from './sql/connection.ts';
export type { SqlSource } from './sql/source.ts';
export * from './sql/function_state.ts';
export * from './sql/quarantine.ts';
export * from './sql/keep_alive.ts';
export * from './sql/fence.ts';
export * from './sql/drain.ts';
export * from './sql/flow_options.ts';
export * from './sql/prune.ts';
export * from './sql/schedules.ts';
export * from './sql/dashboard_queries.ts';
export * from './sql/metrics.ts';
export * from './sql/refusals.ts';
export { PROMETHEUS_CONTENT_TYPE, prometheusText } from './ops/prometheus.ts';
export {
  ensurePgmq,
  isLocalDatabase,
  migrate,
  type MigrateOptions,
  PGMQ_REMEDY,
  type PgmqMode,
  pgmqModeFromEnv,
  pgmqProvider,
  SUPABASE_CLI,
  withLocalSslMode,
} from './sql/migrate.ts';
export { formatDrainStatus, formatFenceStatus, formatMetrics } from './ops/format.ts';
export {
  createDashboard,
  type Dashboard,
  DASHBOARD_AUTH_ENV,
  type DashboardAccess,
  type DashboardAction,
  type DashboardOptions,
  type DashboardOverview,
  type DashboardRunDetail,
} from './ops/dashboard.ts';
export {
  createRunEventStream,
  type RunEventStream,
  type RunEventStreamOptions,
  verifyUserJwt,
} from './platform/run_event_stream.ts';
export {
  authProblem,
  BEARER_SECRET_ENV_VARS,
  type EdgeAuth,
  SECRET_KEYS_ENV_VAR,
  secretKeys,
} from './platform/auth.ts';
