/**
 * `deno task retry <run>`: retries a failed run (`switchyard.retry_run`,
 * docs/design/client.md). Its failed steps are queued again with fresh attempts
 * and the run continues; completed steps are not run again.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 retried, 1 refused (unknown run, or a run
 * that is not failed), 2 bad usage.
 *
 * @module
 */
import { retryRun } from '../lib/ops.ts';
import { onePositional, parse, runCommand } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('retry')} <run>

Retries the failed run <run> (a run id). Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { positionals } = parse(args, {});
  const runId = onePositional(positionals, 'run id', 'missing <run>: name the run id to retry');
  const result = await retryRun(sql, runId);
  console.log(`retried run ${result.runId}: ${result.requeued} task(s) queued again`);
});
