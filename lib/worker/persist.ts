/**
 * Writes that must survive a lost connection (docs/design/worker.md#worker-states-and-parts):
 * completions,
 * failures and the stop record are repeated until the database answers. The SQL core
 * accepts only the attempt that holds a task, so a repeat is harmless.
 *
 * @module
 */
import { storableText } from '../dsl/json.ts';

/** Where a worker writes its log lines. */
export interface WorkerLogger {
  /** Progress worth seeing with `SWITCHYARD_LOG=info`. */
  info(message: string): void;
  /** Something went wrong and was handled. */
  warn(message: string): void;
  /** Something went wrong that needs an operator. */
  error(message: string): void;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A thrown value as one line of text, for logs and `fail_task`. Never throws: a handler may
 * throw anything (a null-prototype object holding a bigint, a revoked proxy, an error whose
 * `message` getter throws), and a formatter that threw inside a `catch` would turn one failed
 * attempt into an unhandled rejection (docs/design/worker.md#worker-states-and-parts).
 */
export function errorText(e: unknown): string {
  // Storable too: the text goes to fail_task and worker_stopped
  // (docs/design/claim.md#dispatch-and-completion).
  return storableText(formatThrown(e));
}

/** At most this many stack frames are kept with a handler's error. */
export const MAX_STACK_FRAMES = 12;

/**
 * A handler's error for `fail_task`: {@linkcode errorText} (its first 2000 characters), then,
 * for an `Error` with a stack, its first {@linkcode MAX_STACK_FRAMES} frames (`    at ...`, each
 * at most 200 characters) on the lines below, so the stored error says where it was thrown and
 * stays within the 4000 characters `fail_task` keeps. Never throws.
 *
 * @example
 * ```ts
 * import { handlerErrorText } from './persist.ts';
 * const text = handlerErrorText(new Error('boom'));
 * console.assert(text.startsWith('Error: boom\n    at '));
 * ```
 */
export function handlerErrorText(e: unknown): string {
  const head = errorText(e);
  const first = head.length > 2000 ? `${head.slice(0, 2000)}... (${head.length} characters)` : head;
  const stack = attempt(() => (e instanceof Error ? String(e.stack ?? '') : ''), '');
  const frames = stack.split('\n')
    .filter((line) => /^\s+at /.test(line))
    .slice(0, MAX_STACK_FRAMES)
    .map((line) => `    ${line.trim().slice(0, 200)}`);
  return frames.length > 0 ? storableText(`${first}\n${frames.join('\n')}`) : first;
}

function formatThrown(e: unknown): string {
  try {
    if (e instanceof Error) {
      return `${attempt(() => String(e.name), 'Error')}: ${
        attempt(() => String(e.message), '(unreadable message)')
      }`;
    }
  } catch { /* instanceof itself threw (a proxy's getPrototypeOf trap) */ }
  const json = attempt(() => JSON.stringify(e), undefined);
  if (json !== undefined) return `non-Error thrown: ${json}`;
  const text = attempt(() => String(e), undefined) ??
    attempt(() => Object.prototype.toString.call(e), undefined) ??
    `a value of type ${typeof e}`;
  return `non-Error thrown: ${text}`;
}

/** `fn()`, or `fallback` when it throws. */
function attempt<T, F>(fn: () => T, fallback: F): T | F {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/**
 * True for errors that mean the connection (not the statement) failed, and for a deadlock or
 * serialization failure, after which the whole statement can simply be repeated.
 */
export function isConnectionError(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? '';
  return /^(ECONN|EPIPE|ETIMEDOUT|CONNECTION_|57P0[123]|08|40P01$|40001$)/.test(code) ||
    /connection|terminat|ECONNRESET|broken pipe/i.test(String((e as Error)?.message ?? ''));
}

/**
 * Runs `fn`, repeating it after connection errors (up to 30 tries, backing off to 2 s);
 * any other error is logged and gives `undefined`.
 */
export async function persist<T>(
  log: WorkerLogger,
  what: string,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  const outcome = await persistOutcome(log, what, fn);
  return 'value' in outcome ? outcome.value : undefined;
}

/** What {@linkcode persistOutcome} ended with. */
export type PersistOutcome<T> =
  | { value: T }
  /** `refused`: the database refused the statement (not a lost connection). */
  | { error: unknown; refused: boolean };

/** {@linkcode persist}, telling a refusal by the database apart from a lost connection. */
export async function persistOutcome<T>(
  log: WorkerLogger,
  what: string,
  fn: () => Promise<T>,
): Promise<PersistOutcome<T>> {
  for (let attempt = 1;; attempt++) {
    try {
      return { value: await fn() };
    } catch (e) {
      const connection = isConnectionError(e);
      if (!connection || attempt >= 30) {
        log.error(`${what} failed: ${errorText(e)}`);
        return { error: e, refused: !connection };
      }
      await sleep(Math.min(200 * attempt, 2000));
    }
  }
}
