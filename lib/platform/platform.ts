/**
 * The platform adapter: the only place queue functions touch runtime globals.
 *
 * A queue function needs four things from its host: an HTTP server (`Deno.serve`), a way to
 * stay alive while the worker runs (`EdgeRuntime.waitUntil`), a shutdown notice
 * (`beforeunload`) and environment variables. {@linkcode defaultPlatform} picks them from the
 * Supabase edge runtime when it is there and from plain `deno run` otherwise;
 * {@linkcode createMemoryPlatform} is an in-memory stand-in for tests. `EdgeWorker.start()`
 * takes any of them through its `platform` option, so the same function file runs on Supabase,
 * under `deno task serve` and inside a test.
 *
 * @module
 */

/**
 * An HTTP handler, as `Deno.serve` takes it.
 *
 * @example
 * ```ts
 * import type { RequestHandler } from './platform.ts';
 *
 * const handler: RequestHandler = () => new Response('ok');
 * ```
 */
export type RequestHandler = (request: Request) => Response | Promise<Response>;

/**
 * What {@linkcode Platform.serve} returns.
 *
 * @example
 * ```ts
 * import { createMemoryPlatform } from './platform.ts';
 *
 * const server = createMemoryPlatform().serve(() => new Response('ok'));
 * await server.shutdown();
 * ```
 */
export interface PlatformServer {
  /** Stops accepting requests; resolves when the server has closed. */
  shutdown(): Promise<void>;
}

/**
 * Runtime globals a queue function uses, injected so that tests and plain `deno run` can
 * supply their own.
 *
 * @example
 * ```ts
 * import { defaultPlatform, type Platform } from './platform.ts';
 *
 * const platform: Platform = defaultPlatform();
 * console.log(platform.env('SUPABASE_URL') ?? '(not on Supabase)');
 * ```
 */
export interface Platform {
  /** Registers the function's HTTP handler. */
  serve(handler: RequestHandler): PlatformServer;
  /** Keeps the function instance alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
  /** Runs `callback` once before the instance shuts down. */
  onBeforeUnload(callback: () => void | Promise<void>): void;
  /** Reads an environment variable (secrets on Supabase), or `undefined`. */
  env(name: string): string | undefined;
}

// The hosted runtime's signal lives with the worker, which needs it too (local development,
// docs/design/worker.md#compiling-at-deploy-and-in-local-development) and may not import this
// layer.
export { HOSTED_RUNTIME_ENV_VARS, hostedRuntimeSignal } from '../worker/development.ts';

/** The part of Supabase's `EdgeRuntime` global the kit uses. */
interface EdgeRuntimeGlobal {
  waitUntil(promise: Promise<unknown>): void;
}

function edgeRuntime(): EdgeRuntimeGlobal | undefined {
  const candidate = (globalThis as { EdgeRuntime?: Partial<EdgeRuntimeGlobal> }).EdgeRuntime;
  return typeof candidate?.waitUntil === 'function' ? candidate as EdgeRuntimeGlobal : undefined;
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no --allow-env: treat as unset
  }
}

/** Milliseconds `deno run` gives unload callbacks after SIGINT/SIGTERM before it exits anyway. */
const SIGNAL_GRACE_MS = 30_000;

/**
 * The platform of the current process.
 *
 * - On the Supabase edge runtime (an `EdgeRuntime` global exists): `Deno.serve(handler)` on the
 *   port the runtime assigns, `EdgeRuntime.waitUntil`, the runtime's `beforeunload` event and
 *   the function's secrets.
 * - Under plain `deno run`: `Deno.serve` on `HOSTNAME` (default `127.0.0.1`) and `PORT`
 *   (default `8000`), `waitUntil` keeps a reference to the promise (the server keeps the
 *   process alive), and unload callbacks run on the `beforeunload` event and on
 *   SIGINT/SIGTERM, after which the process exits with code 0.
 *
 * @example
 * ```ts
 * import { defaultPlatform } from './platform.ts';
 *
 * const platform = defaultPlatform();
 * platform.onBeforeUnload(() => console.log('shutting down'));
 * platform.serve(() => new Response('ok'));
 * ```
 */
export function defaultPlatform(): Platform {
  const runtime = edgeRuntime();
  if (runtime) {
    return {
      serve(handler) {
        const server = Deno.serve(handler);
        return { shutdown: () => server.shutdown() };
      },
      waitUntil: (promise) => runtime.waitUntil(promise),
      onBeforeUnload(callback) {
        globalThis.addEventListener('beforeunload', () => void callback());
      },
      env: readEnv,
    };
  }
  return plainDenoPlatform();
}

function plainDenoPlatform(): Platform {
  const pending = new Set<Promise<unknown>>();
  const callbacks: (() => void | Promise<void>)[] = [];
  let unloading: Promise<void> | undefined;
  const runCallbacks = () => {
    unloading ??= Promise.allSettled(callbacks.map((cb) => Promise.resolve().then(cb))).then(
      () => {},
    );
    return unloading;
  };
  let listening = false;
  const listen = () => {
    if (listening) return;
    listening = true;
    globalThis.addEventListener('beforeunload', () => void runCallbacks());
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      try {
        Deno.addSignalListener(signal, async () => {
          const grace = setTimeout(() => Deno.exit(0), SIGNAL_GRACE_MS);
          await runCallbacks();
          clearTimeout(grace);
          Deno.exit(0);
        });
      } catch { /* signal not supported on this OS */ }
    }
  };
  return {
    serve(handler) {
      const portText = readEnv('PORT') ?? '8000';
      const port = Number(portText);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new RangeError(`PORT "${portText}" is invalid: use an integer from 0 to 65535`);
      }
      const server = Deno.serve(
        { hostname: readEnv('HOSTNAME') ?? '127.0.0.1', port, onListen: () => {} },
        handler,
      );
      return { shutdown: () => server.shutdown() };
    },
    waitUntil(promise) {
      pending.add(promise);
      promise.then(() => pending.delete(promise), () => pending.delete(promise));
    },
    onBeforeUnload(callback) {
      callbacks.push(callback);
      listen();
    },
    env: readEnv,
  };
}

/**
 * An in-memory platform for tests: requests are delivered by calling `fetch`.
 *
 * @example
 * ```ts
 * import { createMemoryPlatform, type MemoryPlatform } from './platform.ts';
 *
 * const platform: MemoryPlatform = createMemoryPlatform({ SWITCHYARD_AUTH: 'disabled' });
 * platform.onBeforeUnload(() => console.log('unloading'));
 * await platform.unload();
 * ```
 */
export interface MemoryPlatform extends Platform {
  /** Delivers a request to the served handler (throws when nothing was served yet). */
  fetch(input: Request | string, init?: RequestInit): Promise<Response>;
  /** Runs every unload callback, as the runtime does before shutting an instance down. */
  unload(): Promise<void>;
  /** Promises handed to `waitUntil`, in order. */
  readonly waited: readonly Promise<unknown>[];
  /** The environment; tests may change it between requests. */
  readonly vars: Record<string, string | undefined>;
}

/**
 * A platform that serves nothing on the network: `fetch()` calls the handler directly, `env`
 * reads the given variables only (never the process environment), and `unload()` plays the
 * runtime's `beforeunload`.
 *
 * @example
 * ```ts
 * import { createMemoryPlatform } from './platform.ts';
 *
 * const platform = createMemoryPlatform({ SWITCHYARD_WORKER_SECRET: 's3cret' });
 * platform.serve(() => new Response('hello'));
 * const response = await platform.fetch('http://local/fn');
 * console.assert((await response.text()) === 'hello');
 * ```
 */
export function createMemoryPlatform(
  vars: Record<string, string | undefined> = {},
): MemoryPlatform {
  let handler: RequestHandler | undefined;
  const callbacks: (() => void | Promise<void>)[] = [];
  const waited: Promise<unknown>[] = [];
  return {
    vars,
    waited,
    serve(h) {
      if (handler) throw new Error('createMemoryPlatform: serve() was already called');
      handler = h;
      return {
        shutdown: () => {
          handler = undefined;
          return Promise.resolve();
        },
      };
    },
    waitUntil(promise) {
      waited.push(promise);
    },
    onBeforeUnload(callback) {
      callbacks.push(callback);
    },
    env: (name) => vars[name],
    async fetch(input, init) {
      if (!handler) throw new Error('createMemoryPlatform: nothing is served');
      return await handler(input instanceof Request ? input : new Request(input, init));
    },
    async unload() {
      await Promise.allSettled(callbacks.map((cb) => Promise.resolve().then(cb)));
    },
  };
}
