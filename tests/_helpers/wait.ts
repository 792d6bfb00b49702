/**
 * Waiting helpers: a test waits for a condition, a worker, a gate or a notification with a
 * deadline and says what it waited for, never blindly (a regression fails the test, it cannot
 * hang the run).
 */

/** Polls `check` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T> | T,
  { timeoutMs = 30_000, intervalMs = 50 } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Settles as `promise` does, or rejects after `ms` with an error naming `what` it waited for
 * (a worker's `done`, a gate a handler opens, a notification). The timer never outlives the
 * wait.
 */
export function within<T>(ms: number, what: string, promise: PromiseLike<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)),
      ms,
    );
  });
  return Promise.race([Promise.resolve(promise), deadline]).finally(() => clearTimeout(timer));
}

/** Fast polling settings for workers in tests. */
export const FAST = {
  maxPollSeconds: 1,
  pollIntervalMs: 20,
  heartbeatIntervalMs: 200,
  stallCheckIntervalMs: 300,
} as const;

/** {@link FAST} as the environment of a served queue function (`deno task serve`). */
export const FAST_ENV: Readonly<Record<string, string>> = {
  SWITCHYARD_MAX_POLL_SECONDS: String(FAST.maxPollSeconds),
  SWITCHYARD_POLL_INTERVAL_MS: String(FAST.pollIntervalMs),
  SWITCHYARD_HEARTBEAT_INTERVAL_MS: String(FAST.heartbeatIntervalMs),
  SWITCHYARD_STALL_CHECK_INTERVAL_MS: String(FAST.stallCheckIntervalMs),
};
