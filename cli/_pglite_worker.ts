/**
 * Runs inside a Web Worker started by `./_pglite.ts`: PGlite (PostgreSQL in WebAssembly) served
 * over TCP on a loopback port with pglite-socket's connection handler.
 *
 * Why a worker thread: PGlite runs queries synchronously, so a `pg_sleep` inside
 * `pgmq.read_with_poll` would otherwise freeze the demo's own event loop.
 *
 * Connections share PGlite's one session through `SessionScheduler`
 * (`lib/testing/_pglite_session.ts`), one protocol cycle at a time.
 *
 * Messages: posts `{ port, version }` when ready or `{ error }`; on `'close'` stops and posts
 * `{ closed: true }`.
 *
 * @module
 */
import { createServer, type Socket } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler } from '@electric-sql/pglite-socket';
import { SessionScheduler } from '../lib/testing/_pglite_session.ts';

const scope = globalThis as unknown as {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
};

try {
  const db = await PGlite.create();
  const [{ version }] = (await db.query<{ version: string }>('select version()')).rows;
  const scheduler = new SessionScheduler(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const server = createServer((socket: Socket) => {
    const handler = new PGLiteSocketHandler({
      queryQueue: scheduler as unknown as ConstructorParameters<
        typeof PGLiteSocketHandler
      >[0]['queryQueue'],
      closeOnDetach: true,
    });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener('close', forget);
    handler.addEventListener('error', forget);
    handler.attach(socket).catch(() => socket.destroy());
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address && typeof address === 'object') resolve(address.port);
      else reject(new Error('no TCP address'));
    });
  });
  scope.onmessage = async (event) => {
    if (event.data !== 'close') return;
    for (const handler of handlers) await handler.detach(true).catch(() => {});
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await db.close().catch(() => {});
    scope.postMessage({ closed: true });
  };
  scope.postMessage({ port, version });
} catch (e) {
  scope.postMessage({ error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
}
