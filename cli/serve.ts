/**
 * `deno task serve [--watch] [--port N] [--project DIR] [--env-file FILE]` (`npx switchyard
 * serve` from the npm package; without `--project`, the project the user is in,
 * `cli/_invocation.ts`): every Edge Function of the project as a real HTTP endpoint at `/functions/v1/<name>` — the paths the Supabase gateway
 * uses — on one port, without Docker.
 *
 * Each function runs in its own `deno run` subprocess with its own import map (the
 * `import_map` of its `[functions.<name>]` section in `supabase/config.toml`, else its
 * directory's `deno.json`), listening on a free loopback port that it receives as `PORT`
 * through the platform adapter's environment (and as `DENO_SERVE_ADDRESS`, so that a function of
 * one's own that calls `Deno.serve(handler)` with no port listens there too). The gateway forwards `/functions/v1/<name>/rest`
 * to the function as `/<name>/rest`, as Supabase does, so
 * `createClient(url, key).functions.invoke('<name>')` reaches it. A function whose process
 * exited is started again by the next request to it.
 *
 * Environment of every function: this process's environment, then `supabase/functions/.env`
 * (or `--env-file`), then the `env` option; `PORT` and `HOSTNAME` are set per function, and
 * `SUPABASE_URL` is the gateway's URL unless the env file or option sets it;
 * `SWITCHYARD_DEVELOPMENT=true` (a changed flow shape recompiles,
 * docs/design/worker.md#compiling-at-deploy-and-in-local-development)
 * unless this process's environment, the env file or the option sets it. The command's port is
 * `--port`, else `PORT`, else 54321 (Supabase's local API port) or the one the project's last serve
 * used (`cli/_serve_port.ts`): the same across restarts.
 *
 * `--watch` reloads the functions when a file under `supabase/functions/` changes (a registry
 * edit included), so a queue function's worker never meets work of a registry newer than its
 * own; the pauses of the served functions are printed with their reason and what to run
 * (`cli/_serve_pauses.ts`).
 *
 * The gateway also serves the dashboard (`lib/ops/dashboard.ts`) at `/dashboard/`, on the
 * database and with the bearer secrets of that same environment: the page is read-only
 * without the bearer, and its actions take the queue functions' bearer.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join, relative, resolve } from 'node:path';
import { readFunctionConfigs } from './_functions_config.ts';
import { canConnect, exists, freePort } from './_util.ts';
import { reportPauses } from './_serve_pauses.ts';
import { chooseServePort, DEFAULT_SERVE_PORT } from './_serve_port.ts';
import { commandName, findProject, userCommand, userDirectory } from './_invocation.ts';
import { DEVELOPMENT_ENV } from '../lib/worker/development.ts';
import { denoExecutable } from '../lib/sql/deno_executable.ts';
import { createDashboard, type Dashboard } from '../lib/ops.ts';
import { openSql, resolveConnectionString, type Sql } from '../lib/sql/connection.ts';

/** The gateway's port was taken between its choice and the gateway's start. */
class GatewayPortInUse extends Error {
  constructor(readonly port: number) {
    super(
      `port ${port} is in use (another serve, or \`supabase start\`?): stop what listens there, ` +
        'or pass --port with a free one',
    );
  }
}

/**
 * One function found in a project.
 *
 * @example
 * ```ts
 * import { discoverFunctions } from './serve.ts';
 *
 * for (const fn of await discoverFunctions('.')) console.log(fn.name, fn.entrypoint);
 * ```
 */
export interface LocalFunction {
  name: string;
  /** Absolute path of the entry module. */
  entrypoint: string;
  /** Absolute path of its deno.json / import map, or `null` to use the project's own. */
  config: string | null;
}

/**
 * Options of {@linkcode serveFunctions}.
 *
 * @example
 * ```ts
 * import type { ServeOptions } from './serve.ts';
 *
 * const options: ServeOptions = { projectDir: '.', env: { DATABASE_URL: 'postgres://…' } };
 * ```
 */
export interface ServeOptions {
  /** The project root (holds `supabase/`). */
  projectDir: string;
  /** Gateway port; default a free one. */
  port?: number;
  /** Extra environment for every function (wins over the process environment). */
  env?: Record<string, string>;
  /** Serve only these functions (default: all). */
  only?: readonly string[];
  /** Receives the gateway's and the functions' output lines (default: stderr). */
  log?: (line: string) => void;
  /** How long a function may take to listen (default 60 s). */
  readyTimeoutMs?: number;
  /** Serve the dashboard at `/dashboard/` (default true; it needs a database URL). */
  dashboard?: boolean;
  /**
   * Reload the functions when a file under `supabase/functions/` changes (`--watch`): each is
   * restarted with the current files, `.env` and functions (new directories are served), and a
   * queue function whose worker was started through the gateway is started again, so its worker
   * runs the current registry (compiled at its start, recompiled in local development). Default
   * false.
   */
  watch?: boolean;
  /**
   * Print the pauses of the served functions, with their reasons and what to run
   * (`cli/_serve_pauses.ts`; default true; it needs a database URL).
   */
  reportPauses?: boolean;
}

/**
 * The running gateway.
 *
 * @example
 * ```ts
 * import { serveFunctions } from './serve.ts';
 *
 * const served = await serveFunctions({ projectDir: '.' });
 * console.log(`${served.url}/functions/v1/${served.functions[0]}`);
 * await served.close();
 * ```
 */
export interface ServedFunctions {
  /** Base URL for `createClient(url, key)`, e.g. `http://127.0.0.1:54321`. */
  url: string;
  /** The served function names. */
  functions: string[];
  /** The dashboard's URL (`<url>/dashboard/`), or null when it is not served. */
  dashboardUrl: string | null;
  /** Stops and starts functions again (all by default), picking up changed files: a local redeploy. */
  restart(names?: readonly string[]): Promise<void>;
  /** Stops the gateway and every function (SIGTERM: workers stop and drain; SIGKILL after 15 s). */
  close(): Promise<void>;
}

/**
 * The project's functions: every `[functions.<name>]` section of `supabase/config.toml` and
 * every directory of `supabase/functions` with an `index.ts` (names starting with `_` or `.`
 * are shared code, not functions).
 *
 * @example
 * ```ts
 * import { discoverFunctions } from './serve.ts';
 *
 * console.log((await discoverFunctions('.')).map((f) => f.name));
 * ```
 */
export async function discoverFunctions(projectDir: string): Promise<LocalFunction[]> {
  const supabaseDir = resolve(projectDir, 'supabase');
  const functionsDir = join(supabaseDir, 'functions');
  let toml = '';
  try {
    toml = await Deno.readTextFile(join(supabaseDir, 'config.toml'));
  } catch { /* no config: directories only */ }
  const configs = new Map(readFunctionConfigs(toml).map((c) => [c.name, c]));
  const names = new Set(configs.keys());
  try {
    for await (const entry of Deno.readDir(functionsDir)) {
      if (!entry.isDirectory || /^[_.]/.test(entry.name)) continue;
      if (await exists(join(functionsDir, entry.name, 'index.ts'))) names.add(entry.name);
    }
  } catch { /* no functions directory */ }
  const out: LocalFunction[] = [];
  for (const name of [...names].sort()) {
    const c = configs.get(name);
    if (c?.enabled === false) continue;
    const entrypoint = c?.entrypoint
      ? resolve(supabaseDir, c.entrypoint)
      : join(functionsDir, name, 'index.ts');
    let config = c?.importMap ? resolve(supabaseDir, c.importMap) : null;
    if (!config && await exists(join(functionsDir, name, 'deno.json'))) {
      config = join(functionsDir, name, 'deno.json');
    }
    out.push({ name, entrypoint, config });
  }
  return out;
}

/**
 * Reads `KEY=value` lines (optional quotes, `#` comments, optional `export `); a missing file
 * gives `{}`. See {@linkcode parseEnvText} for the rules.
 *
 * @example
 * ```ts
 * import { readEnvFile } from './serve.ts';
 *
 * const env = await readEnvFile('supabase/functions/.env');
 * console.log(Object.keys(env));
 * ```
 */
export async function readEnvFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    return {};
  }
  return parseEnvText(text, path);
}

/**
 * Parses a `.env` file's text: `KEY=value` lines, blank lines and `#` comment lines skipped, an
 * optional `export ` before the key, spaces around `=` ignored; an unquoted value ends at a `#`
 * that follows a space (so `ab#cd` stays whole: a secret may hold `#`), a quoted one (`"…"` or
 * `'…'`) at its closing quote, on the same line or a later one (multi-line values), and may be
 * followed by a comment; in double quotes `\n` and `\r` are a newline and a carriage return. A
 * line without a valid key is skipped; the last of repeated keys wins. It is not npm's `dotenv`
 * (nor Deno's `--env-file`) because both end an unquoted value at any `#` (tests/unit/cli/env_file_test.ts
 * shows where they differ). An unclosed quote is refused, naming the file, the
 * line and the key (never the value).
 *
 * @example
 * ```ts
 * import { parseEnvText } from './serve.ts';
 *
 * const env = parseEnvText('export A="x\\ny" # two lines\nB=ab#cd', '.env');
 * console.log(env.A.split('\n').length, env.B); // 2 ab#cd
 * ```
 */
export function parseEnvText(text: string, path: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, key, raw] = m;
    const quote = raw[0];
    if (quote !== '"' && quote !== "'") {
      out[key] = raw.replace(/\s+#.*$/, '');
      continue;
    }
    const first = i + 1;
    let rest = raw.slice(1);
    let end = rest.indexOf(quote);
    while (end < 0 && i + 1 < lines.length) {
      rest += `\n${lines[++i]}`;
      end = rest.indexOf(quote);
    }
    if (end < 0) {
      throw new Error(
        `${path}, line ${first}: the value of ${key} opens a ${quote} quote that never closes ` +
          `(a quoted value ends at the same quote, on that line or a later one)`,
      );
    }
    const value = rest.slice(0, end);
    out[key] = quote === '"' ? value.replaceAll('\\n', '\n').replaceAll('\\r', '\r') : value;
  }
  return out;
}

/** A function that did not start listening: `summary` without its output, `message` with it. */
class BootError extends Error {
  constructor(readonly summary: string, tail: readonly string[]) {
    super(`${summary}:\n${tail.join('\n')}`);
    this.name = 'BootError';
  }
}

interface Running {
  fn: LocalFunction;
  port: number;
  child: Deno.ChildProcess;
  exited: boolean;
  output: Promise<void>;
}

async function pipeLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let rest = '';
  try {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      let i: number;
      while ((i = rest.indexOf('\n')) >= 0) {
        onLine(rest.slice(0, i));
        rest = rest.slice(i + 1);
      }
    }
  } catch { /* the process went away */ }
  if (rest) onLine(rest);
}

/**
 * Serves the project's functions behind one local gateway. See the module docs.
 *
 * @example
 * ```ts
 * import { createClient } from '@supabase/supabase-js';
 * import { serveFunctions } from './serve.ts';
 *
 * const served = await serveFunctions({
 *   projectDir: '.',
 *   env: { DATABASE_URL: 'postgres://…', SWITCHYARD_WORKER_SECRET: 'local-secret' },
 * });
 * const supabase = createClient(served.url, 'local-secret');
 * const { data } = await supabase.functions.invoke('classify-threads-worker', {
 *   headers: { Authorization: 'Bearer local-secret' },
 * });
 * console.log(data); // { workerId, queueName, functionName, state: 'started' }
 * await served.close();
 * ```
 */
export async function serveFunctions(options: ServeOptions): Promise<ServedFunctions> {
  const projectDir = resolve(options.projectDir);
  const log = options.log ?? ((line: string) => console.error(line));
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  let functions = await discoverFunctions(projectDir);
  if (options.only) {
    const unknown = options.only.filter((n) => !functions.some((f) => f.name === n));
    if (unknown.length > 0) {
      throw new Error(
        `unknown function(s) ${unknown.map((n) => `"${n}"`).join(', ')}: the project has ${
          functions.map((f) => `"${f.name}"`).join(', ') || 'none'
        }`,
      );
    }
    functions = functions.filter((f) => options.only!.includes(f.name));
  }
  let byName = new Map(functions.map((f) => [f.name, f]));
  const envPath = join(projectDir, 'supabase', 'functions', '.env');
  let fileEnv = await readEnvFile(envPath);
  const gatewayPort = options.port ?? freePort();
  // The port is held from here until the gateway listens on it: the functions take seconds to
  // start, and another serve (or a test beside this one) must not take it meanwhile.
  let reservation: Deno.Listener | null;
  try {
    reservation = Deno.listen({ hostname: '127.0.0.1', port: gatewayPort });
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse) throw new GatewayPortInUse(gatewayPort);
    throw e;
  }
  const url = `http://127.0.0.1:${gatewayPort}`;
  const running = new Map<string, Running>();
  const starting = new Map<string, Promise<Running>>();

  // The dashboard reads the database the functions use, with the functions' bearer secrets.
  const effectiveEnv: Record<string, string | undefined> = {
    ...Deno.env.toObject(),
    ...fileEnv,
    ...options.env,
  };
  const databaseUrl = effectiveEnv.SUPABASE_DB_URL || effectiveEnv.DATABASE_URL;
  const databaseOrigin = effectiveEnv.SUPABASE_DB_URL ? 'SUPABASE_DB_URL' : 'DATABASE_URL';
  let dashboardClient: Sql | undefined;
  let dashboard: Dashboard | undefined;
  let dashboardProblem = 'the dashboard needs a database: set DATABASE_URL or SUPABASE_DB_URL';
  if (options.dashboard !== false && databaseUrl) {
    dashboardClient = openSql(databaseUrl, { max: 2, origin: databaseOrigin });
    try {
      dashboard = createDashboard({
        source: dashboardClient,
        env: (name) => effectiveEnv[name] || undefined,
        basePath: '/dashboard',
      });
    } catch (e) {
      dashboardProblem = (e as Error).message;
    }
  }

  const deno = await denoExecutable('the Edge Functions');
  const launch = async (fn: LocalFunction): Promise<Running> => {
    const port = freePort();
    const args = ['run', '-A', '--no-lock'];
    if (fn.config) {
      args.push(/(^|\/)deno\.jsonc?$/.test(fn.config) ? '--config' : '--import-map', fn.config);
    }
    args.push(fn.entrypoint);
    const child = new Deno.Command(deno, {
      args,
      cwd: projectDir,
      env: {
        SUPABASE_URL: url,
        // Local development: a changed shape recompiles
        // (docs/design/worker.md#compiling-at-deploy-and-in-local-development), unless the
        // environment says otherwise.
        [DEVELOPMENT_ENV]: Deno.env.get(DEVELOPMENT_ENV) ?? 'true',
        ...fileEnv,
        ...options.env,
        PORT: String(port),
        HOSTNAME: '127.0.0.1',
        // A function of one's own calls `Deno.serve(handler)` as on Supabase, with no port:
        // Deno listens where this says (Deno 2.2+), as the queue functions do with PORT.
        DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}`,
      },
      stdin: 'null',
      stdout: 'piped',
      stderr: 'piped',
    }).spawn();
    const tail: string[] = [];
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      log(`[${fn.name}] ${line}`);
    };
    const r: Running = {
      fn,
      port,
      child,
      exited: false,
      output: Promise.all([pipeLines(child.stdout, onLine), pipeLines(child.stderr, onLine)])
        .then(() => {}),
    };
    child.status.then(() => (r.exited = true));
    const deadline = Date.now() + readyTimeoutMs;
    while (!(await canConnect(port))) {
      if (r.exited || Date.now() > deadline) {
        if (!r.exited) child.kill('SIGKILL');
        const status = await child.status;
        await r.output;
        throw new BootError(
          `function "${fn.name}" did not start listening on port ${port} (exit code ${
            r.exited ? status.code : 'none: killed after ' + readyTimeoutMs + ' ms'
          })`,
          tail,
        );
      }
      await new Promise((res) => setTimeout(res, 50));
    }
    running.set(fn.name, r);
    return r;
  };

  const ensure = (fn: LocalFunction): Promise<Running> => {
    const r = running.get(fn.name);
    if (r && !r.exited) return Promise.resolve(r);
    let p = starting.get(fn.name);
    if (!p) {
      p = launch(fn).finally(() => starting.delete(fn.name));
      starting.set(fn.name, p);
    }
    return p;
  };

  const stopOne = async (name: string) => {
    const r = running.get(name);
    if (!r) return;
    running.delete(name);
    if (!r.exited) {
      try {
        r.child.kill('SIGTERM');
      } catch { /* gone */ }
      const killer = setTimeout(() => {
        try {
          r.child.kill('SIGKILL');
        } catch { /* gone */ }
      }, 15_000);
      await r.child.status;
      clearTimeout(killer);
    }
    await r.output;
  };

  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json' },
    });

  // The request that started each queue function's worker (its bearer), to start it again
  // after a reload: a queue function answers 200 with its worker's id and state.
  const starts = new Map<string, Record<string, string>>();
  const rememberStart = (name: string, headers: Headers, response: Response) => {
    response.json().then((body) => {
      if (typeof body?.workerId !== 'string' || typeof body?.state !== 'string') return;
      const kept: Record<string, string> = {};
      for (const key of ['authorization', 'apikey']) {
        const value = headers.get(key);
        if (value !== null) kept[key] = value;
      }
      starts.set(name, kept);
    }).catch(() => {});
  };

  const handler = async (request: Request): Promise<Response> => {
    const u = new URL(request.url);
    if (
      options.dashboard !== false &&
      (u.pathname === '/dashboard' || u.pathname.startsWith('/dashboard/'))
    ) {
      return dashboard
        ? await dashboard.fetch(request)
        : json(503, { code: 'DASHBOARD_UNAVAILABLE', message: dashboardProblem });
    }
    const m = /^\/functions\/v1\/([^/]+)(\/.*)?$/.exec(u.pathname);
    if (!m) {
      return json(404, {
        code: 'NOT_FOUND',
        message: `use /functions/v1/<name> or /dashboard/; served: ${
          [...byName.keys()].join(', ') || 'none'
        }`,
      });
    }
    let name: string;
    try {
      name = decodeURIComponent(m[1]);
    } catch {
      return json(400, {
        code: 'BAD_REQUEST',
        message: 'the function name in the path has a malformed percent-encoding',
      });
    }
    const fn = byName.get(name);
    if (!fn) return json(404, { code: 'NOT_FOUND', message: 'Requested function was not found' });
    let r: Running;
    try {
      r = await ensure(fn);
    } catch (e) {
      // The function's output stays in the gateway's log (it was logged line by line).
      const summary = e instanceof BootError ? e.summary : `function "${fn.name}" did not start`;
      log(`[serve] ${summary}`);
      return json(502, { code: 'BOOT_ERROR', message: `${summary}; its output is in the log` });
    }
    const headers = new Headers(request.headers);
    headers.delete('host');
    headers.delete('connection');
    const body = request.method === 'GET' || request.method === 'HEAD'
      ? undefined
      : await request.arrayBuffer();
    try {
      const response = await fetch(
        `http://127.0.0.1:${r.port}/${fn.name}${m[2] ?? ''}${u.search}`,
        { method: request.method, headers, body, redirect: 'manual' },
      );
      if (
        response.status === 200 && headers.has('authorization') &&
        response.headers.get('content-type')?.includes('application/json')
      ) {
        rememberStart(fn.name, headers, response.clone());
      }
      return new Response(response.body, { status: response.status, headers: response.headers });
    } catch (e) {
      return json(502, {
        code: 'BAD_GATEWAY',
        message: `function "${fn.name}" did not answer: ${(e as Error).message}`,
      });
    }
  };

  const restart = async (names: readonly string[]) => {
    await Promise.all(names.map(async (name) => {
      await starting.get(name)?.catch(() => {});
      await stopOne(name);
    }));
    await Promise.all(names.map((name) => ensure(byName.get(name)!)));
  };

  /** `--watch`: everything again from the files, then the workers that ran start again. */
  const reload = async (changed: readonly string[]) => {
    fileEnv = await readEnvFile(envPath);
    let next = await discoverFunctions(projectDir);
    if (options.only) next = next.filter((f) => options.only!.includes(f.name));
    const gone = functions.filter((f) => !next.some((n) => n.name === f.name));
    functions = next;
    byName = new Map(functions.map((f) => [f.name, f]));
    const shown = changed.slice(0, 3).join(', ') + (changed.length > 3 ? ', …' : '');
    log(
      `[serve] ${shown} changed: reloading ${functions.map((f) => f.name).join(', ') || 'nothing'}`,
    );
    await Promise.all(gone.map(async (f) => {
      await starting.get(f.name)?.catch(() => {});
      await stopOne(f.name);
      starts.delete(f.name);
    }));
    await Promise.all(functions.map(async (fn) => {
      try {
        await restart([fn.name]);
      } catch (e) {
        // Its output is in the log; the next change or request tries again.
        log(`[serve] ${e instanceof BootError ? e.summary : (e as Error).message}`);
        return;
      }
      const bearer = starts.get(fn.name);
      if (!bearer) return;
      const r = running.get(fn.name);
      if (!r) return;
      try {
        const answer = await fetch(`http://127.0.0.1:${r.port}/${fn.name}`, {
          method: 'POST',
          headers: bearer,
        });
        const text = await answer.text();
        if (answer.ok) {
          log(`[serve] ${fn.name}: its worker started again, with the current files`);
        } else {
          let why = text;
          try {
            const body = JSON.parse(text);
            why = `${body.error}: ${body.message ?? ''}${body.reason ? `; ${body.reason}` : ''}`;
          } catch { /* not JSON */ }
          log(`[serve] ${fn.name}: its worker did not start again (${answer.status} ${why})`);
        }
      } catch (e) {
        log(`[serve] ${fn.name}: its worker did not start again: ${(e as Error).message}`);
      }
    }));
  };

  try {
    await Promise.all(functions.map((fn) => ensure(fn)));
  } catch (e) {
    reservation.close();
    await Promise.all([...running.keys()].map(stopOne));
    await dashboardClient?.end({ timeout: 5 }).catch(() => {});
    throw e;
  }
  reservation.close();
  reservation = null;
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: gatewayPort, onListen: () => {} },
    handler,
  );
  log(`[serve] gateway ${url}/functions/v1/{${functions.map((f) => f.name).join(',')}}`);

  const stopWatching = options.watch ? watchFunctions(projectDir, reload, log) : null;
  let stateClient: Sql | undefined;
  let stopPauses: (() => Promise<void>) | undefined;
  if (options.reportPauses !== false && databaseUrl) {
    stateClient = openSql(databaseUrl, { max: 1, origin: databaseOrigin });
    stopPauses = reportPauses({
      source: stateClient,
      names: () => functions.map((f) => f.name),
      log,
      watching: options.watch === true,
    });
  }

  let closed: Promise<void> | undefined;
  return {
    url,
    get functions() {
      return functions.map((f) => f.name);
    },
    dashboardUrl: dashboard ? `${url}/dashboard/` : null,
    async restart(names = functions.map((f) => f.name)) {
      const unknown = names.filter((name) => !byName.has(name));
      if (unknown.length > 0) throw new Error(`unknown function(s): ${unknown.join(', ')}`);
      await restart(names);
    },
    close() {
      closed ??= (async () => {
        await stopWatching?.();
        await stopPauses?.();
        await stateClient?.end({ timeout: 5 }).catch(() => {});
        await dashboard?.close();
        await server.shutdown();
        await Promise.all([...starting.values()].map((p) => p.catch(() => {})));
        await Promise.all([...running.keys()].map(stopOne));
        await dashboardClient?.end({ timeout: 5 }).catch(() => {});
      })();
      return closed;
    },
  };
}

/** Files whose change reloads the functions: code, import maps and configuration, `.env`. */
const WATCHED = /(\.(ts|tsx|mts|js|jsx|mjs|json|jsonc)|(^|\/)\.env)$/;

/**
 * Watches `supabase/functions/` and calls `reload` with the changed files (relative to the
 * project), a moment after the last change of a burst (an editor's save, a compile), one
 * reload at a time; returns the function that stops watching.
 */
function watchFunctions(
  projectDir: string,
  reload: (changed: readonly string[]) => Promise<void>,
  log: (line: string) => void,
): () => Promise<void> {
  const dir = join(projectDir, 'supabase', 'functions');
  const watcher = Deno.watchFs(dir, { recursive: true });
  const pending = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const flush = () => {
    const changed = [...pending].sort();
    pending.clear();
    running = running.then(() => reload(changed)).catch((e) =>
      log(`[serve] reload failed: ${(e as Error).message}`)
    );
  };
  const loop = (async () => {
    for await (const event of watcher) {
      if (event.kind === 'access' || event.kind === 'other') continue;
      for (const path of event.paths) {
        const rel = relative(projectDir, path).replaceAll('\\', '/');
        if (!WATCHED.test(rel) || /(^|\/)node_modules\//.test(rel)) continue;
        pending.add(rel);
      }
      if (pending.size === 0) continue;
      clearTimeout(timer);
      timer = setTimeout(flush, 200);
    }
  })();
  return async () => {
    watcher.close();
    clearTimeout(timer);
    await loop.catch(() => {});
    await running;
  };
}

const USAGE = `usage: ${commandName('serve')} [--watch] [--port N] [--project DIR] [--env-file FILE]

  --watch          reload the functions when a file under supabase/functions/ changes (their
                   workers start again with the current registry)
  --port N         the gateway's port (or PORT); default ${DEFAULT_SERVE_PORT}, or the port the
                   project's last serve used when ${DEFAULT_SERVE_PORT} was taken
  --project DIR    the Supabase project; default: the project you are in (the nearest
                   directory upward with supabase/config.toml)
  --env-file FILE  more environment for the functions (after supabase/functions/.env)`;

/** The command line of this script: its exit code. */
export async function main(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        port: { type: 'string' },
        watch: { type: 'boolean', default: false },
        project: { type: 'string' },
        'env-file': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const portText = values.port ?? Deno.env.get('PORT');
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
      console.error(`error: port "${portText}" is invalid: use an integer from 1 to 65535`);
      return 2;
    }
  }
  let projectDir: string;
  try {
    projectDir = findProject(values.project);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
  // A relative --env-file is the user's, as --project is.
  const env = values['env-file']
    ? await readEnvFile(resolve(userDirectory(), values['env-file']))
    : {};
  const effective: Record<string, string | undefined> = {
    ...Deno.env.toObject(),
    ...await readEnvFile(join(projectDir, 'supabase', 'functions', '.env')),
    ...env,
  };
  if (
    !effective.SWITCHYARD_WORKER_SECRET && !effective.SUPABASE_SERVICE_ROLE_KEY &&
    !effective.SUPABASE_SECRET_KEYS &&
    effective.SWITCHYARD_AUTH !== 'disabled'
  ) {
    console.error(
      'warning: no SWITCHYARD_WORKER_SECRET, SUPABASE_SECRET_KEYS or SUPABASE_SERVICE_ROLE_KEY is ' +
        'set (environment, ' +
        'supabase/functions/.env or --env-file): queue functions will refuse every request; set ' +
        'one, or SWITCHYARD_AUTH=disabled for local runs',
    );
  }
  if (!resolveConnectionString(undefined, (name) => effective[name])) {
    console.error(
      'warning: no SWITCHYARD_DB_URL, SUPABASE_DB_URL or DATABASE_URL: workers cannot reach a ' +
        'database',
    );
  }
  let served: ServedFunctions | undefined;
  try {
    // A port found free may be taken before it is held (another serve starting beside this
    // one): then the choice is made again, unless the port was given.
    for (let attempt = 1; !served; attempt++) {
      const chosen = await chooseServePort(projectDir, port);
      if (chosen.note) console.error(`[serve] ${chosen.note}`);
      try {
        served = await serveFunctions({
          projectDir,
          port: chosen.port,
          env,
          watch: values.watch,
        });
      } catch (e) {
        if (!(e instanceof GatewayPortInUse) || port !== undefined || attempt >= 5) throw e;
      }
    }
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
  if (served.functions.length === 0) {
    console.error(
      `no functions to serve: scaffold one with \`${userCommand('scaffold-queue', ['<queue>'])}\``,
    );
    await served.close();
    return 1;
  }
  for (const name of served.functions) console.log(`${served.url}/functions/v1/${name}`);
  if (served.dashboardUrl) console.log(`dashboard: ${served.dashboardUrl}`);
  console.log(
    `\nstart a worker: curl -X POST -H "Authorization: Bearer $SWITCHYARD_WORKER_SECRET" ` +
      `${served.url}/functions/v1/${served.functions[0]}\n` +
      (values.watch
        ? 'reloading the functions when supabase/functions/ changes; stop with Ctrl-C'
        : 'stop with Ctrl-C (with --watch, serve reloads the functions when supabase/functions/ ' +
          'changes)'),
  );
  await new Promise<void>((done) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) Deno.addSignalListener(signal, done);
  });
  console.error('[serve] stopping functions');
  await served.close();
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
