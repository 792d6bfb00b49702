/** Polling helpers: tests wait for a condition with a deadline, never blindly. */

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

/** Fast polling settings for workers in tests. */
export const FAST = {
  maxPollSeconds: 1,
  pollIntervalMs: 20,
  heartbeatIntervalMs: 200,
  stallCheckIntervalMs: 300,
} as const;
