/**
 * One PGlite session served to several postgres.js connections, one protocol cycle at a time,
 * for the demo's embedded database (`cli/_pglite_worker.ts`) and a test engine's
 * (`lib/testing/embedded.ts`).
 *
 * Why a scheduler of our own: PGlite is one database session. pglite-socket's
 * `PGLiteSocketServer` (0.2.x) queues protocol messages one by one across connections, so the
 * Parse/Bind/Execute/Sync messages of two postgres.js connections interleave and corrupt each
 * other's unnamed statements ("bind message supplies 5 parameters, but prepared statement
 * \"\" requires 1"). {@linkcode SessionScheduler} keeps the session with one connection until
 * PGlite answers ReadyForQuery with status idle — the end of an extended-protocol cycle, and
 * of any transaction — and only then serves the next connection. pglite-socket's
 * `PGLiteSocketHandler` still does the framing, SSL refusal and cancel handling.
 *
 * @module
 */
import type { PGlite } from '@electric-sql/pglite';

interface Item {
  handlerId: number;
  message: Uint8Array | null; // null: reset the session after its owner left
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: Error) => void;
}

const TERMINATE = 0x58; // 'X'
const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);
const ROLLBACK = (() => {
  const text = new TextEncoder().encode('ROLLBACK\0');
  const out = new Uint8Array(5 + text.length);
  out[0] = 0x51; // 'Q'
  new DataView(out.buffer).setInt32(1, 4 + text.length);
  out.set(text, 5);
  return out;
})();

/** The status byte of a trailing ReadyForQuery ('Z', length 5), or null. */
function readyStatus(tail: number[]): string | null {
  if (tail.length < 6) return null;
  const [z, a, b, c, d, status] = tail.slice(-6);
  return z === 0x5a && a === 0 && b === 0 && c === 0 && d === 5
    ? String.fromCharCode(status)
    : null;
}

/**
 * Serves protocol messages of many connections to one PGlite session, one connection at a
 * time per protocol cycle (see the module docs). It has the shape `PGLiteSocketHandler` expects
 * of its `queryQueue`.
 *
 * @example
 * ```ts
 * import { PGlite } from '@electric-sql/pglite';
 * import { SessionScheduler } from './_pglite_session.ts';
 *
 * const db = await PGlite.create();
 * const scheduler = new SessionScheduler(db);
 * console.assert(scheduler.getQueueLength() === 0);
 * await db.close();
 * ```
 */
export class SessionScheduler {
  #queue: Item[] = [];
  #owner: number | null = null;
  #running = false;

  constructor(private readonly db: PGlite) {}

  /** Queues one protocol message of a connection; resolves with the bytes answered. */
  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void) {
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ handlerId, message, onData, resolve, reject });
      void this.#run();
    });
  }

  /** Messages waiting. */
  getQueueLength(): number {
    return this.#queue.length;
  }

  /** Drops the waiting messages of a connection that closed. */
  clearQueueForHandler(handlerId: number): void {
    this.#queue = this.#queue.filter((item) => {
      if (item.handlerId !== handlerId) return true;
      item.reject(new Error('connection closed'));
      return false;
    });
  }

  /** A connection left while holding the session: finish its cycle and roll it back. */
  clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.#owner !== handlerId) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#queue.unshift({
        handlerId,
        message: null,
        onData: () => {},
        resolve: () => resolve(),
        reject,
      });
      void this.#run();
    });
  }

  async #exec(message: Uint8Array, onData: (data: Uint8Array) => void) {
    const tail: number[] = [];
    let bytes = 0;
    await this.db.runExclusive(() =>
      this.db.execProtocolRawStream(message, {
        onRawData: (data: Uint8Array) => {
          bytes += data.length;
          onData(data);
          for (const byte of data.subarray(Math.max(0, data.length - 6))) tail.push(byte);
          if (tail.length > 6) tail.splice(0, tail.length - 6);
        },
      })
    );
    return { bytes, status: readyStatus(tail) };
  }

  async #run(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (;;) {
        const owner = this.#owner;
        const index = owner === null ? 0 : this.#queue.findIndex((i) => i.handlerId === owner);
        if (index < 0 || index >= this.#queue.length) break;
        const [item] = this.#queue.splice(index, 1);
        try {
          if (item.message === null) {
            const { status } = await this.#exec(SYNC, () => {});
            if (status !== 'I') await this.#exec(ROLLBACK, () => {});
            this.#owner = null;
            item.resolve(0);
            continue;
          }
          if (item.message[0] === TERMINATE) {
            // The session is shared: a client's Terminate ends only its socket.
            item.resolve(0);
            continue;
          }
          const { bytes, status } = await this.#exec(item.message, item.onData);
          this.#owner = status === 'I' ? null : item.handlerId;
          item.resolve(bytes);
        } catch (e) {
          item.reject(e instanceof Error ? e : new Error(String(e)));
        }
      }
    } finally {
      this.#running = false;
    }
  }
}
