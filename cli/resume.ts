/**
 * `deno task resume <function>`: clears a function's pause and its reason, the
 * only way back from a pause (worker start-up, scaffold migrations and fence end
 * never unpause). Start the function again afterwards (an HTTP request or the
 * keep-alive).
 *
 * Needs `DATABASE_URL`. Exit codes: 0 resumed (or was not paused), 1 refused
 * (unknown function), 2 bad usage.
 *
 * @module
 */
import { resumeFunction } from '../lib/ops.ts';
import { onePositional, parse, runCommand } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('resume')} <function>

Resumes the paused queue function <function> (e.g. classify-threads-worker).
Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { positionals } = parse(args, {});
  const name = onePositional(
    positionals,
    'function',
    'missing <function>: name the queue function to resume',
  );
  const result = await resumeFunction(sql, name);
  if (result.changed) {
    console.log(
      `resumed function "${result.functionName}" (it was paused: ${result.previousReason})`,
    );
  } else {
    console.log(`function "${result.functionName}" was not paused; nothing changed`);
  }
});
