/**
 * `deno task cancel <run> [--reason TEXT]`: cancels a started run
 * (`switchyard.cancel_run`, docs/design/client.md). Its queued tasks are archived,
 * tasks a worker is running finish but their answers change nothing, and the run
 * ends `cancelled` without starting another step.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 cancelled (or already cancelled), 1 refused
 * (unknown run, or a run that already completed or failed), 2 bad usage.
 *
 * @module
 */
import { cancelRun } from '../lib/ops.ts';
import { onePositional, parse, runCommand } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('cancel')} <run> [--reason TEXT]

Cancels the started run <run> (a run id). Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, { reason: { type: 'string' } });
  const runId = onePositional(positionals, 'run id', 'missing <run>: name the run id to cancel');
  const reason = values.reason?.trim() || `cancelled by an operator (${commandName('cancel')})`;
  const result = await cancelRun(sql, runId, reason);
  console.log(
    result.changed
      ? `cancelled run ${result.runId}: ${reason}`
      : `run ${result.runId} was already cancelled (the first reason is kept)`,
  );
});
