/**
 * The completion writer (docs/design/worker.md#worker-states-and-parts): finished tasks are written
 * in batches.
 * While one write is in flight, finished tasks queue up and go together in the next (one
 * round trip, one transaction). An idle worker's single completion is written on the next
 * turn of the event loop (no timer delay), so the tasks of a batch that finish in the same
 * turn go in one call.
 *
 * @module
 */
import type { WorkerQueries } from '../sql/worker_queries.ts';
import { errorText, persist, persistOutcome, type WorkerLogger } from './persist.ts';
import { startCompleteSpan } from '../tracing.ts';

/** One finished task. */
export interface Completion {
  /** The run. */
  runId: string;
  /** The step. */
  stepSlug: string;
  /** The task's position in its step (a map element's index; 0 for an ordinary step). */
  taskIndex: number;
  /** The attempt that holds the task; the SQL core ignores any other. */
  attempt: number;
  /** The handler's output (JSON). */
  output: unknown;
}

/** Batches completions into `complete_tasks` calls; see the module documentation. */
export class CompletionWriter {
  readonly #pending: { item: Completion; settle: () => void }[] = [];
  readonly #writes = new Set<Promise<void>>();
  #flushing = false;
  #scheduled = false;

  /** `onWritten` runs after each completion is written (a slot for a new write is free). */
  constructor(
    private readonly q: WorkerQueries,
    private readonly log: WorkerLogger,
    private readonly onWritten: () => void,
  ) {}

  /** Completions queued or being written. */
  get size(): number {
    return this.#writes.size;
  }

  /**
   * Queues a completion; it is written with the next batch. Resolves once that write is done
   * (never rejects: a write that failed leaves the task to the SQL core's stall recovery).
   */
  add(item: Completion): Promise<void> {
    const written: Promise<void> = new Promise<void>((settle) => {
      this.#pending.push({ item, settle });
      if (this.#flushing || this.#scheduled) return;
      this.#scheduled = true;
      setTimeout(() => {
        this.#scheduled = false;
        if (!this.#flushing) this.#flushSafely();
      }, 0);
    }).finally(() => {
      this.#writes.delete(written);
      this.onWritten();
    });
    this.#writes.add(written);
    return written;
  }

  /** Resolves when every queued completion is written. */
  async drain(): Promise<void> {
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
  }

  /** Flushes; nothing rejects out of a timer callback (it would end the process). */
  #flushSafely(): void {
    this.#flush().catch((e) => this.log.error(`writing completions failed: ${errorText(e)}`));
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0, 100);
        try {
          await this.#write(batch.map((b) => b.item));
        } catch (e) {
          this.log.error(`writing completions failed: ${errorText(e)}`);
        } finally {
          // Settled whatever happened, so drain() cannot hang; a completion that could not be
          // written leaves its task started, and the SQL core's stall recovery decides.
          for (const b of batch) b.settle();
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  async #write(items: Completion[]): Promise<void> {
    const span = startCompleteSpan({ 'switchyard.tasks': items.length });
    try {
      await this.#writeBatch(items);
    } finally {
      span.end();
    }
  }

  async #writeBatch(items: Completion[]): Promise<void> {
    const all = await persistOutcome(this.log, 'complete_tasks', () => this.q.completeTasks(items));
    if ('value' in all || !all.refused) return;
    // A batch the database refused: write each item on its own, so one bad completion cannot
    // hold back the others. An item refused on its own fails its attempt (fail_task decides
    // about the retry) rather than leaving the task started, to be run again after its timeout.
    for (const c of items) {
      const one = items.length === 1 ? all : await persistOutcome(
        this.log,
        'complete_task',
        () => this.q.completeTask(c.runId, c.stepSlug, c.attempt, c.output, c.taskIndex),
      );
      if ('value' in one || !one.refused) continue;
      await persist(
        this.log,
        'fail_task',
        () =>
          this.q.failTask(
            c.runId,
            c.stepSlug,
            c.attempt,
            `the database refused the output: ${errorText(one.error)}`,
            c.taskIndex,
          ),
      );
    }
  }
}
