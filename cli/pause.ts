/**
 * `deno task pause <function> [--reason TEXT]`: pauses a queue function durably.
 * Its workers stop at their next heartbeat, new ones refuse to start, HTTP starts
 * answer with the reason and the keep-alive skips it, until `deno task resume`.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 paused (or already paused), 1 refused
 * (unknown function), 2 bad usage.
 *
 * @module
 */
import { pauseFunction } from '../lib/ops.ts';
import { onePositional, parse, runCommand } from './_operator_cli.ts';
import { commandName, userCommand } from './_invocation.ts';

const USAGE = `usage: ${commandName('pause')} <function> [--reason TEXT]

Pauses the queue function <function> (e.g. classify-threads-worker) until
\`${userCommand('resume', ['<function>'])}\`. Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, { reason: { type: 'string' } });
  const name = onePositional(
    positionals,
    'function',
    'missing <function>: name the queue function to pause',
  );
  const reason = values.reason?.trim() || `paused by an operator (${commandName('pause')})`;
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
