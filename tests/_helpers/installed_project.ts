/**
 * A user's project as the README makes it, for the tests of the local loop and of what the
 * README tells a user to write: `supabase init` (the real CLI), `deno task install --example`
 * (the flow `greet` on the queue `greetings`, its queue function `greetings-worker`), its
 * migrations pushed with `deno task db:push` to a new, empty database; and `deno task serve` over
 * it as a process of its own.
 *
 * @module
 */
import postgres from 'postgres';
import { KIT_ROOT } from '../../cli/_project.ts';
import { adminUrl, urlFor } from './db.ts';
import { Spawned } from './process.ts';
import { ok, run, supabaseInit } from './project.ts';
import { waitFor } from './wait.ts';

/** An installed project and its database. */
export interface InstalledProject {
  /** The project root. */
  dir: string;
  /** Its database, every migration of the project applied. */
  url: string;
  sql: postgres.Sql;
}

/** Runs `fn` with a new installed project (see the module doc); removes both afterwards. */
export async function withInstalledProject(
  prefix: string,
  fn: (project: InstalledProject) => Promise<void>,
): Promise<void> {
  const dir = await supabaseInit(prefix);
  const database = `sy_${prefix.replace(/\W/g, '_')}${
    crypto.randomUUID().replaceAll('-', '').slice(0, 10)
  }`.slice(0, 60);
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${database}"`);
  const url = urlFor(database);
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  try {
    ok(
      await run(['task', '-q', 'install', '--project', dir, '--example'], KIT_ROOT),
      'deno task install --example',
    );
    ok(
      await run(['task', '-q', 'db:push', '--project', dir], KIT_ROOT, { DATABASE_URL: url }),
      'deno task db:push',
    );
    await fn({ dir, url, sql });
  } finally {
    await sql.end();
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
    await Deno.remove(dir, { recursive: true });
  }
}

/** `deno task serve` (cli/serve.ts) over a project, as its own process. */
export class ServeProcess {
  #process: Spawned;

  /**
   * Starts `cli/serve.ts --project <dir> ...args` with `env` (and nothing else set); with
   * `command` (a program and its arguments, e.g. `npx switchyard serve`), that in `dir` instead.
   */
  constructor(dir: string, args: string[], env: Record<string, string>, command?: string[]) {
    const [program, ...rest] = command ??
      [Deno.execPath(), 'run', '-A', 'cli/serve.ts', '--project', dir];
    this.#process = new Spawned(program, [...rest, ...args], {
      cwd: command ? dir : KIT_ROOT,
      env: { NO_COLOR: '1', ...env },
    });
  }

  /** Everything it printed so far, stdout and stderr interleaved by line. */
  get log(): string {
    return this.#process.lines.join('\n');
  }

  /** Waits for a printed line matching `pattern`, at or after line `from`; its match. */
  async line(pattern: RegExp, from = 0, timeoutMs = 90_000): Promise<RegExpMatchArray> {
    return await waitFor(`serve to print ${pattern}`, () => {
      for (const line of this.#process.lines.slice(from)) {
        const m = line.match(pattern);
        if (m) return m;
      }
      return null;
    }, { timeoutMs }).catch((e) => {
      throw new Error(`${(e as Error).message}\nserve printed:\n${this.log}`);
    });
  }

  /** How many lines it printed so far (a mark for {@linkcode line}). */
  get mark(): number {
    return this.#process.lines.length;
  }

  /** The gateway's base URL, once serve printed it. */
  async url(from = 0): Promise<string> {
    const [, base] = await this.line(/^(http:\/\/127\.0\.0\.1:\d+)\/functions\/v1\//, from);
    return base;
  }

  /** SIGTERM, as Ctrl-C: serve stops its functions and exits. */
  async stop(): Promise<void> {
    this.#process.signal('SIGTERM');
    await this.#process.wait();
  }
}

/** POSTs to a queue function until its worker answers 200 (or a refusal that is final). */
export async function startQueueWorker(
  url: string,
  bearer: string,
): Promise<{ state: string; status: number; body: string }> {
  return await waitFor(`the worker of ${url} to answer`, async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}` },
    }).catch(() => null);
    if (!res) return null;
    const body = await res.text();
    if (res.ok) return { state: JSON.parse(body).state, status: res.status, body };
    if (res.status === 409 || res.status === 500) return { state: '', status: res.status, body };
    return null;
  }, { timeoutMs: 90_000 });
}
