/**
 * The executor (docs/ARCHITECTURE.md §9): runs the handler of one claimed task with its
 * timeout and an `AbortSignal`, then hands the output to the completion writer or records
 * the failure (`fail_task`: the SQL core decides about retries and backoff).
 *
 * @module
 */
import { assertJson, jsonTextBytes } from '../dsl/json.ts';
import { SwitchyardError } from '../errors.ts';
import type { TaskClaim, WorkerQueries } from '../sql/worker_queries.ts';
import type { CompletionWriter } from './completion_writer.ts';
import type { DispatchIndex } from './dispatch_index.ts';
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
    /** The SQL core's limits that apply to outputs (docs/ARCHITECTURE.md §13); 0: no check. */
    private readonly limits: { maxOutputBytes: number } = { maxOutputBytes: 0 },
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
    const step = this.index.step(flowSlug, stepSlug)!;
    const controller = new AbortController();
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
        Promise.resolve().then(() =>
          step.handler(task.input, {
            runId,
            flowSlug,
            stepSlug,
            attempt,
            flowInput: task.flow_input,
            signal: controller.signal,
          })
        ),
        timedOut,
      ]);
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
      this.writer.add({ runId, stepSlug, attempt, output: value });
    } catch (e) {
      const result = await persist(
        this.log,
        'fail_task',
        () => this.q.failTask(runId, stepSlug, attempt, errorText(e)),
      );
      this.log.warn(
        `${flowSlug}/${stepSlug} attempt ${attempt} of run ${runId} failed (${result}): ${
          errorText(e)
        }`,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
