/**
 * Waiting for runs without polling (docs/design/client.md): one `LISTEN` per client on
 * the channel the SQL core notifies on each run and step transition (the payload is the run
 * id), through postgres.js `sql.listen`. Waiters subscribe by run id and re-read the state
 * they wait for when woken. postgres.js re-issues the `LISTEN` after a lost connection and
 * then calls back: every waiter is woken, so a transition whose notification was lost with
 * the connection is found by that re-read.
 *
 * @module
 */
import type { Sql } from './connection.ts';
import { RUN_EVENTS_CHANNEL } from './runs.ts';
import { SwitchyardError } from '../errors.ts';

/**
 * The notification fan-out of one client: one `LISTEN`, any number of waiters per run.
 *
 * @example
 * ```ts
 * import { openSql } from './connection.ts';
 * import { RunNotifications } from './notifications.ts';
 *
 * const sql = openSql('postgres://localhost/app', { max: 2 });
 * const notifications = new RunNotifications(sql);
 * const runId = crypto.randomUUID();
 * const unsubscribe = await notifications.subscribe(runId, () => console.log('run moved'));
 * unsubscribe();
 * await notifications.close();
 * await sql.end();
 * ```
 */
export class RunNotifications {
  #sql: Sql;
  #waiters = new Map<string, Set<() => void>>();
  #listening: Promise<{ unlisten(): Promise<void> }> | undefined;
  #closed = false;
  /** Waits read again this often too (for connections without notifications); else unset. */
  readonly fallbackPollMs: number | undefined;

  #cannotListen: string | undefined;

  /**
   * Listens through `sql` (lazily: on the first subscription). With `cannotListen` (why the
   * connection cannot receive notifications), every subscription is refused with that reason.
   */
  constructor(sql: Sql, fallbackPollMs?: number, cannotListen?: string) {
    this.#sql = sql;
    this.fallbackPollMs = fallbackPollMs;
    this.#cannotListen = cannotListen;
  }

  /**
   * Calls `wake` on every notification for `runId`, and after every reconnect. Resolves once
   * the `LISTEN` is active, so a read made after it misses nothing. Returns the function that
   * ends the subscription.
   */
  async subscribe(runId: string, wake: () => void): Promise<() => void> {
    if (this.#closed) throw new SwitchyardError('the client is closed');
    if (this.#cannotListen) {
      throw new SwitchyardError(`cannot wait for run ${runId}: ${this.#cannotListen}`);
    }
    let set = this.#waiters.get(runId);
    if (!set) this.#waiters.set(runId, set = new Set());
    set.add(wake);
    const unsubscribe = () => {
      const s = this.#waiters.get(runId);
      s?.delete(wake);
      if (s?.size === 0) this.#waiters.delete(runId);
    };
    try {
      await this.#listen();
    } catch (e) {
      unsubscribe();
      throw e;
    }
    return unsubscribe;
  }

  /** Stops listening; later subscriptions are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#waiters.clear();
    const listening = this.#listening;
    this.#listening = undefined;
    if (listening) await listening.then((l) => l.unlisten(), () => undefined);
  }

  #listen(): Promise<unknown> {
    this.#listening ??= this.#sql.listen(
      RUN_EVENTS_CHANNEL,
      (runId) => this.#wake(runId),
      // Called after the first LISTEN and after each one postgres.js re-issues on a new
      // connection: notifications sent meanwhile are lost, so every waiter reads again.
      () => this.#wakeAll(),
    ).catch((e) => {
      this.#listening = undefined; // the next subscription tries again
      throw e;
    });
    return this.#listening;
  }

  #wake(runId: string): void {
    for (const wake of this.#waiters.get(runId) ?? []) wake();
  }

  #wakeAll(): void {
    for (const set of this.#waiters.values()) for (const wake of set) wake();
  }
}
