/**
 * `deno task prune --older-than 7d [--batch-size N]`: retention (docs/design/versions.md).
 * Deletes completed and failed runs that finished before the cutoff, with their step
 * states, tasks and PGMQ archive rows, one bounded batch (one transaction) after another,
 * printing a progress line per batch, until nothing more is due. Safe while workers run:
 * open runs are never touched and rows someone holds are left for a later batch.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 done, 1 the database refused or failed, 2 bad usage.
 *
 * @module
 */
import { pruneAll, type PruneResult } from '../lib/ops.ts';
import { parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('prune')} --older-than <age> [--batch-size N]

Deletes completed and failed runs that finished more than <age> ago, with their
step states, tasks and archived PGMQ messages, in batches of N runs (default
1000, at most 10000), until none is left. Also removes keep-alive wake records
and rows of workers that stopped or went silent before the same cutoff.

<age>  a number and a unit: 7d, 36h, 90m, 2w (at least 1h), or a PostgreSQL
       interval such as "7 days"
Needs DATABASE_URL.`;

const UNITS: Record<string, string> = {
  s: 'seconds',
  m: 'minutes',
  h: 'hours',
  d: 'days',
  w: 'weeks',
};

/**
 * The PostgreSQL interval for an age option: `7d` is `7 days`; text with a space
 * (`"7 days"`) is passed as is, for PostgreSQL to read.
 *
 * @example
 * ```ts
 * import { ageInterval } from './prune.ts';
 * console.assert(ageInterval('36h') === '36 hours');
 * ```
 */
export function ageInterval(value: string): string {
  const short = /^(\d+)([smhdw])$/.exec(value.trim());
  if (short) {
    const n = Number(short[1]);
    return `${n} ${n === 1 ? UNITS[short[2]].slice(0, -1) : UNITS[short[2]]}`;
  }
  if (/^\d+(\.\d+)?\s+[a-z]+(\s+\d+(\.\d+)?\s+[a-z]+)*$/i.test(value.trim())) return value.trim();
  throw new UsageError(
    `--older-than ${JSON.stringify(value)} is invalid: use a number and a unit ` +
      '(s, m, h, d, w) such as 7d, or an interval such as "7 days"',
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function counts(r: PruneResult): string {
  const parts = [
    plural(r.stepStates, 'step state'),
    plural(r.stepTasks, 'task'),
    plural(r.archiveRows, 'archived message'),
  ];
  if (r.queueMessages) parts.push(plural(r.queueMessages, 'stale queued message'));
  if (r.wakeRequests) parts.push(plural(r.wakeRequests, 'wake record'));
  if (r.workers) parts.push(plural(r.workers, 'worker row'));
  return `${plural(r.runs, 'run')} (${parts.join(', ')})`;
}

/** `deno task prune` (and `switchyard prune`) as a command: parses, prunes, prints, exits. */
export function pruneCommand(): Promise<never> {
  return runCommand(USAGE, async (sql, args) => {
    const { values, positionals } = parse(args, {
      'older-than': { type: 'string' },
      'batch-size': { type: 'string' },
    });
    if (positionals.length > 0) {
      throw new UsageError(`prune takes no positional arguments, got: ${positionals.join(' ')}`);
    }
    const age = values['older-than'];
    if (typeof age !== 'string') {
      throw new UsageError('--older-than is required: say how old finished runs must be, e.g. 7d');
    }
    const olderThan = ageInterval(age);
    const size = values['batch-size'];
    const batchSize = size === undefined ? 1000 : Number(size);
    if (
      size !== undefined &&
      (!/^\d+$/.test(size) || !Number.isSafeInteger(batchSize) || batchSize < 1 ||
        batchSize > 10000)
    ) {
      throw new UsageError(
        `--batch-size ${JSON.stringify(size)} is invalid: use an integer from 1 to 10000`,
      );
    }
    const started = performance.now();
    const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;
    const total = await pruneAll(sql, {
      olderThan,
      batchSize,
      onBatch: (batch, sum, index) => {
        console.log(
          `[${elapsed()}] batch ${index}: ${counts(batch)}; ${plural(sum.runs, 'run')} so far`,
        );
      },
    });
    console.log(
      `pruned runs finished more than ${olderThan} ago in ${elapsed()}: ${counts(total)}`,
    );
    if (total.heldRuns > 0) {
      console.log(
        `note: ${total.heldRuns} old run(s) were held back (a row in use, or a message of theirs ` +
          'still held on a queue); a later prune removes them',
      );
    }
  });
}

if (import.meta.main) await pruneCommand();
