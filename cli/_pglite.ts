/**
 * An embedded PostgreSQL for the demo: PGlite on a worker thread, reachable by postgres.js and
 * the Supabase CLI through pglite-socket on a loopback port. Queries from different
 * connections are serialized, so it suits a demo, not concurrency tests.
 *
 * @module
 */

/**
 * A running embedded database.
 *
 * @example
 * ```ts
 * import { type EmbeddedPostgres, startEmbeddedPostgres } from './_pglite.ts';
 *
 * const pg: EmbeddedPostgres = await startEmbeddedPostgres();
 * console.log(pg.url, pg.version);
 * await pg.close();
 * ```
 */
export interface EmbeddedPostgres {
  /** Connection string (user postgres, database postgres, no TLS). */
  url: string;
  /** `select version()` of the embedded server. */
  version: string;
  /** Stops the server and the worker thread. */
  close(): Promise<void>;
}

/**
 * Starts PGlite on a worker thread and serves it on a free loopback port.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { startEmbeddedPostgres } from './_pglite.ts';
 *
 * const pg = await startEmbeddedPostgres();
 * const sql = postgres(pg.url, { max: 2 });
 * console.log(await sql`select 1 as one`);
 * await sql.end();
 * await pg.close();
 * ```
 */
export function startEmbeddedPostgres(timeoutMs = 120_000): Promise<EmbeddedPostgres> {
  const worker = new Worker(new URL('./_pglite_worker.ts', import.meta.url).href, {
    type: 'module',
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      worker.terminate();
      reject(new Error(`PGlite did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    worker.onerror = (event) => {
      event.preventDefault();
      clearTimeout(timer);
      worker.terminate();
      reject(new Error(`PGlite worker failed: ${event.message}`));
    };
    worker.onmessage = (
      event: MessageEvent<{ port?: number; version?: string; error?: string }>,
    ) => {
      clearTimeout(timer);
      if (event.data.error || !event.data.port) {
        worker.terminate();
        reject(new Error(`PGlite failed to start: ${event.data.error ?? 'no port reported'}`));
        return;
      }
      let closing: Promise<void> | undefined;
      resolve({
        url: `postgres://postgres:postgres@127.0.0.1:${event.data.port}/postgres`,
        version: event.data.version ?? 'unknown',
        close() {
          closing ??= new Promise<void>((done) => {
            const force = setTimeout(() => {
              worker.terminate();
              done();
            }, 5_000);
            worker.onmessage = () => {
              clearTimeout(force);
              worker.terminate();
              done();
            };
            worker.postMessage('close');
          });
          return closing;
        },
      });
    };
  });
}
