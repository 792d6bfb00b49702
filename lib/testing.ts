/**
 * Switchyard's test engine (`switchyard/testing`, docs/design/clock.md): test a flow with the
 * real engine in-process. The project's own SQL core runs in an embedded PGlite database (no
 * server, no Docker) or a given local one, with the registry compiled; the test starts runs by
 * alias with typed inputs, drives the worker loop until nothing is ready, replaces step handlers
 * with typed mocks, signals, cancels and retries, and moves a virtual clock that every time rule
 * of the SQL core reads: a week-long wait and a retry's backoff take no time.
 *
 * @example
 * ```ts
 * import assert from 'node:assert/strict';
 * import { defineDeployedFlow, Flow, signalPayload } from './mod.ts';
 * import { createTestEngine } from './testing.ts';
 *
 * const refundV1 = new Flow<{ order: string }>({ slug: 'refundV1', maxAttempts: 3 })
 *   .wait({ slug: 'approve', payload: signalPayload<{ by: string }>(), timeout: 7 * 86400 })
 *   .step({ slug: 'pay', dependsOn: ['approve'] }, (input) => `refunded by ${input.approve.by}`);
 * const registry = [defineDeployedFlow(refundV1, { alias: 'refund' })] as const;
 *
 * Deno.test('a refund waits for its approval, then pays once', async () => {
 *   const engine = await createTestEngine({ registry });
 *   try {
 *     const run = await engine.start('refund', { order: 'o-1' });
 *     await engine.advance('3d');
 *     await engine.signal(run, 'approve', { by: 'ana' });
 *     await engine.runUntilIdle();
 *     assert.deepEqual(await engine.output(run), { pay: 'refunded by ana' });
 *   } finally {
 *     await engine.close();
 *   }
 * });
 * ```
 *
 * @module
 */
export {
  type AdvanceOptions,
  type AliasHandlerInput,
  type AliasHandlerOutput,
  type AliasHandlerSlugs,
  createTestEngine,
  type IdleReport,
  type MockOptions,
  type ReplayOptions,
  type RunFailure,
  type RunRef,
  type RunUntilIdleOptions,
  type StepCall,
  type StepMock,
  type StepMockHandler,
  type TestEngine,
  type TestEngineOptions,
} from './testing/engine.ts';
export { type Duration, durationMs } from './testing/duration.ts';
// What a flow records of each handler's types, which a mock is typed by.
export type { HandlerInput, HandlerOutput, HandlerSlugs } from './dsl/flow.ts';
export {
  assertRunRecord,
  exportRun,
  RUN_RECORD_FORMAT,
  type RunRecord,
  type RunRecordEvent,
  type RunRecordStep,
  type RunRecordTask,
} from './sql/run_export.ts';
// The types the engine's signatures name are the other entries' (the DSL's in `switchyard`,
// the client's in `switchyard/client`, the errors in `switchyard/errors`), not repeated here.
