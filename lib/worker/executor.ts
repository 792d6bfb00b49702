/**
 * The executor (docs/ARCHITECTURE.md §9): runs the handler of one claimed task with its
 * timeout and an `AbortSignal`, then hands the output to the completion writer or records
 * the failure (`fail_task`: the SQL core decides about retries and backoff).
 *
 * @module
 */
import type { StepContext } from '../dsl/flow.ts';
import { assertJson } from '../dsl/json.ts';
import type { TaskClaim, WorkerQueries } from '../sql/worker_queries.ts';
import type { CompletionWriter } from './completion_writer.ts';
import type { DispatchIndex } from './dispatch_index.ts';
import type { HandlerResources } from './handler_resources.ts';
import { errorText, persist, type WorkerLogger } from './persist.ts';

/** Runs claimed tasks; one instance per worker. */
export class Executor {
  readonly #running = new Set<Promise<void>>();

  /** `onSettled` runs whenever a handler slot frees up. */
  constructor(
    private readonly q: WorkerQueries,
    private readonly index: DispatchIndex,
    private readonly writer: CompletionWriter,
    private readonly log: WorkerLogger,
    private readonly onSettled: () => void,
    private readonly resources: HandlerResources,
    private readonly shutdown: AbortSignal,
  ) {}

  /** Handlers running now. */
  get size(): number {
    return this.#running.size;
  }

  /** Starts a claimed task; it holds a slot until its handler settles. */
  run(task: TaskClaim): void {
    const p: Promise<void> = this.#execute(task).finally(() => {
      this.#running.delete(p);
      this.onSettled();
    });
    this.#running.add(p);
  }

  /** Resolves when no handler runs. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  async #execute(task: TaskClaim): Promise<void> {
    const flowSlug = task.flow_slug!, stepSlug = task.step_slug!, runId = task.run_id!;
    const attempt = task.attempt!;
    const taskIndex = task.task_index ?? 0;
    const step = this.index.step(flowSlug, stepSlug)!;
    const controller = new AbortController();
    const resources = this.resources;
    const context: StepContext<unknown> = {
      runId,
      flowSlug,
      stepSlug,
      taskIndex,
      attempt,
      flowInput: task.flow_input,
      // Timeout, or the worker shutting down.
      signal: AbortSignal.any([controller.signal, this.shutdown]),
      env: resources.env,
      get sql() {
        return resources.sql();
      },
      ...(resources.supabase ? { supabase: resources.supabase } : {}),
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeoutMs = (task.timeout ?? 60) * 1000;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const e = new Error(`step "${stepSlug}" timed out after ${task.timeout}s`);
          controller.abort(e);
          reject(e);
        }, timeoutMs);
      });
      const output = await Promise.race([
        Promise.resolve().then(() => step.handler(task.input, context)),
        timedOut,
      ]);
      const value = output === undefined ? null : output;
      assertJson(value, `output of ${flowSlug}/${stepSlug}`);
      // The handler's slot is free once its completion is queued; the write goes with the
      // next batch while the worker claims more work.
      this.writer.add({ runId, stepSlug, taskIndex, attempt, output: value });
    } catch (e) {
      const result = await persist(
        this.log,
        'fail_task',
        () => this.q.failTask(runId, stepSlug, attempt, errorText(e), taskIndex),
      );
      const task = step.kind === 'map' ? ` element ${taskIndex}` : '';
      this.log.warn(
        `${flowSlug}/${stepSlug}${task} attempt ${attempt} of run ${runId} failed (${result}): ${
          errorText(e)
        }`,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
