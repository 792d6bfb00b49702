/**
 * `deno task pause <function> [--reason TEXT]`: pauses a queue function durably.
 * Its workers stop at their next heartbeat, new ones refuse to start, HTTP starts
 * answer with the reason and the keep-alive skips it, until `deno task resume`.
 *
 * `deno task pause <run> [--reason TEXT]` (a run id, a UUID): pauses that one run
 * (`switchyard.pause_run`, docs/design/rerun.md): none of its tasks is claimed
 * until `deno task resume <run>`; its running tasks finish.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 paused (or already paused), 1 refused
 * (unknown function or run, a run that is not started), 2 bad usage.
 *
 * @module
 */
import { pauseFunction, pauseRun } from '../lib/ops.ts';
import { onePositional, parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName, userCommand } from './_invocation.ts';
import { isRunId } from './_run_controls.ts';

const USAGE = `usage: ${commandName('pause')} <function> [--reason TEXT]
       ${commandName('pause')} <run> [--reason TEXT] [--actor NAME]

Pauses the queue function <function> (e.g. classify-threads-worker) until
\`${userCommand('resume', ['<function>'])}\`. Given a run id (a UUID) instead, pauses
that one run: none of its tasks is claimed until \`${userCommand('resume', ['<run>'])}\`;
tasks already running finish. Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, {
    reason: { type: 'string' },
    actor: { type: 'string' },
  });
  const name = onePositional(
    positionals,
    'function',
    'missing <function>: name the queue function to pause (or a run id, to pause one run)',
  );
  const reason = values.reason?.trim() || `paused by an operator (${commandName('pause')})`;
  if (isRunId(name)) {
    const result = await pauseRun(sql, name.toLowerCase(), {
      reason,
      actor: values.actor ?? commandName('pause'),
    });
    console.log(
      result.changed
        ? `paused run ${result.runId}: ${reason}`
        : `run ${result.runId} was already paused (the first reason is kept)`,
    );
    return;
  }
  if (values.actor !== undefined) {
    throw new UsageError("--actor is for a run: a function's pause records no actor");
  }
  const result = await pauseFunction(sql, name, reason);
  if (result.changed) {
    console.log(`paused function "${result.functionName}": ${result.reason}`);
  } else {
    console.log(
      `function "${result.functionName}" was already paused since ` +
        `${result.pausedAt.toISOString()}: ${result.reason} (the first reason is kept)`,
    );
  }
});
