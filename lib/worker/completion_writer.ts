/**
 * The completion writer (docs/ARCHITECTURE.md §9): finished tasks are written in batches.
 * While one write is in flight, finished tasks queue up and go together in the next (one
 * round trip, one transaction). An idle worker's single completion is written on the next
 * turn of the event loop (no timer delay), so the tasks of a batch that finish in the same
 * turn go in one call.
 *
 * @module
 */
import type { WorkerQueries } from '../sql/worker_queries.ts';
import { persist, type WorkerLogger } from './persist.ts';

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

  /** Queues a completion; it is written with the next batch. */
  add(item: Completion): void {
    const written: Promise<void> = new Promise<void>((settle) => {
      this.#pending.push({ item, settle });
      if (this.#flushing || this.#scheduled) return;
      this.#scheduled = true;
      setTimeout(() => {
        this.#scheduled = false;
        if (!this.#flushing) this.#flush();
      }, 0);
    }).finally(() => {
      this.#writes.delete(written);
      this.onWritten();
    });
    this.#writes.add(written);
  }

  /** Resolves when every queued completion is written. */
  async drain(): Promise<void> {
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, 100);
      const items = batch.map((b) => b.item);
      const done = await persist(this.log, 'complete_tasks', () => this.q.completeTasks(items));
      // A batch that failed for another reason than the connection: write each item on
      // its own, so one bad completion cannot hold back the others.
      if (done === undefined && items.length > 1) {
        for (const c of items) {
          await persist(
            this.log,
            'complete_task',
            () => this.q.completeTask(c.runId, c.stepSlug, c.attempt, c.output, c.taskIndex),
          );
        }
      }
      for (const b of batch) b.settle();
    }
    this.#flushing = false;
  }
}
