/**
 * `deno task resume <function>`: clears a function's pause and its reason, the
 * only way back from a pause (worker start-up, scaffold migrations and fence end
 * never unpause). Start the function again afterwards (an HTTP request or the
 * keep-alive).
 *
 * `deno task resume <run>` (a run id, a UUID): resumes that one paused run
 * (`switchyard.resume_run`, docs/design/rerun.md): its queued tasks show at once, and a
 * step paused by `whenExhausted: 'pause'` is queued again with a fresh budget.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 resumed (or was not paused), 1 refused
 * (unknown function or run, a run that is not started), 2 bad usage.
 *
 * @module
 */
import { resumeFunction, resumeRun } from '../lib/ops.ts';
import { onePositional, parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';
import { isRunId } from './_run_controls.ts';

const USAGE = `usage: ${commandName('resume')} <function>
       ${commandName('resume')} <run> [--actor NAME]

Resumes the paused queue function <function> (e.g. classify-threads-worker); given a
run id (a UUID) instead, resumes that one paused run. Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, { actor: { type: 'string' } });
  const name = onePositional(
    positionals,
    'function',
    'missing <function>: name the queue function to resume (or a run id, to resume one run)',
  );
  if (isRunId(name)) {
    const result = await resumeRun(sql, name.toLowerCase(), {
      actor: values.actor ?? commandName('resume'),
    });
    console.log(
      result.changed
        ? `resumed run ${result.runId}` +
          (result.requeued ? ` (${result.requeued} exhausted task(s) queued again)` : '')
        : `run ${result.runId} was not paused; nothing changed`,
    );
    return;
  }
  if (values.actor !== undefined) {
    throw new UsageError("--actor is for a run: a function's resume records no actor");
  }
  const result = await resumeFunction(sql, name);
  if (result.changed) {
    console.log(
      `resumed function "${result.functionName}" (it was paused: ${result.previousReason})`,
    );
  } else {
    console.log(`function "${result.functionName}" was not paused; nothing changed`);
  }
});
