/**
 * The executor (docs/design/worker.md#worker-states-and-parts): runs the handler of one claimed
 * task with its
 * timeout and an `AbortSignal`, then hands the output to the completion writer or records
 * the failure (`fail_task`: the SQL core decides about retries and backoff).
 *
 * On shutdown it aborts every handler's signal with a {@linkcode WorkerShutdownError}; when
 * the heartbeat finds a running handler's run cancelled or failed, that handler's signal with a
 * {@linkcode RunCancelledError}.
 * A handler that returns afterwards still completes. One that throws the abort reason within
 * the grace period honoured the shutdown, and one that saved a checkpoint in this claim handed
 * its work back: both leave the task to the worker's `release_tasks`, which refunds their
 * attempt within its bounds. Anything else thrown after the abort is the handler's failure
 * (`fail_task`). One still running when the grace period ends is released: its outcome is
 * dropped here, and `release_tasks` refunds its attempt only if it checkpointed since its claim.
 * The step timeout counts the time the attempt ran on earlier instances (`carried_ms`).
 *
 * @module
 */
import type { StepContext } from '../dsl/context.ts';
import { assertJson, jsonTextBytes } from '../dsl/json.ts';
import {
  NonRetriable,
  RetryAfter,
  RunCancelledError,
  SwitchyardError,
  WorkerShutdownError,
} from '../errors.ts';
import type { EndedRun, TaskClaim, TaskKey, WorkerQueries } from '../sql/worker_queries.ts';
import type { CompletionWriter } from './completion_writer.ts';
import type { DispatchIndex } from './dispatch_index.ts';
import type { HandlerResources } from './handler_resources.ts';
import { errorText, handlerErrorText, persist, type WorkerLogger } from './persist.ts';
import { context, type SpanContext, trace } from '@opentelemetry/api';
import { endWithError, startTaskSpan } from '../tracing.ts';

/** Where a claimed task's span belongs (docs/design/observability.md). */
export interface TaskTrace {
  /** The run's stored `traceparent` (read only while spans are recorded), or null. */
  traceparent: string | null;
  /** The span context of the claim that took the task, linked from the task's span. */
  claim: SpanContext | null;
}

const NO_TRACE: TaskTrace = { traceparent: null, claim: null };

/** One running handler. */
interface Running {
  /** The task's run. */
  runId: string;
  controller: AbortController;
  /** Released at the end of the grace period: whatever it returns or throws is dropped. */
  released: boolean;
  /** Ends the wait for the handler (and its timeout timer) once released. */
  stopWaiting: () => void;
}

/** Whether a throw is the shutdown's abort reason (or wraps it as its `cause`). */
function honoursShutdown(e: unknown): boolean {
  try {
    return e instanceof WorkerShutdownError ||
      (e instanceof Error && e.cause instanceof WorkerShutdownError);
  } catch {
    return false; // a hostile value (a proxy whose prototype trap throws) honours nothing
  }
}

/** Runs claimed tasks; one instance per worker. */
export class Executor {
  readonly #running = new Map<Promise<void>, Running>();
  #shutdown: WorkerShutdownError | null = null;
  /** Tasks whose work is handed back with the shutdown: never started, or the handler honoured it. */
  readonly #handedBack: TaskKey[] = [];

  /** `onSettled` runs whenever a handler slot frees up. */
  constructor(
    private readonly q: WorkerQueries,
    private readonly index: DispatchIndex,
    private readonly writer: CompletionWriter,
    private readonly log: WorkerLogger,
    private readonly onSettled: () => void,
    private readonly resources: HandlerResources,
    /** The SQL core's limits that apply to outputs (docs/design/limits.md); 0: no check. */
    private readonly limits: { maxOutputBytes: number } = { maxOutputBytes: 0 },
    /** When this runtime instance ends (`Date.now()` ms), as handlers read it (`ctx.deadline`). */
    private readonly endsAt: () => number = () => Infinity,
    /** The worker's id, an attribute of every task span. */
    private readonly workerId: string = '',
  ) {}

  /** Handlers running now (released ones included until they settle). */
  get size(): number {
    return this.#running.size;
  }

  /** Starts a claimed task; it holds a slot until its handler settles. */
  run(task: TaskClaim, taskTrace: TaskTrace = NO_TRACE): void {
    // A task claimed while the worker stops is not started: the release hands it back.
    if (this.#shutdown) {
      this.#handedBack.push(taskKey(task));
      return;
    }
    const running: Running = {
      runId: task.run_id ?? '',
      controller: new AbortController(),
      released: false,
      stopWaiting: () => {},
    };
    // Nothing may reject out of here: an unhandled rejection would end the process and leave
    // the worker row live and the task started.
    const p: Promise<void> = this.#execute(task, running, taskTrace)
      .catch((e) =>
        this.log.error(`executing ${task.flow_slug}/${task.step_slug}: ${errorText(e)}`)
      )
      .finally(() => {
        this.#running.delete(p);
        this.onSettled();
      });
    this.#running.set(p, running);
  }

  /** Aborts every running handler's signal: the worker stops (`reason`). */
  shutdown(reason: string): void {
    this.#shutdown ??= new WorkerShutdownError(reason);
    for (const r of this.#running.values()) {
      if (!r.controller.signal.aborted) this.#abort(r.controller, this.#shutdown);
    }
  }

  /**
   * Aborts the signal of every running handler of these runs with a {@linkcode RunCancelledError}
   * (the heartbeat found them cancelled, or failed by another task). What such a handler then
   * returns or throws is still reported: the SQL core records it and revives nothing.
   */
  cancelRuns(runs: readonly EndedRun[]): void {
    const ended = new Map(runs.map((r) => [r.run_id, r]));
    for (const r of this.#running.values()) {
      const run = ended.get(r.runId);
      if (!run || r.released || r.controller.signal.aborted) continue;
      this.log.info(`run ${run.run_id} is ${run.status}: aborting its handler`);
      this.#abort(r.controller, new RunCancelledError(run.run_id, run.status, run.reason));
    }
  }

  /**
   * Aborts a handler's signal. The handler's own `abort` listeners run inside this call, and
   * the runtime reports an error one of them throws as uncaught, which ends a Deno process;
   * such an error is logged here instead.
   */
  #abort(controller: AbortController, reason: Error): void {
    const onError = (e: ErrorEvent) => {
      e.preventDefault();
      this.log.error(`an abort listener of a handler threw: ${errorText(e.error)}`);
    };
    globalThis.addEventListener('error', onError);
    try {
      controller.abort(reason);
    } finally {
      globalThis.removeEventListener('error', onError);
    }
  }

  /** Resolves when no handler runs, or at `deadline` (`Date.now()` ms), whichever is first. */
  async drain(deadline = Infinity): Promise<void> {
    while (this.#unreleased().length > 0 && Date.now() < deadline) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled(this.#unreleased()),
        ...(deadline === Infinity ? [] : [
          new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now())))),
        ]),
      ]);
      clearTimeout(timer);
    }
  }

  /**
   * The tasks whose work is handed back with the shutdown, for `release_tasks`: claimed while
   * stopping (never started), or whose handler threw the abort reason within the grace period.
   */
  handedBack(): readonly TaskKey[] {
    return this.#handedBack;
  }

  /** Drops the outcome of every handler still running; returns how many there were. */
  release(): number {
    const left = this.#unreleased();
    for (const p of left) {
      const r = this.#running.get(p)!;
      r.released = true;
      r.stopWaiting();
    }
    return left.length;
  }

  #unreleased(): Promise<void>[] {
    return [...this.#running].filter(([, r]) => !r.released).map(([p]) => p);
  }

  async #execute(task: TaskClaim, running: Running, taskTrace: TaskTrace): Promise<void> {
    const flowSlug = task.flow_slug!, stepSlug = task.step_slug!, runId = task.run_id!;
    const attempt = task.attempt!;
    const taskIndex = task.task_index ?? 0;
    const step = this.index.step(flowSlug, stepSlug)!;
    // One span per task: flow (the alias, or the slug of a flow without one), version (the
    // concrete slug), step, task index, attempt, queue, worker; its disposition when it ends.
    const span = startTaskSpan(taskTrace.traceparent, taskTrace.claim, {
      'switchyard.flow': this.index.get(flowSlug)?.alias ?? flowSlug,
      'switchyard.flow.version': flowSlug,
      'switchyard.step': stepSlug,
      'switchyard.task_index': taskIndex,
      'switchyard.attempt': attempt,
      'switchyard.queue': task.queue_name,
      'switchyard.worker_id': this.workerId,
      'switchyard.run_id': runId,
    });
    let ended = false, sent = false, checkpointed = false;
    const end = (disposition: string, error?: unknown) => {
      if (ended) return;
      ended = true;
      span.setAttribute('switchyard.disposition', disposition);
      if (error === undefined) span.end();
      else endWithError(span, error);
    };
    const { controller } = running;
    const resources = this.resources;
    const endsAt = this.endsAt;
    const handlerContext: StepContext<unknown> = {
      runId,
      flowSlug,
      stepSlug,
      taskIndex,
      attempt,
      flowInput: task.flow_input,
      // Aborted on the task's timeout, by shutdown() when the worker stops, or by cancelRuns()
      // when the heartbeat finds the run cancelled or failed.
      signal: controller.signal,
      get deadline() {
        return Math.max(0, endsAt() - Date.now());
      },
      checkpoint: async (state: unknown) => {
        assertJson(state, `checkpoint of ${flowSlug}/${stepSlug}`);
        await this.q.checkpointTask(runId, stepSlug, taskIndex, attempt, state);
        checkpointed = true;
      },
      progress: (data: unknown) => {
        assertJson(data, `progress of ${flowSlug}/${stepSlug}`);
        return this.q.reportProgress(runId, stepSlug, taskIndex, attempt, data);
      },
      clearCheckpoint: () => this.q.clearCheckpoint(runId, stepSlug, taskIndex, attempt),
      resume: async <T>() => {
        const saved = await this.q.taskCheckpoint(runId, stepSlug, taskIndex);
        return saved === null ? undefined : saved.state as T;
      },
      env: resources.env,
      get sql() {
        return resources.sql();
      },
      ...(resources.supabase ? { supabase: resources.supabase } : {}),
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      // The step timeout spans instances: what earlier ones used of it is gone.
      const carriedMs = task.carried_ms ?? 0;
      const timeoutMs = Math.max(1, (task.timeout ?? 60) * 1000 - carriedMs);
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const e = new Error(
            `step "${stepSlug}" timed out after ${task.timeout}s` +
              (carriedMs > 0
                ? ` (${Math.round(carriedMs / 1000)}s of it on earlier instances that handed ` +
                  'the task back)'
                : ''),
          );
          this.#abort(controller, e);
          reject(e);
        }, timeoutMs);
        // A released handler may run on; nothing waits for it, and no timer keeps the
        // process alive for it.
        running.stopWaiting = () => {
          clearTimeout(timer);
          reject(new Error('released'));
        };
      });
      // The handler runs inside the task's span: spans it makes are its children.
      const active = trace.setSpan(context.active(), span);
      const output = await Promise.race([
        Promise.resolve().then(() =>
          context.with(active, () => step.handler(task.input, handlerContext))
        ),
        timedOut,
      ]);
      if (running.released) return end('released');
      const value = output === undefined ? null : output;
      assertJson(value, `output of ${flowSlug}/${stepSlug}`);
      // Over the limit: the attempt fails here instead of sending what SQL refuses.
      const max = this.limits.maxOutputBytes;
      const size = max > 0 ? jsonTextBytes(value) : 0;
      if (size > max) {
        throw new SwitchyardError(
          `the output of step "${stepSlug}" is ${size} bytes of JSON, over the limit of ${max} ` +
            'bytes (setting max_output_bytes); return a smaller value (store large data ' +
            'elsewhere and return a reference)',
        );
      }
      // The handler's slot is free once its completion is queued; the write goes with the
      // next batch while the worker claims more work.
      sent = true;
      this.writer.add({ runId, stepSlug, taskIndex, attempt, output: value })
        .then(() => end('completed'));
    } catch (e) {
      if (running.released) return end('released');
      if (
        controller.signal.reason instanceof WorkerShutdownError &&
        (honoursShutdown(e) || checkpointed)
      ) {
        end('shutdown');
        // The handler honoured the shutdown, or saved its work: the task stays started until the
        // worker releases it, and release_tasks refunds the attempt within its bounds.
        if (honoursShutdown(e)) this.#handedBack.push({ runId, stepSlug, taskIndex });
        this.log.info(`${flowSlug}/${stepSlug} of run ${runId} stopped for the shutdown`);
        return;
      }
      const result = await persist(
        this.log,
        'fail_task',
        () => this.q.failTask(runId, stepSlug, attempt, handlerErrorText(e), taskIndex, failure(e)),
      );
      const element = step.kind === 'map' ? ` element ${taskIndex}` : '';
      // The SQL core's answer: retrying, failed, skipped, ignored, or cancelled (the run was
      // cancelled meanwhile: no failed attempt, whatever the handler threw).
      if (result === 'cancelled') {
        end('cancelled');
        this.log.info(
          `${flowSlug}/${stepSlug}${element} attempt ${attempt} of run ${runId} cancelled: the run ` +
            `is cancelled (the handler ended with ${errorText(e)})`,
        );
        return;
      }
      end(result ?? 'unrecorded', e);
      if (controller.signal.reason instanceof RunCancelledError) {
        this.log.info(
          `${flowSlug}/${stepSlug}${element} of run ${runId} stopped: the run is ` +
            `${controller.signal.reason.status} (${result})`,
        );
        return;
      }
      this.log.warn(
        `${flowSlug}/${stepSlug}${element} attempt ${attempt} of run ${runId} failed (${result}): ${
          errorText(e)
        }`,
      );
    } finally {
      clearTimeout(timer);
      // Whatever else happened (an error escaped above): the span does not stay open.
      if (!ended && !sent) end('error');
    }
  }
}

/** A claimed task's identity. */
function taskKey(task: TaskClaim): TaskKey {
  return { runId: task.run_id!, stepSlug: task.step_slug!, taskIndex: task.task_index ?? 0 };
}

/**
 * What a handler's throw asks of the retry: `RetryAfter`'s delay, or `NonRetriable`. Never
 * throws: `instanceof` on a hostile value (a proxy whose prototype trap throws) counts as neither.
 */
function failure(e: unknown): { retryAfterSeconds: number | null; nonRetriable: boolean } {
  try {
    if (e instanceof RetryAfter) return { retryAfterSeconds: e.seconds, nonRetriable: false };
    return { retryAfterSeconds: null, nonRetriable: e instanceof NonRetriable };
  } catch {
    return { retryAfterSeconds: null, nonRetriable: false };
  }
}
