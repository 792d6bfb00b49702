/**
 * `npx switchyard export-run <run> [--output FILE]`: a run of the database as a fixture
 * (`exportRun`, docs/design/clock.md#export-and-replay) — its input and version, each step's state
 * and
 * output, each task's attempts and error, the signals its waits received, its events — as JSON, for
 * a flow's test to replay in the test engine (`engine.replay(record)` of `switchyard/testing`):
 * a production failure reproduced locally.
 *
 * Needs `DATABASE_URL`; reads only. Exit codes: 0 written, 1 refused (no such run, or the
 * database failed), 2 bad usage (no run id, an extra argument, an output file that exists).
 *
 * @module
 */
import { exportRun } from '../lib/sql/run_export.ts';
import { onePositional, parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('export-run')} <run> [--output FILE] [--force]

Writes the run <run> (a run id) as a record, JSON in the format switchyard-run/1: its input and
version, each step's state and output, each task's attempts and last error, the signals its waits
got and its events. A flow's test replays it with engine.replay(record) (switchyard/testing).
Prints to stdout, or writes FILE (refused when FILE exists, unless --force). Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, {
    output: { type: 'string', short: 'o' },
    force: { type: 'boolean', default: false },
  });
  const runId = onePositional(positionals, 'run id', 'missing <run>: name the run id to export');
  const output = values.output;
  if (output !== undefined && !values.force) {
    const exists = await Deno.lstat(output).then(() => true, () => false);
    if (exists) {
      throw new UsageError(
        `--output ${output} exists: name a new file, or pass --force to replace it`,
      );
    }
  }
  const record = await exportRun(sql, runId);
  const text = `${JSON.stringify(record, null, 2)}\n`;
  if (output === undefined) {
    await Deno.stdout.write(new TextEncoder().encode(text));
    return;
  }
  await Deno.writeTextFile(output, text);
  const steps = record.steps.map((s) => `${s.stepSlug} ${s.status}`).join(', ');
  console.error(
    `wrote run ${record.run.runId} of ${record.run.flowSlug} (${record.run.status}; ${steps}) ` +
      `to ${output}`,
  );
});
