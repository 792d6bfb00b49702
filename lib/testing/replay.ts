/**
 * Replaying a recorded run (docs/design/clock.md#export-and-replay): what a test engine answers for
 * each task
 * of the replayed run, and when its signals and its cancel come. A step answered from the record
 * does what it did there: its failed attempts fail again (with the recorded error), then it
 * returns the recorded output; a step the record never finished fails, naming it. Steps from
 * `from` on (that step and every step after it in the flow's graph) run their current handlers.
 *
 * @module
 */
import type { AnyFlow } from '../dsl/flow.ts';
import { NonRetriable, SwitchyardError } from '../errors.ts';
import type { RunRecord, RunRecordTask } from '../sql/run_export.ts';

/**
 * How a test engine replays one recorded run.
 *
 * @example
 * ```ts
 * import { Flow } from '../mod.ts';
 * import { replayPlan } from './replay.ts';
 *
 * const flow = new Flow<{ n: number }>({ slug: 'addV1' })
 *   .step({ slug: 'a' }, (i) => i.n)
 *   .step({ slug: 'b', dependsOn: ['a'] }, (i) => i.a + 1);
 * const plan = replayPlan({
 *   format: 'switchyard-run/1',
 *   coreVersion: '0.4.0',
 *   exportedAt: '2030-01-01T00:00:01.000Z',
 *   run: {
 *     runId: '00000000-0000-4000-8000-000000000001', flowSlug: 'addV1', startedAs: 'add',
 *     status: 'completed', input: { n: 1 }, output: { b: 2 }, error: null, priority: 0,
 *     startedAt: '2030-01-01T00:00:00.000Z', completedAt: '2030-01-01T00:00:01.000Z',
 *     failedAt: null, cancelledAt: null, deadlineAt: null,
 *   },
 *   steps: [
 *     { stepSlug: 'a', status: 'completed', output: 1, skipReason: null, signal: null,
 *       tasks: [{ taskIndex: 0, status: 'completed', attempts: 1, maxAttempts: 3, error: null, output: 1 }] },
 *     { stepSlug: 'b', status: 'completed', output: 2, skipReason: null, signal: null,
 *       tasks: [{ taskIndex: 0, status: 'completed', attempts: 1, maxAttempts: 3, error: null, output: 2 }] },
 *   ],
 *   events: [],
 * }, flow, 'b');
 * console.assert(plan.live.has('b') && !plan.live.has('a'));
 * ```
 */
export interface ReplayPlan {
  /** The steps that run their current handlers (from `from` on); the others answer from the record. */
  readonly live: ReadonlySet<string>;
  /** The recorded answer of a task's attempt: its output, or the error to throw. */
  answer(stepSlug: string, taskIndex: number, attempt: number): unknown;
  /** The signals the record's waits received, with their time after the run's start (ms). */
  readonly signals: readonly {
    readonly stepSlug: string;
    readonly payload: unknown;
    readonly key: string | null;
    readonly afterMs: number;
  }[];
  /** The record's cancel (not a deadline's), with its reason and time after the start (ms). */
  readonly cancel: { readonly reason: string; readonly afterMs: number } | null;
  /** How long the recorded run took, to its end or its last event (ms). */
  readonly durationMs: number;
}

/** Milliseconds between two ISO times of a record. */
function between(from: string, to: string): number {
  return Math.max(0, Date.parse(to) - Date.parse(from));
}

/**
 * The plan of a replay of `record` on `flow` (its version in the registry), answering every step
 * from the record except, with `from`, that step and the steps after it.
 */
export function replayPlan(record: RunRecord, flow: AnyFlow, from?: string): ReplayPlan {
  const what = `replay of run ${record.run.runId} (${record.run.flowSlug})`;
  const live = new Set<string>();
  if (from !== undefined) {
    if (!flow.getStep(from)) {
      throw new SwitchyardError(
        `${what}: from ${JSON.stringify(from)} is not a step of ${flow.slug} (its steps: ${
          flow.steps.map((s) => JSON.stringify(s.slug)).join(', ')
        })`,
      );
    }
    live.add(from);
    // Every step after it in the graph: in the order added, a step's dependencies come first.
    for (const step of flow.steps) {
      if (step.dependsOn.some((d) => live.has(d))) live.add(step.slug);
    }
  }
  const tasks = new Map<string, RunRecordTask>();
  for (const step of record.steps) {
    for (const task of step.tasks) tasks.set(`${step.stepSlug}/${task.taskIndex}`, task);
  }
  const start = record.run.startedAt;
  const ends = [record.run.completedAt, record.run.failedAt, record.run.cancelledAt]
    .filter((t): t is string => t !== null);
  const last = record.events.at(-1)?.at ?? start;
  const cancelled = record.run.status === 'cancelled' && record.run.cancelledAt !== null &&
    record.run.error !== 'cancelled: deadline';
  return {
    live,
    answer(stepSlug, taskIndex, attempt) {
      const task = tasks.get(`${stepSlug}/${taskIndex}`);
      const where = `step "${stepSlug}"${taskIndex > 0 ? ` element ${taskIndex}` : ''}`;
      if (!task || (task.status !== 'completed' && task.status !== 'failed')) {
        throw new NonRetriable(
          `${what}: the record has no outcome of ${where} (${
            task ? `it was ${task.status}` : 'it never ran'
          }): replay from "${stepSlug}" to run its handler`,
        );
      }
      const recorded = task.error ?? 'an error the record does not keep';
      if (attempt < task.attempts || task.status === 'failed') {
        // An attempt the record failed; the last one failed for good, with its attempts left
        // unused only when the handler said so (NonRetriable).
        const last = task.status === 'failed' && attempt >= task.attempts;
        const message = `recorded attempt ${attempt} of ${where} failed: ${recorded}`;
        throw last && task.attempts < task.maxAttempts
          ? new NonRetriable(message)
          : new Error(message);
      }
      return task.output;
    },
    signals: record.steps.filter((s) => s.signal !== null).map((s) => ({
      stepSlug: s.stepSlug,
      payload: s.signal!.payload,
      key: s.signal!.key,
      afterMs: between(start, s.signal!.at),
    })).sort((a, b) => a.afterMs - b.afterMs),
    cancel: cancelled
      ? {
        reason: (record.run.error ?? 'cancelled').replace(/^cancelled: /, ''),
        afterMs: between(start, record.run.cancelledAt!),
      }
      : null,
    durationMs: between(start, ends.length > 0 ? ends.sort()[0] : last),
  };
}
