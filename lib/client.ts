/**
 * Switchyard's client for applications (`switchyard/client`): start runs by alias with
 * inputs typed from your registry, await their typed outputs, follow their events live,
 * signal, cancel and retry them (docs/design/client.md), with a registry's types as an app
 * sees them (`Registry`, `AliasOf`, `AliasInput`, `AliasOutput`, …). It needs no operator
 * tooling (no migrations, no Supabase CLI) and no worker code: import it from a server route, a
 * script, an Edge Function or a handler that starts flows. The errors it throws
 * (`RunFailedError`, `RunTimeoutError`, …) are in `switchyard/errors`.
 *
 * @example
 * ```ts
 * import { createClient } from './client.ts';
 * import { RunFailedError } from './errors.ts';
 * import { registry } from '../supabase/functions/_shared/registry.ts';
 *
 * const client = createClient(registry, { connectionString: Deno.env.get('DATABASE_URL') });
 * const run = await client.start('communityThreads', {
 *   id: 't1',
 *   title: 'Checkout is down',
 *   body: 'since 9:00',
 * }, { runId: crypto.randomUUID() });
 * try {
 *   const { deliverSlack } = await run.output({ timeoutMs: 30_000 });
 *   console.log(deliverSlack.posted);
 * } catch (e) {
 *   if (e instanceof RunFailedError) console.error(e.message); // failed, or cancelled: the reason
 * }
 * await client.close();
 * ```
 *
 * @module
 */
export {
  type ClientConnection,
  createClient,
  type EventsOptions,
  type RunHandle,
  type SignalOptions,
  type SwitchyardClient,
  type WaitOptions,
} from './sql/client_queries.ts';
export type {
  CancelResult,
  DebounceStart,
  DedupeStart,
  RetryResult,
  RunEvent,
  RunEventName,
  RunOrigin,
  RunStatus,
  RunStatusValue,
  SignalResult,
  SingletonStart,
  StartKeyOptions,
  StartRunBaseOptions,
  StartRunOptions,
  StepStatus,
  StepStatusValue,
  UnkeyedStart,
} from './sql/runs.ts';
export type {
  ActorOption,
  BulkAction,
  BulkRunOptions,
  BulkRunOutcome,
  ForkOptions,
  ForkResult,
  RerunOptions,
  RerunResult,
  RunControlResult,
} from './sql/run_controls.ts';
export type { Sql } from './sql/connection.ts';
// A registry's types as an app sees them: its aliases and their inputs, outputs and signals.
export type {
  AliasFlows,
  AliasInput,
  AliasOf,
  AliasOutput,
  AliasSignals,
  AliasStepOutputs,
  AliasStepSlugs,
  DeploymentsOf,
  Registry,
  RegistrySignals,
} from './dsl/aliases.ts';
