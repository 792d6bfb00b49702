/**
 * The worker's lifecycle as one state machine (docs/design/worker.md#worker-states-and-parts):
 *
 * ```
 * starting -> running -> stopping -> stopped
 *                               \-> failed   (a fatal stop: `done` rejects)
 * ```
 *
 * `starting` covers the start-up checks; `running` polls; `stopping` reads nothing new, aborts the
 * handlers' signals, and lets handlers finish within the grace period and pending completion
 * writes drain before the rest is released; `stopped` and `failed` are final.
 *
 * @module
 */

/** Where a worker is in its life. */
export type WorkerState = 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

/** One worker's lifecycle: its state, why it stops, and the fatal error that made it fail. */
export class Lifecycle {
  #state: WorkerState = 'starting';
  #reason = 'stopped';
  #fatal: Error | null = null;
  readonly #wakers = new Set<() => void>();
  readonly #onStop: ((reason: string) => void)[] = [];
  #stopRequestedAt: number | null = null;

  /** The current state. */
  get state(): WorkerState {
    return this.#state;
  }

  /** True from the stop request on: nothing new is read or claimed. */
  get stopping(): boolean {
    return this.#state !== 'starting' && this.#state !== 'running';
  }

  /** Why the worker stops (or stopped): the request's reason, or the fatal error's message. */
  get reason(): string {
    return this.#fatal ? this.#fatal.message : this.#reason;
  }

  /** The error that makes the stop fatal, if any. */
  get fatal(): Error | null {
    return this.#fatal;
  }

  /** starting -> running, once the worker is registered. */
  started(): void {
    if (this.#state === 'starting') this.#state = 'running';
  }

  /**
   * Asks the worker to stop; the first reason wins. Returns true for the first request.
   * Everything waiting on {@linkcode Lifecycle.wake} is woken.
   */
  requestStop(reason: string): boolean {
    const first = !this.stopping;
    if (first) {
      this.#state = 'stopping';
      this.#reason = reason;
      this.#stopRequestedAt = Date.now();
      for (const fn of this.#onStop) fn(this.reason);
    }
    this.wake();
    return first;
  }

  /** Runs `fn` with the reason once, at the first stop request (at once if already stopping). */
  onStopRequested(fn: (reason: string) => void): void {
    if (this.stopping) fn(this.reason);
    else this.#onStop.push(fn);
  }

  /** When the stop was first requested (`Date.now()`), or null while running. */
  get stopRequestedAt(): number | null {
    return this.#stopRequestedAt;
  }

  /** Stops fatally: the worker ends `failed` and `done` rejects with `error`. */
  fail(error: Error): boolean {
    this.#fatal ??= error;
    return this.requestStop(error.message);
  }

  /** stopping -> stopped | failed, once everything drained and the stop is recorded. */
  finish(): WorkerState {
    this.#state = this.#fatal ? 'failed' : 'stopped';
    return this.#state;
  }

  /** Resolves at the next {@linkcode Lifecycle.wake} (a freed slot or a stop request). */
  waitForWake(): Promise<void> {
    return new Promise((resolve) => {
      const waker = () => {
        this.#wakers.delete(waker);
        resolve();
      };
      this.#wakers.add(waker);
    });
  }

  /** Wakes everything waiting in {@linkcode Lifecycle.waitForWake}. */
  wake(): void {
    for (const waker of [...this.#wakers]) waker();
  }
}
