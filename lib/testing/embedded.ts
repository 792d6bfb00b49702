/**
 * A test engine's own database (docs/design/clock.md#the-test-engine): PGlite (PostgreSQL in
 * WebAssembly)
 * in this process, served on a free loopback port through pglite-socket, so the kit's
 * postgres.js code reaches it as any PostgreSQL. No server, no Docker.
 *
 * The first database of a process builds the SQL core (a few seconds: PGlite's start, then the
 * core); its data directory is kept in memory as a snapshot, and a later database starts from
 * that snapshot, already migrated, or is an earlier one served again once it was reset to it
 * ({@linkcode EmbeddedDatabase.detach}).
 *
 * PGlite runs queries synchronously on this thread, so nothing here may wait inside the
 * database (`pg_sleep`, PGMQ's `read_with_poll`): the engine reads without polling.
 *
 * @module
 */
import { createServer, type Server, type Socket } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler } from '@electric-sql/pglite-socket';
import { SessionScheduler } from './_pglite_session.ts';

/**
 * A running embedded database.
 *
 * @example
 * ```ts
 * import { type EmbeddedDatabase, startEmbeddedDatabase } from './embedded.ts';
 *
 * const db: EmbeddedDatabase = await startEmbeddedDatabase();
 * console.log(db.url);
 * await db.close();
 * ```
 */
export interface EmbeddedDatabase {
  /** Its connection string (user postgres, database postgres, no TLS, a loopback port). */
  readonly url: string;
  /** Its data directory as a tarball, a snapshot {@linkcode startEmbeddedDatabase} starts from. */
  snapshot(): Promise<Blob>;
  /** Closes every connection, the port and the database. */
  close(): Promise<void>;
  /**
   * Closes every connection and the port, and hands back the database itself, open, for
   * {@linkcode startEmbeddedDatabase} to serve again.
   */
  detach(): Promise<PGlite>;
}

/**
 * Starts PGlite in this process, from `from` (a data directory it dumped, or a database an
 * embedded one detached) or empty, and serves it on a free loopback port.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { startEmbeddedDatabase } from './embedded.ts';
 *
 * const db = await startEmbeddedDatabase();
 * const sql = postgres(db.url, { max: 1 });
 * console.log(await sql`select 1 as one`);
 * await sql.end();
 * await db.close();
 * ```
 */
export async function startEmbeddedDatabase(from?: Blob | PGlite): Promise<EmbeddedDatabase> {
  const db = from instanceof PGlite ? from : await PGlite.create(
    from ? { loadDataDir: from, relaxedDurability: true } : { relaxedDurability: true },
  );
  const scheduler = new SessionScheduler(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
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
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('the embedded database got no TCP address'));
      });
    });
  } catch (e) {
    await db.close().catch(() => {});
    throw e;
  }
  let stopping: Promise<void> | undefined;
  const stopServing = () =>
    stopping ??= (async () => {
      for (const handler of handlers) await handler.detach(true).catch(() => {});
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    })();
  let closing: Promise<void> | undefined;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    async snapshot() {
      // A checkpoint first: the copy then starts without replaying the write-ahead log.
      await db.exec('checkpoint');
      return await db.dumpDataDir('none');
    },
    close() {
      closing ??= (async () => {
        await stopServing();
        await db.close().catch(() => {});
      })();
      return closing;
    },
    async detach() {
      await stopServing();
      return db;
    },
  };
}
