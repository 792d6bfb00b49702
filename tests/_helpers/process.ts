/**
 * Subprocesses for tests: {@linkcode runCommand} runs one to its end (code, stdout, stderr) within
 * a time limit, {@linkcode deno} is that for the Deno running the test (`Deno.execPath()`), and
 * {@linkcode Spawned} holds a long-lived one (a worker, a server) with its output captured and a
 * stop that takes its whole process tree (`deno task` starts a second Deno, `npx` a node).
 *
 * @module
 */
/** How a finished command ended. */
export interface Output {
  code: number;
  /** The signal that ended it, if one did. */
  signal: Deno.Signal | null;
  stdout: string;
  stderr: string;
}

/** Where a command runs and with what. */
export interface CommandOptions {
  /** Its working directory (the test's otherwise). */
  cwd?: string;
  /** Variables added to the inherited environment, or the whole environment with `clearEnv`. */
  env?: Record<string, string>;
  /** Starts from an empty environment: only `env`. */
  clearEnv?: boolean;
}

/** Options of {@linkcode runCommand}. */
export interface RunOptions extends CommandOptions {
  /** Text written to its standard input (none otherwise: stdin is closed). */
  stdin?: string;
  /**
   * Its time limit: past it the process tree is killed and the run fails (default 10 minutes:
   * a bound for a hung command, never a tight one; a nested `deno task test` took 3 minutes at
   * load average 24).
   */
  timeoutMs?: number;
}

/** The default time limit of {@linkcode runCommand}. */
export const DEFAULT_TIMEOUT_MS = 600_000;

/** The inherited environment without `names` (to be passed with `clearEnv: true`). */
export function envWithout(...names: string[]): Record<string, string> {
  const env = Deno.env.toObject();
  for (const name of names) delete env[name];
  return env;
}

/** The command line, as a test names it in a failure. */
function describe(program: string, args: readonly string[]): string {
  const name = program === Deno.execPath() ? 'deno' : program;
  return [name, ...args].join(' ');
}

/**
 * Runs `program args…` to its end; its exit code and output. A run past `timeoutMs` has its
 * process tree killed and throws, naming the command and showing what it printed.
 */
export async function runCommand(
  program: string,
  args: readonly string[],
  opts: RunOptions = {},
): Promise<Output> {
  const child = new Deno.Command(program, {
    args: [...args],
    cwd: opts.cwd,
    env: opts.env,
    clearEnv: opts.clearEnv,
    stdin: opts.stdin === undefined ? 'null' : 'piped',
    stdout: 'piped',
    stderr: 'piped',
  }).spawn();
  if (opts.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(opts.stdin)).catch(() => {});
    await writer.close().catch(() => {});
  }
  const stdout = new Response(child.stdout).text();
  const stderr = new Response(child.stderr).text();
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const ended = await Promise.race([child.status, timedOut]);
    if (ended === 'timeout') {
      await killTree(child, 'SIGKILL');
      await child.status;
      const [out, err] = await Promise.all([stdout, stderr]);
      throw new Error(
        `${describe(program, args)} did not end within ${timeoutMs} ms: killed it and its ` +
          `children; it printed:\n${out}\n${err}`,
      );
    }
    const [out, err] = await Promise.all([stdout, stderr]);
    return { code: ended.code, signal: ended.signal, stdout: out, stderr: err };
  } finally {
    clearTimeout(timer);
  }
}

/** {@linkcode runCommand} with the Deno that runs the test: `deno args…`. */
export function deno(args: readonly string[], opts: RunOptions = {}): Promise<Output> {
  return runCommand(Deno.execPath(), args, opts);
}

/** Options of {@linkcode Spawned}. */
export interface SpawnOptions extends CommandOptions {
  /** Its standard output: captured (default), discarded, or the test's own. */
  stdout?: 'capture' | 'null' | 'inherit';
  /** Its standard error, likewise. */
  stderr?: 'capture' | 'null' | 'inherit';
  /**
   * Its standard input: closed from the start (default), or held open until
   * {@linkcode Spawned.closeInput} (a process that runs until its input ends).
   */
  stdin?: 'null' | 'open';
}

/**
 * A long-lived process: a worker, a server, a command a test interrupts. Its output is captured
 * as it comes (so it never blocks on a full pipe), {@linkcode Spawned.waitFor} waits for a
 * printed pattern, and {@linkcode Spawned.stop} ends it and every process it started.
 */
export class Spawned {
  /** The process. */
  readonly child: Deno.ChildProcess;
  /** The command line, for failure messages. */
  readonly command: string;
  #stdout = '';
  #stderr = '';
  #lines: string[] = [];
  #exited = false;
  #reading: Promise<unknown>;

  /** Starts `program args…`. */
  constructor(program: string, args: readonly string[], opts: SpawnOptions = {}) {
    const mode = (m: SpawnOptions['stdout']) => (m === undefined || m === 'capture' ? 'piped' : m);
    this.command = describe(program, args);
    this.child = new Deno.Command(program, {
      args: [...args],
      cwd: opts.cwd,
      env: opts.env,
      clearEnv: opts.clearEnv,
      stdin: opts.stdin === 'open' ? 'piped' : 'null',
      stdout: mode(opts.stdout),
      stderr: mode(opts.stderr),
    }).spawn();
    this.child.status.then(() => (this.#exited = true));
    const read = async (stream: ReadableStream<Uint8Array>, into: 'out' | 'err') => {
      let partial = '';
      for await (const text of stream.pipeThrough(new TextDecoderStream())) {
        if (into === 'out') this.#stdout += text;
        else this.#stderr += text;
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        this.#lines.push(...lines);
      }
      if (partial) this.#lines.push(partial);
    };
    this.#reading = Promise.all([
      mode(opts.stdout) === 'piped' ? read(this.child.stdout, 'out') : undefined,
      mode(opts.stderr) === 'piped' ? read(this.child.stderr, 'err') : undefined,
    ]).catch(() => {});
  }

  /** Its process id. */
  get pid(): number {
    return this.child.pid;
  }

  /** Whether it has exited. */
  get exited(): boolean {
    return this.#exited;
  }

  /** How it ended, once it has. */
  get status(): Promise<Deno.CommandStatus> {
    return this.child.status;
  }

  /** Its standard output so far. */
  get stdout(): string {
    return this.#stdout;
  }

  /** Its standard error so far. */
  get stderr(): string {
    return this.#stderr;
  }

  /**
   * Every line it printed so far, standard output's and error's interleaved in the order they
   * came (a last line without a newline once its stream closed).
   */
  get lines(): readonly string[] {
    return this.#lines;
  }

  /** Both so far, for failure messages. */
  get output(): string {
    return `${this.#stdout}\n${this.#stderr}`;
  }

  /**
   * Waits until its standard output (or `stream`) matches `pattern`; the match. Fails when it
   * exits first or after `timeoutMs`, with what it printed.
   */
  async waitFor(
    pattern: RegExp,
    opts: { stream?: 'stdout' | 'stderr' | 'both'; timeoutMs?: number } = {},
  ): Promise<RegExpMatchArray> {
    const text = () =>
      opts.stream === 'stderr' ? this.#stderr : opts.stream === 'both' ? this.output : this.#stdout;
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = text().match(pattern);
      if (m) return m;
      if (this.#exited) {
        await this.#reading; // the last of its output
        const last = text().match(pattern);
        if (last) return last;
        throw new Error(
          `${this.command} exited before it printed ${pattern}; it printed:\n${this.output}`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${this.command} to print ${pattern}; ` +
            `it printed:\n${this.output}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Closes its standard input (opened with `stdin: 'open'`): end of input, as a pipe's writer ends. */
  async closeInput(): Promise<void> {
    await this.child.stdin.close().catch(() => {});
  }

  /** Sends `signal` to it alone (what a terminal's Ctrl-C or a supervisor sends). */
  signal(signal: Deno.Signal): void {
    if (this.#exited) return;
    try {
      this.child.kill(signal);
    } catch { /* exited */ }
  }

  /** Waits for it to exit by itself; how it ended and everything it printed. */
  async wait(): Promise<Output> {
    const status = await this.child.status;
    await this.#reading;
    return {
      code: status.code,
      signal: status.signal,
      stdout: this.#stdout,
      stderr: this.#stderr,
    };
  }

  /** Sends `signal` to it and every process it started (SIGKILL: a crash, nothing cleans up). */
  async kill(signal: Deno.Signal = 'SIGKILL'): Promise<void> {
    await killTree(this.child, signal);
  }

  /**
   * Ends it: `signal` (default SIGTERM, which lets it shut down) to the process, then after
   * `graceMs` SIGKILL to whatever is left of its tree; its output, once every pipe closed.
   */
  async stop(signal: Deno.Signal = 'SIGTERM', graceMs = 10_000): Promise<Output> {
    // Its children are found before it exits: afterwards they no longer name it as parent.
    const tree = await descendants(this.child.pid);
    this.signal(signal);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const graceful = await Promise.race([
      this.child.status.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
    ]);
    clearTimeout(timer);
    if (!graceful) await killTree(this.child, 'SIGKILL');
    for (const pid of tree) signalPid(pid, 'SIGKILL');
    return await this.wait();
  }

  /** Stops it (`await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** {@linkcode Spawned} with the Deno that runs the test: `deno args…`. */
export function spawnDeno(args: readonly string[], opts: SpawnOptions = {}): Spawned {
  return new Spawned(Deno.execPath(), args, opts);
}

function signalPid(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(pid, signal);
  } catch { /* exited */ }
}

/**
 * Every process under `pid` (children first found, then theirs), from /proc; none where /proc
 * cannot be read (Deno allows it only with every permission: the unit tier's processes are
 * then stopped alone).
 */
export async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  const pids: string[] = [];
  try {
    for await (const entry of Deno.readDir('/proc')) {
      if (/^\d+$/.test(entry.name)) pids.push(entry.name);
    }
  } catch {
    return [];
  }
  for (const name of pids) {
    try {
      const stat = await Deno.readTextFile(`/proc/${name}/stat`);
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parents.get(ppid) ?? [];
      list.push(Number(name));
      parents.set(ppid, list);
    } catch { /* exited */ }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of parents.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/**
 * Sends `signal` to `root` and every process under it (the children first, so none restarts).
 * The root through its handle: `Deno.kill` needs every run permission, which the unit tier lacks.
 */
export async function killTree(root: Deno.ChildProcess, signal: Deno.Signal): Promise<void> {
  const tree = await descendants(root.pid);
  for (const pid of tree.reverse()) signalPid(pid, signal);
  try {
    root.kill(signal);
  } catch { /* exited */ }
}
