// @ts-check
// @ts-self-types="./browser.d.ts"
/**
 * Following a run from a browser (docs/design/observability.md): `followRun(runId, { onEvent })`
 * delivers every event of the run once, in order, across dropped connections. Plain JavaScript
 * with no imports, so a page loads it as it is:
 *
 * ```html
 * <script type="module">
 *   import { followRun } from '/browser.js';
 *   followRun(runId, { url: `/api/runs/${runId}/events`, token, onEvent: (e) => show(e) });
 * </script>
 * ```
 *
 * Two transports:
 * - **server-sent events** from the kit's endpoint (`createRunEventStream`, mounted by the
 *   dashboard at `api/runs/<id>/events` or in an Edge Function of one's own), read with `fetch`
 *   so the bearer or the user's access token goes in the `Authorization` header. The server
 *   listens before it reads the events after the cursor, for every connection;
 * - **Supabase Realtime** (`supabase` option: a supabase-js client the page made): it subscribes
 *   to inserts into `switchyard.run_events` for the run (row-level security lets a user see
 *   their own runs' rows), waits for the subscription, then reads the events after its cursor
 *   through the API (`switchyard` among the exposed schemas) while holding back what the
 *   subscription delivers, and then delivers the held-back ones.
 *
 * Either way the cursor is the id of the last event delivered: an event whose id is not above it
 * is dropped (a repeat), and after a lost connection the transport starts again from it. Event
 * ids increase within a run in commit order, so nothing is skipped either. The follow ends after
 * the run's `completed`, `failed` or `cancelled` event (unless `untilEnd` is false), or on
 * `stop()`, or on a 204 answer (the run has ended and nothing follows the cursor); a refusal
 * (401, 403, 404) ends it with an error.
 *
 * @module
 */

/** @typedef {import('./browser.d.ts').FollowedEvent} FollowedEvent */
/** @typedef {import('./browser.d.ts').RealtimeClient} RealtimeClient */
/** @typedef {import('./browser.d.ts').FollowOptions} FollowOptions */
/** @typedef {import('./browser.d.ts').FollowStatus} FollowStatus */
/** @typedef {import('./browser.d.ts').Following} Following */

const TERMINAL = ['completed', 'failed', 'cancelled'];

/**
 * A refusal of the endpoint (not worth retrying).
 */
export class FollowRefusedError extends Error {
  /**
   * @param {number} status The HTTP status.
   * @param {string} message What the server said.
   */
  constructor(status, message) {
    super(message);
    this.name = 'FollowRefusedError';
    /** The HTTP status (401, 403, 404, ...). */
    this.status = status;
  }
}

/**
 * A row of `switchyard.run_events` (Realtime and the API give snake_case) as a FollowedEvent.
 *
 * @param {Record<string, any>} row
 * @returns {FollowedEvent}
 */
function fromRow(row) {
  /** @type {FollowedEvent} */
  const e = {
    eventId: Number(row.event_id),
    runId: row.run_id,
    flowSlug: row.flow_slug,
    stepSlug: row.step_slug ?? null,
    event: row.event,
    at: row.created_at,
  };
  if (row.event === 'progress') {
    e.taskIndex = row.task_index ?? 0;
    e.data = row.data;
  }
  return e;
}

/**
 * Follows a run: every event once, in order, across reconnects.
 *
 * @example
 * ```js
 * import { followRun } from './browser.js';
 * const runId = crypto.randomUUID();
 * const following = followRun(runId, {
 *   url: `https://example.com/api/runs/${runId}/events`,
 *   token: 'the access token',
 *   onEvent: (e) => console.log(e.eventId, e.stepSlug, e.event, e.data),
 * });
 * following.stop();
 * ```
 *
 * @param {string} runId The run.
 * @param {FollowOptions} options What to call, and how to connect.
 * @returns {Following}
 */
export function followRun(runId, options) {
  let cursor = options.after ?? 0;
  let stopped = false;
  const untilEnd = options.untilEnd ?? true;
  const firstRetry = options.retryMs ?? 500;
  /** @type {Set<() => void>} */
  const onStop = new Set();
  /** @type {(value: number) => void} */
  let resolveDone = () => {};
  /** @type {(error: unknown) => void} */
  let rejectDone = () => {};
  /** @type {Promise<number>} */
  const done = new Promise((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  /** @param {FollowStatus} status @param {string} [detail] */
  const status = (status, detail) => {
    try {
      options.onStatus?.(status, detail);
    } catch (e) {
      console.error(e);
    }
  };
  const stop = () => {
    if (stopped) return;
    stopped = true;
    for (const f of onStop) f();
    status('ended');
    resolveDone(cursor);
  };
  /** Delivers `e` unless it is at or below the cursor; true when the run ended with it. */
  const deliver = (/** @type {FollowedEvent} */ e) => {
    if (stopped || !(e.eventId > cursor)) return false;
    cursor = e.eventId;
    try {
      options.onEvent(e);
    } catch (err) {
      console.error(err);
    }
    if (untilEnd && e.stepSlug === null && TERMINAL.includes(e.event)) {
      stop();
      return true;
    }
    return false;
  };
  const token = async () =>
    typeof options.token === 'function' ? await options.token() : options.token;
  /** Waits `ms`, or less when stopped. */
  const pause = (/** @type {number} */ ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        onStop.delete(wake);
        resolve(undefined);
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve(undefined);
      };
      onStop.add(wake);
    });

  const loop = options.supabase ? realtime : serverSentEvents;
  loop().catch((e) => {
    if (stopped) return;
    stopped = true;
    for (const f of onStop) f();
    status('ended', e instanceof Error ? e.message : String(e));
    rejectDone(e);
  });
  return { stop, cursor: () => cursor, done };

  /** The server-sent events transport: one fetch per connection, from the cursor. */
  async function serverSentEvents() {
    const fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
    const base = typeof options.url === 'function'
      ? options.url(runId)
      : options.url ?? `api/runs/${encodeURIComponent(runId)}/events`;
    let wait = firstRetry;
    while (!stopped) {
      status('connecting');
      const controller = new AbortController();
      const abort = () => controller.abort();
      onStop.add(abort);
      try {
        const url = new URL(base, globalThis.location?.href);
        url.searchParams.set('after', String(cursor));
        /** @type {Record<string, string>} */
        const headers = { accept: 'text/event-stream' };
        const t = await token();
        if (t) headers.authorization = `Bearer ${t}`;
        const response = await fetcher(url, {
          headers,
          signal: controller.signal,
          cache: 'no-store',
        });
        // 204: the run ended and nothing follows the cursor (a resume after its last event).
        if (response.status === 204) {
          stop();
          return;
        }
        if (!response.ok || !response.body) {
          const text = await response.text().catch(() => '');
          let message = text;
          try {
            message = JSON.parse(text).message ?? text;
          } catch { /* not JSON */ }
          if (
            response.status >= 400 && response.status < 500 && response.status !== 408 &&
            response.status !== 429
          ) {
            throw new FollowRefusedError(response.status, `following run ${runId}: ${message}`);
          }
          throw new Error(`following run ${runId}: ${response.status} ${message}`);
        }
        status('live');
        wait = firstRetry;
        await readStream(response.body);
        if (stopped) return;
        status('reconnecting', 'the stream ended');
      } catch (e) {
        if (e instanceof FollowRefusedError) throw e;
        if (stopped) return;
        status('reconnecting', e instanceof Error ? e.message : String(e));
        await pause(wait);
        wait = Math.min(wait * 2, 10_000);
      } finally {
        onStop.delete(abort);
      }
    }
  }

  /**
   * Reads `id:`/`data:` frames until the body ends; throws when the connection drops.
   *
   * @param {ReadableStream<Uint8Array>} body
   */
  async function readStream(body) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    /** @type {string[]} */
    let data = [];
    try {
      while (!stopped) {
        const { done: ended, value } = await reader.read();
        if (ended) return;
        buffer += decoder.decode(value, { stream: true });
        let newline;
        while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
          if (line === '') {
            if (data.length > 0 && deliver(JSON.parse(data.join('\n')))) return;
            data = [];
          } else if (line.startsWith('data:')) {
            data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
          } // id:, retry: and comments: the cursor is the delivered event's own id
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  /** The Supabase Realtime transport: subscribe, then the backlog, then the held-back inserts. */
  async function realtime() {
    const supabase = /** @type {RealtimeClient} */ (options.supabase);
    let wait = firstRetry;
    while (!stopped) {
      status('connecting');
      /** @type {FollowedEvent[] | null} held back until the backlog is delivered */
      let held = [];
      /** @type {(reason: string) => void} */
      let lost = () => {};
      const gone = new Promise((resolve) => (lost = resolve));
      const channel = supabase.channel(
        `switchyard-run-${runId}-${Math.random().toString(36).slice(2)}`,
      )
        .on('postgres_changes', {
          event: 'INSERT',
          schema: 'switchyard',
          table: 'run_events',
          filter: `run_id=eq.${runId}`,
        }, (/** @type {{ new: Record<string, unknown> }} */ payload) => {
          const e = fromRow(payload.new);
          if (held) held.push(e);
          else deliver(e);
        });
      const subscribed = new Promise((resolve) => {
        channel.subscribe((/** @type {string} */ state, /** @type {Error | undefined} */ err) => {
          if (state === 'SUBSCRIBED') resolve(undefined);
          else if (state === 'CHANNEL_ERROR' || state === 'TIMED_OUT' || state === 'CLOSED') {
            lost(`${state}${err ? `: ${err.message}` : ''}`);
          }
        });
      });
      const unsubscribe = () => {
        lost('stopped');
        supabase.removeChannel(channel);
      };
      onStop.add(unsubscribe);
      try {
        const first = await Promise.race([subscribed.then(() => null), gone]);
        if (first !== null) throw new Error(String(first));
        // Subscribed: read what committed before (and maybe also during) the subscription.
        for (;;) {
          const { data, error } = await supabase.schema('switchyard').from('run_events')
            .select('*').eq('run_id', runId).gt('event_id', cursor).order('event_id')
            .limit(1000);
          if (error) throw new Error(`reading the events of run ${runId}: ${error.message}`);
          for (const row of data ?? []) if (deliver(fromRow(row))) return;
          if ((data ?? []).length < 1000) break;
        }
        const late = held.sort((a, b) => a.eventId - b.eventId);
        held = null;
        for (const e of late) if (deliver(e)) return;
        status('live');
        wait = firstRetry;
        const why = await gone;
        if (stopped) return;
        status('reconnecting', String(why));
      } catch (e) {
        if (stopped) return;
        status('reconnecting', e instanceof Error ? e.message : String(e));
        await pause(wait);
        wait = Math.min(wait * 2, 10_000);
      } finally {
        onStop.delete(unsubscribe);
        unsubscribe();
      }
    }
  }
}
