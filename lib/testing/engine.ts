/**
 * The test engine (docs/design/clock.md#the-test-engine): the project's own SQL core, in a PGlite
 * database
 * of this process (or a given local database), driven by the worker's own parts (the executor,
 * the completion writer, the claim) in this process, under a virtual clock.
 *
 * Nothing here decides what the SQL core decides: the engine reads ready messages, claims them
 * with `start_tasks`, runs their handlers (or a test's mocks) through the worker's executor and
 * writes the outcomes with `complete_tasks`/`fail_task`, and it ticks what pg_cron ticks in
 * production (`run_schedules`, `expire_waits`, `cancel_overdue_runs`) and the worker's stall
 * sweep. Time moves only when the test says so: {@linkcode TestEngine.advance}.
 *
 * @module
 */
import type {
  AliasFlows,
  AliasInput,
  AliasOf,
  AliasOutput,
  AliasSignals,
  AliasStepOutputs,
  AliasStepSlugs,
  Registry,
  RegistrySignals,
} from '../dsl/aliases.ts';
import type { StepContext } from '../dsl/context.ts';
import type { HandlerInput, HandlerOutput, HandlerSlugs } from '../dsl/flow.ts';
import type { StepDefinition } from '../dsl/flow_types.ts';
import { hasTask, type WorkerTarget } from '../dsl/placement.ts';
import { RunStateError, SwitchyardError, UnsupportedWorkError } from '../errors.ts';
import {
  createClient,
  type RunHandle,
  type SignalOptions,
  type SwitchyardClient,
} from '../sql/client_queries.ts';
import { openSql, type Sql } from '../sql/connection.ts';
import { coreVersionProblem } from '../sql/core_version.ts';
import { isLocalDatabase } from '../sql/local_database.ts';
import {
  type CancelResult,
  cancelRun,
  type RetryResult,
  retryRun,
  type RunEvent,
  runEvents,
  type RunStatus,
  runStatus,
  runStepOutputs,
  type SignalResult,
  signalRun,
  startRun,
  type StartRunOptions,
  type StepStatus,
} from '../sql/runs.ts';
import {
  advanceClock,
  dropTemplateDatabases,
  hasCore,
  installCore,
  installTestSchema,
  keepRelations,
  lastEngineRunNumber,
  nextDue,
  readOne,
  resetDatabase,
  restoreClock,
  setClock,
  startRound,
  tickSchedules,
} from '../sql/testing_queries.ts';
import { WorkerQueries } from '../sql/worker_queries.ts';
import { assertRunRecord, exportRun, type RunRecord } from '../sql/run_export.ts';
import { CompletionWriter } from '../worker/completion_writer.ts';
import { DispatchIndex } from '../worker/dispatch_index.ts';
import { Executor } from '../worker/executor.ts';
import { type HandlerResources, openHandlerResources } from '../worker/handler_resources.ts';
import type { WorkerLogger } from '../worker/persist.ts';
import { defaultFunctionName } from '../dsl/queue_names.ts';
import { type Duration, durationMs } from './duration.ts';
import { type ReplayPlan, replayPlan } from './replay.ts';
import { type EmbeddedDatabase, startEmbeddedDatabase } from './embedded.ts';
import { readCachedSnapshot, writeCachedSnapshot } from './snapshot_cache.ts';
import type { PGlite } from '@electric-sql/pglite';

/**
 * Options of {@linkcode createTestEngine}.
 *
 * @typeParam R the registry (`as const`)
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { TestEngineOptions } from './engine.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'greetV1' }).step({ slug: 'hi' }, (i) => `hi ${i.id}`);
 * const registry = [defineDeployedFlow(v1, { alias: 'greet' })] as const;
 * const options: TestEngineOptions<typeof registry> = { registry, now: '2030-01-01T09:00:00Z' };
 * ```
 */
export interface TestEngineOptions<R extends Registry> {
  /** The project's registry: every deployment is compiled and its aliases moved, as a worker does. */
  readonly registry: R;
  /**
   * A local PostgreSQL database to run in instead of an embedded PGlite one (loopback or a
   * container name, never a hosted one): the SQL core is built there when it is absent, and its
   * clock is replaced until {@linkcode TestEngine.close}. Use a database of its own per engine.
   */
  readonly databaseUrl?: string;
  /** Where the virtual clock starts (default: the real time when the engine starts). */
  readonly now?: Date | string;
  /**
   * `virtual` (the default): time stands still until {@linkcode TestEngine.advance} moves it.
   * `real`: the database's own clock, as in production, and `advance` waits that long: the same
   * test, slowly, to compare a test's outcome with the real clock's.
   */
  readonly clock?: 'virtual' | 'real';
  /** Where the worker's log lines go besides {@linkcode TestEngine.log} (default: nowhere). */
  readonly logger?: WorkerLogger;
  /** The environment handlers read through `ctx.env` (default: nothing). */
  readonly env?: (name: string) => string | undefined;
}

/**
 * What a mock of a step's handler is: the step's input and context in, its output out (or a
 * promise of it); it may throw, as a handler may (`RetryAfter`, `NonRetriable`, any error).
 *
 * @example
 * ```ts
 * import type { StepMockHandler } from './engine.ts';
 *
 * const charge: StepMockHandler<{ cents: number }, { receipt: string }> = (input) => ({
 *   receipt: `r-${input.cents}`,
 * });
 * ```
 */
export type StepMockHandler<I, O> = (input: I, context: StepContext<unknown>) => O | Promise<O>;

/**
 * Options of {@linkcode TestEngine.mock}.
 *
 * @example
 * ```ts
 * import type { MockOptions } from './engine.ts';
 *
 * const once: MockOptions = { times: 1 }; // then the step's own handler again
 * ```
 */
export interface MockOptions {
  /**
   * How many calls the mock answers before it steps aside (then an earlier mock of the step, or
   * its own handler, answers). Default: every call until {@linkcode StepMock.restore}.
   */
  readonly times?: number;
}

/**
 * One call of a step's handler (or of its mock) in a test engine.
 *
 * @typeParam I the step's input
 *
 * @example
 * ```ts
 * import type { StepCall } from './engine.ts';
 *
 * const call: StepCall<{ cents: number }> = {
 *   runId: '00000000-0000-4000-8000-000000000001',
 *   flowSlug: 'checkoutV1',
 *   stepSlug: 'charge',
 *   taskIndex: 0,
 *   attempt: 1,
 *   input: { cents: 500 },
 *   mocked: true,
 *   at: new Date('2030-01-01T09:00:00Z'),
 * };
 * ```
 */
export interface StepCall<I = unknown> {
  /** The run. */
  readonly runId: string;
  /** The concrete flow (version). */
  readonly flowSlug: string;
  /** The step. */
  readonly stepSlug: string;
  /** A map step's element index; 0 otherwise. */
  readonly taskIndex: number;
  /** The attempt (1 for the first). */
  readonly attempt: number;
  /** What the handler received. */
  readonly input: I;
  /** Whether a mock answered it. */
  readonly mocked: boolean;
  /** The engine's time when it was called. */
  readonly at: Date;
}

/**
 * A mock of a step, as {@linkcode TestEngine.mock} returns it.
 *
 * @typeParam I the step's input
 *
 * @example
 * ```ts
 * import type { StepMock } from './engine.ts';
 *
 * function calledTwice(mock: StepMock<{ cents: number }>): boolean {
 *   return mock.calls.length === 2 && mock.calls[1].attempt === 2;
 * }
 * ```
 */
export interface StepMock<I = unknown> {
  /** The calls this mock answered, in order. */
  readonly calls: readonly StepCall<I>[];
  /** Removes the mock: the step's own handler (or an earlier mock) answers from now on. */
  restore(): void;
}

/**
 * What {@linkcode TestEngine.runUntilIdle} and {@linkcode TestEngine.advance} did.
 *
 * @example
 * ```ts
 * import type { IdleReport } from './engine.ts';
 *
 * const report: IdleReport = { rounds: 3, tasks: 2, now: new Date('2030-01-08T09:00:00Z') };
 * ```
 */
export interface IdleReport {
  /** Rounds of ticks, sweeps and reads until nothing moved. */
  readonly rounds: number;
  /** Handlers run (attempts, mocked or not). */
  readonly tasks: number;
  /** The engine's time. */
  readonly now: Date;
}

/**
 * Options of {@linkcode TestEngine.runUntilIdle}.
 *
 * @example
 * ```ts
 * import type { RunUntilIdleOptions } from './engine.ts';
 *
 * const options: RunUntilIdleOptions = { maxRounds: 50 };
 * ```
 */
export interface RunUntilIdleOptions {
  /** Rounds after which a test engine that is still busy gives up with an error (default 1000). */
  readonly maxRounds?: number;
}

/**
 * Options of {@linkcode TestEngine.advance}.
 *
 * @example
 * ```ts
 * import type { AdvanceOptions } from './engine.ts';
 *
 * const onlyTheClock: AdvanceOptions = { run: false };
 * ```
 */
export interface AdvanceOptions extends RunUntilIdleOptions {
  /**
   * Run what falls due on the way (default true): the clock stops at each time a rule has
   * something to do (a backoff's end, a wait's timeout, a schedule's tick, ...) and the engine runs
   * until idle there, as workers would while that much time passes. False: only the clock moves,
   * at once, and nothing runs.
   */
  readonly run?: boolean;
  /** Stops on the way at most this many times before it gives up with an error (default 10,000). */
  readonly maxStops?: number;
}

/**
 * Options of {@linkcode TestEngine.replay}.
 *
 * @example
 * ```ts
 * import type { ReplayOptions } from './engine.ts';
 *
 * const fromCharge: ReplayOptions = { from: 'charge' }; // charge and what follows: current code
 * ```
 */
export interface ReplayOptions {
  /**
   * The step from which the current handlers (and mocks) run: that step and every step after it
   * in the flow's graph. Default: none, every step answers from the record.
   */
  readonly from?: string;
  /** The replayed run's id (default: the recorded run's). */
  readonly runId?: string;
  /**
   * Move the clock through the recorded run's time (default true): its signals at their times,
   * then to its end, with every retry, timeout and tick on the way. False: start it and run
   * until idle only.
   */
  readonly advance?: boolean;
}

/**
 * A run a test engine's method takes: its handle (as {@linkcode TestEngine.start} returns it) or
 * its id.
 *
 * @typeParam O the run's output
 *
 * @example
 * ```ts
 * import type { RunRef } from './engine.ts';
 *
 * const byId: RunRef = '00000000-0000-4000-8000-000000000001';
 * ```
 */
// deno-lint-ignore no-explicit-any
export type RunRef<O = unknown> = string | RunHandle<O, string, any, any>;

/**
 * How a failed or cancelled run ended, as {@linkcode TestEngine.failure} reads it.
 *
 * @example
 * ```ts
 * import type { RunFailure } from './engine.ts';
 *
 * const failure: RunFailure = {
 *   status: 'failed',
 *   error: 'step "charge" failed after 3 attempt(s): Error: card declined',
 *   step: 'charge',
 * };
 * ```
 */
export interface RunFailure {
  /** How it ended. */
  readonly status: 'failed' | 'cancelled';
  /** The run's error (`cancelled: <reason>` for a cancelled run). */
  readonly error: string | null;
  /** The first step that failed, or null (a cancelled run, a deadline). */
  readonly step: string | null;
}

/**
 * The steps of an alias (over its versions) that have a handler a test can mock.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasHandlerSlugs } from './engine.ts';
 *
 * const v1 = new Flow({ slug: 'reviewV1' }).step({ slug: 'draft' }, () => 'x').wait({ slug: 'ok' });
 * const registry = [defineDeployedFlow(v1, { alias: 'review' })] as const;
 * const step: AliasHandlerSlugs<typeof registry, 'review'> = 'draft'; // not 'ok'
 * ```
 */
export type AliasHandlerSlugs<R extends Registry, A extends AliasOf<R>> = HandlerSlugs<
  AliasFlows<R, A>
>;

/**
 * The input the handler of step `S` of alias `A` receives (the union over the alias's versions).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasHandlerInput } from './engine.ts';
 *
 * const v1 = new Flow<{ n: number }>({ slug: 'sumV1' }).step({ slug: 'a' }, (i) => i.n);
 * const registry = [defineDeployedFlow(v1, { alias: 'sum' })] as const;
 * const input: AliasHandlerInput<typeof registry, 'sum', 'a'> = { n: 1 };
 * ```
 */
export type AliasHandlerInput<R extends Registry, A extends AliasOf<R>, S extends string> =
  HandlerInput<AliasFlows<R, A>, S>;

/**
 * What the handler of step `S` of alias `A` returns, awaited (the union over its versions).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasHandlerOutput } from './engine.ts';
 *
 * const v1 = new Flow<{ n: number }>({ slug: 'sumV1' }).step({ slug: 'a' }, async (i) => i.n);
 * const registry = [defineDeployedFlow(v1, { alias: 'sum' })] as const;
 * const output: AliasHandlerOutput<typeof registry, 'sum', 'a'> = 1;
 * ```
 */
export type AliasHandlerOutput<R extends Registry, A extends AliasOf<R>, S extends string> =
  HandlerOutput<AliasFlows<R, A>, S>;

/**
 * A test engine: the project's SQL core with the registry compiled, a worker loop driven by the
 * test, and a virtual clock (docs/design/clock.md#the-test-engine). Made by {@linkcode
 * createTestEngine};
 * close it at the end of the test.
 *
 * @typeParam R the registry (`as const`)
 *
 * @example
 * ```ts
 * import assert from 'node:assert/strict';
 * import { defineDeployedFlow, Flow, signalPayload } from '../mod.ts';
 * import { createTestEngine } from './engine.ts';
 *
 * const approvalV1 = new Flow<{ amount: number }>({ slug: 'approvalV1', baseDelay: 10 })
 *   .wait({ slug: 'approve', payload: signalPayload<{ ok: boolean }>(), timeout: 7 * 86400 })
 *   .step({ slug: 'pay', dependsOn: ['approve'] }, (input) => input.approve.ok ? 'paid' : 'no');
 * const registry = [defineDeployedFlow(approvalV1, { alias: 'approval' })] as const;
 *
 * const engine = await createTestEngine({ registry });
 * try {
 *   const pay = engine.mock('approval', 'pay', () => 'paid', { times: 1 });
 *   const run = await engine.start('approval', { amount: 5 });
 *   await engine.runUntilIdle();
 *   await engine.advance('6d'); // the approval window is 7 days
 *   await engine.signal(run, 'approve', { ok: true });
 *   await engine.runUntilIdle();
 *   assert.deepEqual(await engine.output(run), { pay: 'paid' });
 *   assert.equal(pay.calls.length, 1);
 * } finally {
 *   await engine.close();
 * }
 * ```
 */
export interface TestEngine<R extends Registry> {
  /** The typed client of the registry on the engine's database (waits poll: call runUntilIdle). */
  readonly client: SwitchyardClient<R>;
  /** The engine's postgres.js client, for queries of one's own and the operator calls of `switchyard/ops`. */
  readonly sql: Sql;
  /** The engine's database (the embedded one's loopback address, or `databaseUrl`). */
  readonly databaseUrl: string;
  /** The virtual clock: the time every time rule of the SQL core reads (clock `real`: the real time). */
  readonly now: Date;
  /** The worker's log lines so far (failed attempts, recovered tasks). */
  readonly log: readonly string[];
  /**
   * Starts a run of an alias (`switchyard.start_flow`, as `client.start`), with a run id from
   * the engine's sequence (`00000000-0000-4000-8000-000000000001`, ...) unless `runId` is given or
   * the start has a key. Nothing runs until {@linkcode TestEngine.runUntilIdle}.
   */
  start<A extends AliasOf<R>>(
    alias: A,
    input: AliasInput<R, A>,
    options?: StartRunOptions,
  ): Promise<
    RunHandle<AliasOutput<R, A>, AliasStepSlugs<R, A>, AliasSignals<R, A>, AliasStepOutputs<R, A>>
  >;
  /**
   * Runs what is ready until nothing is, without moving the clock: each round heart-beats the
   * engine's workers, ticks what pg_cron ticks (schedules, due waits and delayed starts,
   * deadlines), sweeps stalled tasks, then reads, claims and runs every ready task, one at a
   * time, each completion or failure written before the next claim.
   */
  runUntilIdle(options?: RunUntilIdleOptions): Promise<IdleReport>;
  /**
   * Moves the clock forward (`'7d'`, `'1h30m'`, milliseconds), and PGMQ's times of the kit's
   * queues back with it: what happens while that much time passes. The clock stops at each time
   * a rule has something to do on the way (a retry's backoff ends, a wait times out, a schedule
   * ticks, a task stalls, ...) and the engine runs until idle there, so every attempt, tick and
   * timeout happens at its own time; then it moves to the end. With clock `real` it waits that
   * long, then runs until idle.
   */
  advance(by: Duration, options?: AdvanceOptions): Promise<IdleReport>;
  /**
   * Replaces the handler of step `step` of every version of `alias` that has it, typed with that
   * step's input and output, until {@linkcode StepMock.restore} (or for `times` calls). The
   * latest mock of a step answers. (TypeScript widens the literal an `async` mock returns: for a
   * step whose output is a literal type, write `async () => 'paid' as const`.)
   */
  mock<A extends AliasOf<R>, S extends AliasHandlerSlugs<R, A>>(
    alias: A,
    step: S,
    handler: NoInfer<StepMockHandler<AliasHandlerInput<R, A, S>, AliasHandlerOutput<R, A, S>>>,
    options?: MockOptions,
  ): StepMock<AliasHandlerInput<R, A, S>>;
  /** Every call of a step's handler in this engine so far, mocked or not, in order. */
  calls<A extends AliasOf<R>, S extends AliasHandlerSlugs<R, A>>(
    alias: A,
    step: S,
  ): readonly StepCall<AliasHandlerInput<R, A, S>>[];
  /**
   * The output of a completed run; a {@linkcode RunStateError} that tells the run's story (steps,
   * attempts, errors, events) when it is not completed.
   */
  output<O>(run: RunRef<O>): Promise<O>;
  /** How a failed or cancelled run ended; a {@linkcode RunStateError} for any other run. */
  failure(run: RunRef): Promise<RunFailure>;
  /** The run's status with its steps; a {@linkcode RunStateError} when there is no such run. */
  status<O>(run: RunRef<O>): Promise<RunStatus<O>>;
  /** The run's steps with their states, attempts and errors. */
  steps(run: RunRef): Promise<StepStatus[]>;
  /** The output of every step that completed so far, by step slug. */
  stepOutputs(run: RunRef): Promise<Record<string, unknown>>;
  /** The run's events so far, in order. */
  events(run: RunRef): Promise<RunEvent[]>;
  /** Signals a wait step of a run (`client.signal`); nothing runs until runUntilIdle. */
  signal<S extends keyof RegistrySignals<R> & string>(
    run: RunRef,
    step: S,
    payload: RegistrySignals<R>[S],
    options?: SignalOptions,
  ): Promise<SignalResult>;
  /** Cancels a run (`client.cancel`). */
  cancel(run: RunRef, reason?: string): Promise<CancelResult>;
  /** Retries a failed run (`client.retry`); nothing runs until runUntilIdle. */
  retry(run: RunRef): Promise<RetryResult>;
  /** Ticks the scheduler once (`switchyard.run_schedules`); the runs it started. */
  tickSchedules(): Promise<number>;
  /**
   * Replays a run recorded with `exportRun` (docs/design/clock.md#export-and-replay): a run of the
   * recorded
   * version (which the registry must list) with the recorded input, each step answering from the
   * record (its failed attempts fail again, then it returns its output) except, with `from`, that
   * step and the steps after it, which run their current handlers; the recorded signals come at
   * their times, and the clock moves through the recorded run's time. A step the record never
   * finished fails, naming it.
   */
  replay(record: RunRecord, options?: ReplayOptions): Promise<RunHandle>;
  /** Exports a run of this engine as a record (`exportRun`), e.g. to replay it in another. */
  exportRun(run: RunRef): Promise<RunRecord>;
  /** Ends the engine: its database (an embedded one) or its clock (a given one) goes. */
  close(): Promise<void>;
  /**
   * {@linkcode TestEngine.close}, for `await using engine = await createTestEngine(…)`: the
   * engine ends when the test's block does, however it ends.
   */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The run id of a {@linkcode RunRef}. */
function runIdOf(run: RunRef): string {
  return typeof run === 'string' ? run : run.runId;
}

/** The engine's run ids: a fixed prefix and a sequence number, so a test's ids are its own. */
function engineRunId(n: number): string {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

// The snapshot embedded databases start from: the SQL core and the clock's schema, built once
// per process by the first engine.
let snapshot: Promise<Blob> | undefined;
// An embedded database a closed engine reset to the snapshot, for the next one: served again in
// a few milliseconds where loading the snapshot takes a few hundred.
let idle: PGlite | undefined;

/**
 * How long an idle embedded database waits for the next engine before it closes. PGlite keeps a
 * timer of its own (ten seconds, armed again while it is open), so an idle database left open
 * would keep its process alive: Node's test runner waits for a test file's process to end, and a
 * `deno run` script or `deno bench` would never end by itself. The wait is a timer that does not
 * keep the process alive either (Deno's test sanitizers do not count it), and a test that starts
 * its engine within it takes the idle database in a few milliseconds instead of loading the
 * snapshot.
 */
const IDLE_CLOSE_MS = 250;

/** Keeps `db` (reset to the snapshot) for the next engine of the process; see above. */
function keepIdle(db: PGlite): void {
  idle = db;
  const timer: unknown = setTimeout(() => {
    if (idle !== db) return;
    idle = undefined;
    db.close().catch(() => {});
  }, IDLE_CLOSE_MS);
  const runtime = globalThis as { Deno?: { unrefTimer(id: number): void } };
  if (runtime.Deno) runtime.Deno.unrefTimer(timer as number);
  else (timer as { unref?: () => void }).unref?.();
}

/**
 * An embedded database with the SQL core: the one a closed engine left, else one from the
 * snapshot, else (the process's first) built, and kept as the snapshot.
 */
async function embeddedWithCore(): Promise<EmbeddedDatabase> {
  if (idle) {
    const db = idle;
    idle = undefined;
    return await startEmbeddedDatabase(db);
  }
  if (snapshot) return await startEmbeddedDatabase(await snapshot);
  let taken!: (blob: Blob) => void;
  let failed!: (e: unknown) => void;
  const mine = new Promise<Blob>((resolve, reject) => {
    taken = resolve;
    failed = reject;
  });
  mine.catch(() => {});
  snapshot = mine;
  let db: EmbeddedDatabase | undefined;
  try {
    // The snapshot an earlier process cached
    // (docs/design/clock.md#speed-and-what-the-engine-is-not): a few hundred milliseconds, not
    // seconds.
    const cached = await readCachedSnapshot();
    if (cached !== null) {
      db = await startEmbeddedDatabase(cached).catch(() => undefined);
      if (db !== undefined) {
        taken(cached);
        return db;
      }
    }
    db = await startEmbeddedDatabase();
    const sql = openSql(db.url, { max: 1, applicationName: 'switchyard test engine' });
    try {
      await installCore(sql);
      await installTestSchema(sql);
      await dropTemplateDatabases(sql);
      await keepRelations(sql);
    } finally {
      await sql.end({ timeout: 5 });
    }
    const built = await db.snapshot();
    taken(built);
    await writeCachedSnapshot(built);
    return db;
  } catch (e) {
    if (snapshot === mine) snapshot = undefined;
    failed(e);
    await db?.close();
    throw e;
  }
}

/** The index of a test engine: the registry's, each task step's handler routed through `dispatch`. */
class EngineIndex extends DispatchIndex {
  constructor(
    targets: readonly WorkerTarget[],
    private readonly dispatch: (
      flowSlug: string,
      step: StepDefinition,
      input: unknown,
      context: StepContext<unknown>,
    ) => unknown,
  ) {
    super(targets);
  }

  override step(flowSlug: string, stepSlug: string): StepDefinition | undefined {
    const step = super.step(flowSlug, stepSlug);
    if (!step || !hasTask(step)) return step;
    return {
      ...step,
      handler: (input: unknown, context: StepContext<unknown>) =>
        this.dispatch(flowSlug, step, input, context),
    };
  }
}

/** A mock as the engine keeps it. */
interface MockEntry {
  handler: (input: unknown, context: StepContext<unknown>) => unknown;
  remaining: number;
  calls: StepCall[];
}

/** Reads a Date option. */
function startTime(now: Date | string | undefined): Date {
  if (now === undefined) return new Date();
  const at = now instanceof Date ? new Date(now.getTime()) : new Date(now);
  if (!Number.isFinite(at.getTime())) {
    throw new SwitchyardError(
      `createTestEngine: now ${
        JSON.stringify(String(now))
      } is invalid: pass a Date or an ISO 8601 time such as '2030-01-01T09:00:00Z'`,
    );
  }
  return at;
}

/**
 * Starts a test engine for a registry (docs/design/clock.md#the-test-engine): an embedded PGlite
 * database
 * with the SQL core (the first engine of a process builds it; later ones start from its
 * snapshot), or `databaseUrl`'s; the registry compiled and its aliases moved; one worker per
 * queue registered; the virtual clock at `now`.
 *
 * @example
 * ```ts
 * import assert from 'node:assert/strict';
 * import { defineDeployedFlow, Flow, RetryAfter } from '../mod.ts';
 * import { createTestEngine } from './engine.ts';
 *
 * const fetchV1 = new Flow<{ url: string }>({ slug: 'fetchV1', maxAttempts: 3 })
 *   .step({ slug: 'get' }, (input) => input.url.length);
 * const registry = [defineDeployedFlow(fetchV1, { alias: 'fetch' })] as const;
 *
 * const engine = await createTestEngine({ registry, now: '2030-01-01T00:00:00Z' });
 * try {
 *   engine.mock('fetch', 'get', () => {
 *     throw new RetryAfter(60, 'HTTP 429');
 *   }, { times: 1 });
 *   const run = await engine.start('fetch', { url: 'https://example.com' });
 *   await engine.runUntilIdle(); // attempt 1: told to come back in a minute
 *   await engine.advance('1m'); // attempt 2: the step's own handler
 *   assert.deepEqual(await engine.output(run), { get: 19 });
 *   assert.equal(engine.calls('fetch', 'get').length, 2);
 * } finally {
 *   await engine.close();
 * }
 * ```
 */
export async function createTestEngine<const R extends Registry>(
  options: TestEngineOptions<R>,
): Promise<TestEngine<R>> {
  if (typeof options !== 'object' || options === null || !Array.isArray(options.registry)) {
    throw new SwitchyardError(
      'createTestEngine: pass { registry } with the registry of deployed flows (an array)',
    );
  }
  const clock = options.clock ?? 'virtual';
  if (clock !== 'virtual' && clock !== 'real') {
    throw new SwitchyardError(
      `createTestEngine: clock ${
        JSON.stringify(clock)
      } is invalid: use 'virtual' (the default) or 'real'`,
    );
  }
  if (clock === 'real' && options.now !== undefined) {
    throw new SwitchyardError(
      "createTestEngine: now is for the virtual clock; with clock 'real' the time is the database's",
    );
  }
  let now = startTime(options.now);
  const url = options.databaseUrl;
  if (url !== undefined && !isLocalDatabase(url)) {
    throw new SwitchyardError(
      `createTestEngine: databaseUrl names host "${
        (() => {
          try {
            return new URL(url).hostname;
          } catch {
            return url;
          }
        })()
      }", which is not local: a test engine replaces the database's clock, so it runs only on a ` +
        'local test database (loopback or a container name), or on an embedded one (no databaseUrl)',
    );
  }
  const logLines: string[] = [];
  const keep = (level: string, given?: (m: string) => void) => (m: string) => {
    logLines.push(`${level} ${m}`);
    if (logLines.length > 1000) logLines.shift();
    given?.call(options.logger, m);
  };
  const log: WorkerLogger = {
    info: keep('info', options.logger?.info),
    warn: keep('warn', options.logger?.warn),
    error: keep('error', options.logger?.error),
  };

  const mocks = new Map<string, MockEntry[]>();
  const calls = new Map<string, StepCall[]>();
  const replays = new Map<string, ReplayPlan>();
  const dispatch = (
    flowSlug: string,
    step: StepDefinition,
    input: unknown,
    context: StepContext<unknown>,
  ): unknown => {
    const key = `${flowSlug}/${step.slug}`;
    const replay = replays.get(context.runId);
    const recorded = replay !== undefined && !replay.live.has(step.slug);
    const stack = recorded ? undefined : mocks.get(key);
    const mock = stack?.[stack.length - 1];
    const call: StepCall = {
      runId: context.runId,
      flowSlug,
      stepSlug: step.slug,
      taskIndex: context.taskIndex,
      attempt: context.attempt,
      input,
      mocked: mock !== undefined || recorded,
      at: new Date(now.getTime()),
    };
    let list = calls.get(key);
    if (!list) calls.set(key, list = []);
    list.push(call);
    if (recorded) return replay.answer(step.slug, context.taskIndex, context.attempt);
    if (!mock) return step.handler(input, context);
    mock.calls.push(call);
    if (--mock.remaining <= 0) stack!.splice(stack!.indexOf(mock), 1);
    return mock.handler(input, context);
  };
  const index = new EngineIndex(options.registry, dispatch);

  let embedded: EmbeddedDatabase | undefined;
  let sql: Sql | undefined;
  let resources: HandlerResources | undefined;
  try {
    if (url === undefined) {
      embedded = await embeddedWithCore();
      sql = openSql(embedded.url, { max: 1, applicationName: 'switchyard test engine' });
    } else {
      sql = openSql(url, { max: 2, applicationName: 'switchyard test engine' });
      if (!(await hasCore(sql))) await installCore(sql);
      await installTestSchema(sql);
    }
    if (clock === 'virtual') now = await setClock(sql, now);
    const q = new WorkerQueries(sql);
    const problem = coreVersionProblem(await q.coreVersion());
    if (problem) throw new SwitchyardError(`createTestEngine: ${problem}`);
    const maxOutputBytes = (await q.limits()).max_output_bytes;
    for (const p of index.placements) await q.ensureFlow(p.shape);
    for (const [alias, versions] of index.aliases()) await q.syncAlias(alias, versions);
    const workers = new Map<string, string>();
    for (const [i, queue] of index.queues().entries()) {
      // An embedded database is the engine's alone: worker ids from a sequence, as run ids are.
      const workerId = embedded
        ? `00000000-0000-4000-9000-${(i + 1).toString(16).padStart(12, '0')}`
        : crypto.randomUUID();
      await q.registerWorker(
        workerId,
        queue,
        defaultFunctionName(queue),
        index.pairsFor(queue),
      );
      workers.set(queue, workerId);
    }
    let runNumber = await lastEngineRunNumber(sql);
    resources = await openHandlerResources({
      env: options.env ?? (() => undefined),
      url: undefined,
      given: sql,
      max: 1,
    });
    const writer = new CompletionWriter(q, log, () => {});
    const executor = new Executor(
      q,
      index,
      writer,
      log,
      () => {},
      resources,
      { maxOutputBytes },
    );
    const client = createClient(options.registry, {
      sql,
      // PGlite's socket delivers a notification to whichever connection committed.
      ...(embedded ? { fallbackPollMs: 25 } : {}),
    });
    return new Engine<R>({
      sql,
      q,
      client,
      index,
      executor,
      writer,
      resources,
      embedded,
      url: url ?? embedded!.url,
      workers,
      clock,
      now: () => (clock === 'real' ? new Date() : now),
      setNow: (at) => (now = at),
      nextRunId: () => engineRunId(++runNumber),
      mocks,
      calls,
      replays,
      log: logLines,
    });
  } catch (e) {
    await resources?.close();
    if (sql && url !== undefined) await restoreClock(sql).catch(() => {});
    await sql?.end({ timeout: 5 }).catch(() => {});
    await embedded?.close();
    throw e;
  }
}

/** What an {@linkcode Engine} is made of. */
interface EngineParts<R extends Registry> {
  sql: Sql;
  q: WorkerQueries;
  client: SwitchyardClient<R>;
  index: EngineIndex;
  executor: Executor;
  writer: CompletionWriter;
  resources: HandlerResources;
  embedded: EmbeddedDatabase | undefined;
  url: string;
  workers: Map<string, string>;
  clock: 'virtual' | 'real';
  now: () => Date;
  setNow: (at: Date) => void;
  nextRunId: () => string;
  mocks: Map<string, MockEntry[]>;
  calls: Map<string, StepCall[]>;
  replays: Map<string, ReplayPlan>;
  log: string[];
}

/** The test engine {@linkcode createTestEngine} makes. */
class Engine<R extends Registry> implements TestEngine<R> {
  #p: EngineParts<R>;
  #closed: Promise<void> | undefined;

  constructor(parts: EngineParts<R>) {
    this.#p = parts;
  }

  get client(): SwitchyardClient<R> {
    return this.#p.client;
  }

  get sql(): Sql {
    return this.#p.sql;
  }

  get databaseUrl(): string {
    return this.#p.url;
  }

  get now(): Date {
    return new Date(this.#p.now().getTime());
  }

  get log(): readonly string[] {
    return this.#p.log;
  }

  #open(what: string): void {
    if (this.#closed) throw new SwitchyardError(`${what}: the test engine is closed`);
  }

  async start<A extends AliasOf<R>>(
    alias: A,
    input: AliasInput<R, A>,
    options: StartRunOptions = {},
  ): Promise<
    RunHandle<AliasOutput<R, A>, AliasStepSlugs<R, A>, AliasSignals<R, A>, AliasStepOutputs<R, A>>
  > {
    this.#open('start');
    const keyed = (options as { key?: unknown }).key !== undefined;
    const runId = options.runId ?? (keyed ? undefined : this.#p.nextRunId());
    const id = await startRun(
      this.#p.sql,
      alias,
      input,
      (runId === undefined ? options : { ...options, runId }) as StartRunOptions,
      () => this.#p.now().getTime(),
    );
    return this.#p.client.run<A>(id);
  }

  async runUntilIdle({ maxRounds = 1000 }: RunUntilIdleOptions = {}): Promise<IdleReport> {
    this.#open('runUntilIdle');
    if (!Number.isSafeInteger(maxRounds) || maxRounds < 1) {
      throw new SwitchyardError(
        `runUntilIdle: maxRounds ${maxRounds} is invalid: use a whole number of at least 1`,
      );
    }
    const { sql, q, executor, writer, workers } = this.#p;
    const queues = [...workers.keys()];
    let rounds = 0;
    let tasks = 0;
    for (;;) {
      if (++rounds > maxRounds) {
        throw new SwitchyardError(
          `runUntilIdle: still busy after ${maxRounds} rounds (${tasks} task(s) run): a flow that ` +
            'keeps starting work without time passing? Raise maxRounds if it is meant to',
        );
      }
      // PGMQ's times synced to the virtual clock, the workers' heartbeats (stall recovery judges
      // them on the engine's clock), what pg_cron ticks, the stall sweep.
      let moved = await startRound(sql, [...workers.values()], queues, this.#p.clock === 'virtual');
      for (;;) {
        // One message per read: each read takes the best next one (priority, keys in turn).
        const ready = await readOne(sql, queues, 30);
        if (ready === null) break;
        const { queue, messageId } = ready;
        const claims = await q.startTasks(queue, [messageId], workers.get(queue)!, null);
        moved += claims.length;
        const unsupported = claims.filter((c) => c.disposition === 'unsupported');
        if (unsupported.length > 0) {
          throw new UnsupportedWorkError(
            queue,
            defaultFunctionName(queue),
            unsupported.map((c) => c.message_id),
            [
              ...new Set(
                unsupported.map((c) => c.flow_slug ? `${c.flow_slug}/${c.step_slug}` : '(no task)'),
              ),
            ],
          );
        }
        // Its outcome is written before the next claim: the same order every run of the test.
        for (const claim of claims) {
          if (claim.disposition !== 'claimed') continue;
          executor.run(claim);
          await executor.drain();
          await writer.drain();
          tasks++;
        }
      }
      if (moved === 0) break;
    }
    return { rounds, tasks, now: this.now };
  }

  async advance(by: Duration, options: AdvanceOptions = {}): Promise<IdleReport> {
    this.#open('advance');
    const ms = durationMs(by);
    const { maxStops = 10_000 } = options;
    if (!Number.isSafeInteger(maxStops) || maxStops < 1) {
      throw new SwitchyardError(
        `advance: maxStops ${maxStops} is invalid: use a whole number of at least 1`,
      );
    }
    const { sql } = this.#p;
    if (this.#p.clock === 'real') {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return await this.runUntilIdle(options);
    }
    const target = new Date(this.#p.now().getTime() + ms);
    if (options.run === false) {
      this.#p.setNow(await advanceClock(sql, ms));
      return { rounds: 0, tasks: 0, now: this.now };
    }
    // What is ready now happens now, before the clock moves.
    const ready = await this.runUntilIdle(options);
    let rounds = ready.rounds;
    let tasks = ready.tasks;
    for (let stops = 0;; stops++) {
      const due = await nextDue(sql, target);
      if (due !== null && stops >= maxStops) {
        throw new SwitchyardError(
          `advance(${JSON.stringify(by)}): stopped ${maxStops} times on the way and ` +
            `${due.toISOString()} is due next, before ${target.toISOString()}: raise maxStops, ` +
            'or pass run: false to move the clock at once',
        );
      }
      const next = due ?? target;
      this.#p.setNow(await advanceClock(sql, next.getTime() - this.#p.now().getTime()));
      const report = await this.runUntilIdle(options);
      rounds += report.rounds;
      tasks += report.tasks;
      if (due === null) break;
    }
    return { rounds, tasks, now: this.now };
  }

  mock<A extends AliasOf<R>, S extends AliasHandlerSlugs<R, A>>(
    alias: A,
    step: S,
    handler: NoInfer<StepMockHandler<AliasHandlerInput<R, A, S>, AliasHandlerOutput<R, A, S>>>,
    options: MockOptions = {},
  ): StepMock<AliasHandlerInput<R, A, S>> {
    this.#open('mock');
    if (typeof handler !== 'function') {
      throw new SwitchyardError(
        `mock(${JSON.stringify(alias)}, ${
          JSON.stringify(step)
        }): the handler is ${typeof handler}: pass a function (input, ctx) => output`,
      );
    }
    const times = options.times ?? Infinity;
    if (times !== Infinity && !(Number.isSafeInteger(times) && times >= 1)) {
      throw new SwitchyardError(
        `mock(${JSON.stringify(alias)}, ${
          JSON.stringify(step)
        }): times ${times} is invalid: use a whole number of at least 1, or leave it out`,
      );
    }
    const entry: MockEntry = {
      handler: handler as MockEntry['handler'],
      remaining: times,
      calls: [],
    };
    const keys = this.#stepKeys('mock', alias, step);
    for (const key of keys) {
      let stack = this.#p.mocks.get(key);
      if (!stack) this.#p.mocks.set(key, stack = []);
      stack.push(entry);
    }
    return {
      calls: entry.calls as StepCall<AliasHandlerInput<R, A, S>>[],
      restore: () => {
        for (const key of keys) {
          const stack = this.#p.mocks.get(key) ?? [];
          const i = stack.indexOf(entry);
          if (i >= 0) stack.splice(i, 1);
        }
      },
    };
  }

  calls<A extends AliasOf<R>, S extends AliasHandlerSlugs<R, A>>(
    alias: A,
    step: S,
  ): readonly StepCall<AliasHandlerInput<R, A, S>>[] {
    const all = this.#stepKeys('calls', alias, step).flatMap((k) => this.#p.calls.get(k) ?? []);
    // Several versions: in the order they were called.
    return all.sort((a, b) => a.at.getTime() - b.at.getTime()) as StepCall<
      AliasHandlerInput<R, A, S>
    >[];
  }

  /** The `flow/step` keys of an alias's (or a concrete flow's) task step, or a clear error. */
  #stepKeys(what: string, alias: string, step: string): string[] {
    const { index } = this.#p;
    const flows = index.aliases().get(alias) ?? (index.get(alias) ? [alias] : []);
    if (flows.length === 0) {
      const known = [...index.aliases().keys()].map((a) => JSON.stringify(a)).join(', ');
      throw new SwitchyardError(
        `${what}(${JSON.stringify(alias)}, ${JSON.stringify(step)}): no deployment of the ` +
          `registry has alias ${JSON.stringify(alias)} (aliases: ${known || 'none'})`,
      );
    }
    const keys = flows.filter((f) => {
      const s = index.get(f)!.flow.getStep(step);
      return s !== undefined && hasTask(s);
    }).map((f) => `${f}/${step}`);
    if (keys.length === 0) {
      const steps = [
        ...new Set(
          flows.flatMap((f) => index.get(f)!.flow.steps.filter(hasTask).map((s) => s.slug)),
        ),
      ];
      throw new SwitchyardError(
        `${what}(${JSON.stringify(alias)}, ${JSON.stringify(step)}): no version of ` +
          `${JSON.stringify(alias)} (${flows.join(', ')}) has a step ${
            JSON.stringify(step)
          } with a handler (steps with handlers: ${
            steps.map((s) => JSON.stringify(s)).join(', ') || 'none'
          })`,
      );
    }
    return keys;
  }

  async output<O>(run: RunRef<O>): Promise<O> {
    const status = await this.status<O>(run);
    if (status.status === 'completed') return status.output as O;
    throw new RunStateError(
      status.runId,
      status.status,
      await this.#story(status, 'completed (its output was asked for)'),
    );
  }

  async failure(run: RunRef): Promise<RunFailure> {
    const status = await this.status(run);
    if (status.status === 'failed' || status.status === 'cancelled') {
      const failed = status.steps.find((s) => s.status === 'failed');
      return { status: status.status, error: status.error, step: failed?.stepSlug ?? null };
    }
    throw new RunStateError(
      status.runId,
      status.status,
      await this.#story(status, 'failed or cancelled (its failure was asked for)'),
    );
  }

  async status<O>(run: RunRef<O>): Promise<RunStatus<O>> {
    this.#open('status');
    const runId = runIdOf(run);
    const status = await runStatus<O>(this.#p.sql, runId);
    if (status === null) {
      throw new RunStateError(
        runId,
        null,
        `run ${runId} does not exist in this test engine (started elsewhere, or never)`,
      );
    }
    return status;
  }

  async steps(run: RunRef): Promise<StepStatus[]> {
    return (await this.status(run)).steps;
  }

  async stepOutputs(run: RunRef): Promise<Record<string, unknown>> {
    await this.status(run);
    return (await runStepOutputs(this.#p.sql, runIdOf(run))) ?? {};
  }

  async events(run: RunRef): Promise<RunEvent[]> {
    this.#open('events');
    return await runEvents(this.#p.sql, runIdOf(run), { limit: 100_000 });
  }

  async signal<S extends keyof RegistrySignals<R> & string>(
    run: RunRef,
    step: S,
    payload: RegistrySignals<R>[S],
    options: SignalOptions = {},
  ): Promise<SignalResult> {
    this.#open('signal');
    return await signalRun(this.#p.sql, runIdOf(run), step, payload, options);
  }

  async cancel(run: RunRef, reason = 'cancelled by the test'): Promise<CancelResult> {
    this.#open('cancel');
    return await cancelRun(this.#p.sql, runIdOf(run), reason);
  }

  async retry(run: RunRef): Promise<RetryResult> {
    this.#open('retry');
    return await retryRun(this.#p.sql, runIdOf(run));
  }

  async tickSchedules(): Promise<number> {
    this.#open('tickSchedules');
    return await tickSchedules(this.#p.sql);
  }

  async replay(record: RunRecord, options: ReplayOptions = {}): Promise<RunHandle> {
    this.#open('replay');
    assertRunRecord(record);
    const { index, sql } = this.#p;
    const placement = index.get(record.run.flowSlug);
    if (!placement) {
      throw new SwitchyardError(
        `replay: run ${record.run.runId} ran version ${
          JSON.stringify(record.run.flowSlug)
        }, which this engine's registry does not list (it lists ${
          index.placements.map((p) => JSON.stringify(p.flow.slug)).join(', ')
        }): add that version to replay it`,
      );
    }
    const plan = replayPlan(record, placement.flow, options.from);
    const runId = options.runId ?? record.run.runId;
    this.#p.replays.set(runId, plan);
    const started = this.#p.now().getTime();
    const deadline = record.run.deadlineAt === null ? undefined : new Date(
      started + Date.parse(record.run.deadlineAt) - Date.parse(record.run.startedAt),
    );
    await startRun(
      sql,
      record.run.flowSlug,
      record.run.input,
      { runId, priority: record.run.priority, ...(deadline ? { deadlineAt: deadline } : {}) },
      () => this.#p.now().getTime(),
    );
    await this.runUntilIdle();
    if (options.advance !== false) {
      const to = async (afterMs: number) => {
        const ms = started + afterMs - this.#p.now().getTime();
        if (ms > 0) await this.advance(ms);
      };
      for (const signal of plan.signals) {
        await to(signal.afterMs);
        await signalRun(sql, runId, signal.stepSlug, signal.payload, {
          ...(signal.key === null ? {} : { key: signal.key }),
        });
        await this.runUntilIdle();
      }
      if (plan.cancel) {
        await to(plan.cancel.afterMs);
        await cancelRun(sql, runId, plan.cancel.reason);
      }
      await to(plan.durationMs);
    }
    return this.#p.client.run(runId);
  }

  async exportRun(run: RunRef): Promise<RunRecord> {
    this.#open('exportRun');
    return await exportRun(this.#p.sql, runIdOf(run));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      const p = this.#p;
      await p.executor.drain();
      await p.writer.drain();
      await p.client.close();
      await p.resources.close();
      // An embedded database goes back to the snapshot for the next engine of the process; a
      // given one gets its production clock back.
      const reset = p.embedded
        ? await resetDatabase(p.sql).then(() => true, () => false)
        : await restoreClock(p.sql).then(() => false, () => false);
      await p.sql.end({ timeout: 5 }).catch(() => {});
      if (p.embedded && reset && idle === undefined) keepIdle(await p.embedded.detach());
      else await p.embedded?.close();
    })();
    return this.#closed;
  }

  /** A run's story for a failed expectation: where it is, each step, its events, the time. */
  async #story(status: RunStatus, expected: string): Promise<string> {
    const lines = [
      `run ${status.runId} of ${status.flowSlug}` +
      (status.startedAs !== status.flowSlug ? ` (started as ${status.startedAs})` : '') +
      ` is ${status.status}, not ${expected}` + (status.error ? `: ${status.error}` : ''),
    ];
    for (const s of status.steps) {
      const parts: string[] = [s.status];
      if (s.attempts > 0) parts.push(`${s.attempts} attempt(s)`);
      if (s.tasks > 1) parts.push(`${s.tasks} tasks`);
      if (s.error) parts.push(`error: ${s.error}`);
      if (s.skipReason) parts.push(`skipped: ${s.skipReason}`);
      lines.push(`  step ${JSON.stringify(s.stepSlug)}: ${parts.join(', ')}`);
    }
    const events = await runEvents(this.#p.sql, status.runId, { limit: 30, newest: true });
    if (events.length > 0) {
      lines.push(
        `  events: ${
          events.map((e) => `#${e.eventId} ${e.stepSlug ?? 'run'} ${e.event}`).join(' · ')
        }`,
      );
    }
    lines.push(`  engine time: ${this.now.toISOString()}`);
    return lines.join('\n');
  }
}
