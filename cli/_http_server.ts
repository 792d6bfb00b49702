/**
 * An HTTP/1.1 server for a fetch handler that times out half-open connections, for
 * `deno task dashboard`. `Deno.serve` has no such timeouts: a client that opens a connection
 * and sends nothing, or a request line and then one header byte every few seconds, keeps its
 * socket open for ever (800 such sockets stayed open). `node:http` has them:
 *
 * - the request head (request line and headers) must arrive within `headersTimeoutMs`
 *   (default 10 s) of the connection or of the previous response;
 * - the whole request, body included, within `requestTimeoutMs` (default 30 s);
 * - a connection with no traffic at all is closed after `idleTimeoutMs` (default 15 s), unless
 *   the handler is still answering its request (a slow answer is sent, not dropped), and a
 *   kept-alive one after `keepAliveTimeoutMs` (default 5 s) without a new request.
 *
 * The handler sees a `Request` whose URL is the absolute-form target when the client sent one
 * (`GET http://other.example/ HTTP/1.1`), else `http://<Host><target>`; its body streams with
 * backpressure, so a handler that stops reading stops the socket too. Answers are sent whole,
 * with their `content-length` (the dashboard's are small), except `text/event-stream` ones (a
 * run's events), which are written as the handler produces them and as fast as the client takes
 * them (a client that stops reading stops the handler's stream: nothing piles up here).
 *
 * @module
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Options of {@linkcode serveWithTimeouts}. */
export interface TimedServerOptions {
  /** Where to listen (default `127.0.0.1`). */
  hostname?: string;
  /** The port (0: a free one). */
  port: number;
  /** The request head must arrive within this (default 10,000 ms). */
  headersTimeoutMs?: number;
  /** The whole request must arrive within this (default 30,000 ms). */
  requestTimeoutMs?: number;
  /** A socket without traffic is closed after this (default 15,000 ms). */
  idleTimeoutMs?: number;
  /** A kept-alive socket waits this long for its next request (default 5,000 ms). */
  keepAliveTimeoutMs?: number;
}

/** A running server. */
export interface TimedServer {
  /** The port it listens on. */
  port: number;
  /** Stops listening and closes every connection. */
  shutdown(): Promise<void>;
}

function requestOf(req: http.IncomingMessage, fallbackHost: string): Request {
  const target = req.url ?? '/';
  const absolute = /^[a-z][a-z0-9+.-]*:\/\//i.test(target);
  const url = absolute ? target : `http://${req.headers.host || fallbackHost}${target}`;
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  const method = req.method ?? 'GET';
  let body: ReadableStream<Uint8Array> | null = null;
  if (method !== 'GET' && method !== 'HEAD') {
    body = new ReadableStream<Uint8Array>({
      start(controller) {
        req.pause();
        req.on('data', (chunk: Uint8Array) => {
          controller.enqueue(new Uint8Array(chunk));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.on('end', () => controller.close());
        req.on('error', (e) => controller.error(e));
      },
      pull() {
        req.resume();
      },
      cancel() {
        // The handler read enough (a body over its limit): read no more; the answer goes out
        // and the connection closes after it.
        req.removeAllListeners('data');
        req.pause();
        (req as { cancelled?: boolean }).cancelled = true;
      },
    }, { highWaterMark: 4 });
  }
  return new Request(url, { method, headers, body });
}

/** Resolves when `res` can take more (`drain`), or when its connection is gone. */
function drained(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

async function send(res: http.ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) {
    headers[name] = name === 'set-cookie' ? response.headers.getSetCookie() : value;
  }
  // A run's events (text/event-stream) are sent as they come, until the handler ends the stream
  // or the client goes away.
  if (
    (response.headers.get('content-type') ?? '').startsWith('text/event-stream') && response.body
  ) {
    res.writeHead(response.status, headers);
    res.flushHeaders();
    const reader = response.body.getReader();
    res.on('close', () => reader.cancel().catch(() => {}));
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done || res.destroyed) break;
        // A client that does not read: wait for its socket to drain before reading the stream
        // on (the stream then stops reading the database), instead of buffering it here.
        if (!res.write(value)) await drained(res);
      }
    } catch { /* cancelled: the client went away */ }
    res.end();
    return;
  }
  // The dashboard's other answers are small and whole (JSON, the page): sent with their length.
  const body = new Uint8Array(await response.arrayBuffer());
  headers['content-length'] = String(body.byteLength);
  res.writeHead(response.status, headers);
  res.end(body);
}

/**
 * Serves `handler` with the timeouts above until {@linkcode TimedServer.shutdown}.
 *
 * @example
 * ```ts
 * import { serveWithTimeouts } from './_http_server.ts';
 * const server = await serveWithTimeouts(() => new Response('ok'), { port: 0 });
 * console.log((await fetch(`http://127.0.0.1:${server.port}/`)).status);
 * await server.shutdown();
 * ```
 */
export async function serveWithTimeouts(
  handler: (request: Request) => Response | Promise<Response>,
  options: TimedServerOptions,
): Promise<TimedServer> {
  const hostname = options.hostname ?? '127.0.0.1';
  const fallbackHost = hostname.includes(':') ? `[${hostname}]` : hostname;
  // Timeouts are checked every second (node's default: every 30 s).
  // Sockets whose request the handler is still answering: the idle timeout spares them (a
  // slow answer, e.g. a database that is slow to refuse, still gets to the client).
  const answering = new WeakSet<object>();
  const server = http.createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    const socket = req.socket;
    answering.add(socket);
    res.once('close', () => answering.delete(socket));
    let request: Request;
    try {
      request = requestOf(req, fallbackHost);
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end('bad request: the target or the Host header is not a URL\n');
      return;
    }
    Promise.resolve()
      .then(() => handler(request))
      .then((response) => {
        if ((req as { cancelled?: boolean }).cancelled) res.setHeader('connection', 'close');
        return send(res, response);
      })
      .then(() => {
        if ((req as { cancelled?: boolean }).cancelled) res.socket?.end();
      })
      .catch((e) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
          res.end(`internal error: ${(e as Error)?.message ?? e}\n`);
        } else {
          res.destroy();
        }
      });
  });
  server.headersTimeout = options.headersTimeoutMs ?? 10_000;
  server.requestTimeout = options.requestTimeoutMs ?? 30_000;
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 5_000;
  server.setTimeout(options.idleTimeoutMs ?? 15_000, (socket) => {
    if (!answering.has(socket)) socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, hostname, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    shutdown: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
