/**
 * Switchyard's client for applications (`switchyard/client.ts`): start runs by alias with
 * inputs typed from your registry, await their typed outputs, follow their events live,
 * cancel and retry them (docs/ARCHITECTURE.md §14). It needs no operator tooling (no
 * migrations, no Supabase CLI) and no worker code: import it from a server route, a script
 * or an Edge Function that starts flows. `lib/mod.ts` (`switchyard`) and `lib/ops.ts`
 * re-export it, so a handler can start other flows and operators have it too.
 *
 * @example
 * ```ts
 * import { createClient, RunFailedError } from './client.ts';
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
export {
  type CancelResult,
  type DebounceStart,
  type DedupeStart,
  type RetryResult,
  RUN_EVENTS_CHANNEL,
  type RunEvent,
  type RunEventName,
  type RunStatus,
  type RunStatusValue,
  type SignalResult,
  type SingletonStart,
  type StartKeyOptions,
  type StartRunBaseOptions,
  type StartRunOptions,
  type StepStatus,
  type StepStatusValue,
  type UnkeyedStart,
} from './sql/runs.ts';
// The DSL's types the client's signatures name (no DSL code is imported for them).
export type * from './dsl/types.ts';
export type { Sql } from './sql/connection.ts';
export {
  OperationError,
  RunFailedError,
  RunNotFoundError,
  RunTimeoutError,
  SwitchyardError,
} from './errors.ts';
