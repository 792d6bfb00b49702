/**
 * The guard against a database restart ending the process (lib/sql/connection.ts,
 * docs/design/worker.md#worker-states-and-parts): the EPIPE that Deno's node:net raises for a write
 * after the server's FIN and the ECONNRESET it raises for a read of a reset connection, escaping
 * postgres.js as unhandled rejections, are stopped; every other rejection is not.
 */
import assert from 'node:assert/strict';
import {
  ENDED_SOCKET_MESSAGE,
  openSql,
  RESET_SOCKET_MESSAGE,
} from '../../../lib/sql/connection.ts';

Deno.test('openSql installs the guard: the ended-socket EPIPE and the read ECONNRESET are stopped, any other rejection is not', async () => {
  // Opening a pool connects nothing until a query; it installs the guard.
  const sql = openSql('postgresql://nobody@127.0.0.1:1/none', { max: 1 });
  const seen: { message: string; stopped: boolean }[] = [];
  // Listeners run in the order added: this one sees what the guard decided.
  const observe = (e: PromiseRejectionEvent) => {
    seen.push({ message: (e.reason as Error).message, stopped: e.defaultPrevented });
    e.preventDefault(); // the test's own rejections must not fail the test
  };
  globalThis.addEventListener('unhandledrejection', observe);
  try {
    Promise.reject(Object.assign(new Error(ENDED_SOCKET_MESSAGE), { code: 'EPIPE' }));
    Promise.reject(Object.assign(new Error(ENDED_SOCKET_MESSAGE), { code: 'ECONNRESET' }));
    Promise.reject(
      Object.assign(new Error(RESET_SOCKET_MESSAGE), { code: 'ECONNRESET', syscall: 'read' }),
    );
    Promise.reject(Object.assign(new Error(RESET_SOCKET_MESSAGE), { code: 'EPIPE' }));
    Promise.reject(new Error('write ECONNRESET'));
    Promise.reject(new Error('something else'));
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    globalThis.removeEventListener('unhandledrejection', observe);
    await sql.end();
  }
  assert.deepEqual(seen, [
    { message: ENDED_SOCKET_MESSAGE, stopped: true },
    { message: ENDED_SOCKET_MESSAGE, stopped: false },
    { message: RESET_SOCKET_MESSAGE, stopped: true },
    { message: RESET_SOCKET_MESSAGE, stopped: false },
    { message: 'write ECONNRESET', stopped: false },
    { message: 'something else', stopped: false },
  ]);
});
