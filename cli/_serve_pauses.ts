/**
 * Pauses of the functions `deno task serve` serves, said in its output (issue 37, item 7): a
 * queue function whose worker met work its registry lacks (after an edit of the registry, a
 * worker that started before it) pauses itself durably, and every later start is refused until
 * it is resumed (`npx switchyard resume`). Serve reads the functions' flags
 * (`switchyard.function_states`) every couple of seconds and prints each pause once, when it
 * sees it (at start: the ones already paused), with its reason and what to run (as the user runs
 * the kit, `cli/_invocation.ts`); and a resume.
 *
 * @module
 */
import { type FunctionState, listFunctions, type SqlSource } from '../lib/ops.ts';
import { userCommand } from './_invocation.ts';

/** Options of {@linkcode reportPauses}. */
export interface PauseReportOptions {
  /** The database the functions use. */
  source: SqlSource;
  /** The served functions' names (others are not reported). */
  names: () => readonly string[];
  /** Where the lines go. */
  log: (line: string) => void;
  /** Whether serve reloads functions on a change (`--watch`): the advice differs. */
  watching: boolean;
  /** How often to read, in milliseconds (default 2000). */
  intervalMs?: number;
}

/**
 * What to run about a paused function, for serve's output.
 *
 * @example
 * ```ts
 * import { pauseAdvice } from './_serve_pauses.ts';
 * console.log(pauseAdvice('greetings-worker', false)); // … `npx switchyard resume greetings-worker` …
 * ```
 */
export function pauseAdvice(name: string, watching: boolean): string {
  const reload = watching
    ? 'serve reloads it with the current files on every change under supabase/functions/'
    : 'restart serve (or run it with --watch, which reloads functions when supabase/functions/ ' +
      'changes) so that it runs the current registry';
  return `[serve] ${name} starts no worker until it is resumed. A worker runs the registry it ` +
    `started with: ${reload}; once it covers the work, run \`${userCommand('resume', [name])}\` ` +
    `(with DATABASE_URL set). A message with no task: \`${userCommand('quarantine', [name])}\`.`;
}

/**
 * Reads the functions' flags now and every `intervalMs`, printing pauses and resumes; returns
 * the function that stops it.
 *
 * @example
 * ```ts
 * import { createClient } from '../lib/client.ts';
 * import { reportPauses } from './_serve_pauses.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const stop = reportPauses({
 *   source: client,
 *   names: () => ['greetings-worker'],
 *   log: console.error,
 *   watching: false,
 * });
 * await stop();
 * await client.close();
 * ```
 */
export function reportPauses(options: PauseReportOptions): () => Promise<void> {
  const seen = new Map<string, string | null>();
  let failing = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let reading: Promise<void> = Promise.resolve();

  const read = async () => {
    let states: FunctionState[];
    try {
      states = await listFunctions(options.source);
    } catch (e) {
      // Before the migrations are applied, or with the database away: said once.
      if (!failing) {
        options.log(
          `[serve] cannot read the functions' pause flags (${(e as Error).message}); ` +
            'pauses are reported once it can',
        );
      }
      failing = true;
      return;
    }
    failing = false;
    const names = new Set(options.names());
    for (const state of states) {
      if (!names.has(state.functionName)) continue;
      const name = state.functionName;
      const pausedAt = state.pausedAt?.toISOString() ?? null;
      const before = seen.get(name);
      seen.set(name, pausedAt);
      if (pausedAt === before || (before === undefined && pausedAt === null)) continue;
      if (pausedAt === null) {
        options.log(`[serve] ${name} was resumed`);
        continue;
      }
      options.log(
        `[serve] ${name} ${
          before === undefined ? 'is paused since' : 'was paused at'
        } ${pausedAt}: ${state.pauseReason}`,
      );
      options.log(pauseAdvice(name, options.watching));
    }
  };

  const tick = () => {
    reading = read().finally(() => {
      if (!stopped) timer = setTimeout(tick, options.intervalMs ?? 2000);
    });
  };
  tick();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await reading;
  };
}
