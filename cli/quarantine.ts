/**
 * `deno task quarantine <function>`: the explicit way past foreign messages that paused a
 * queue function. Moves exactly the messages named by the pause that belong to no task into
 * `switchyard.quarantined_messages` (bodies kept there for inspection, never printed), then
 * resumes the function. A named message that belongs to a task is never moved: the registry
 * lacks its version, so the function stays paused until that version is deployed and
 * `deno task resume` runs. Never automatic.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 quarantined and resumed; 1 refused (unknown function,
 * not paused, an operator's pause) or not resumed (a named message belongs to a task);
 * 2 bad usage.
 *
 * @module
 */
import { quarantineMessages } from '../lib/ops.ts';
import { onePositional, parse, runCommand } from './_operator_cli.ts';
import { commandName, userCommand } from './_invocation.ts';

const USAGE = `usage: ${commandName('quarantine')} <function>

Moves the foreign messages (no task) named by the pause of queue function <function>
(e.g. classify-threads-worker) into switchyard.quarantined_messages, then resumes it.
Messages of tasks are never moved. Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { positionals } = parse(args, {});
  const name = onePositional(
    positionals,
    'function',
    'missing <function>: name the paused queue function',
  );
  const r = await quarantineMessages(sql, name);
  console.log(
    `quarantined ${r.quarantined.length} message(s) of queue "${r.queueName}" into ` +
      `switchyard.quarantined_messages: [${r.quarantined.join(', ')}]`,
  );
  if (r.gone.length > 0) {
    console.log(`already gone from the queue: [${r.gone.join(', ')}]`);
  }
  if (r.resumed) {
    console.log(`resumed function "${r.functionName}"`);
    return 0;
  }
  console.error(
    `not resumed: message(s) [${r.withTask.map((t) => t.messageId).join(', ')}] belong to ` +
      `tasks of [${[...new Set(r.withTask.map((t) => t.pair))].join(', ')}], which the ` +
      `registry lacks: deploy a registry with those versions, then ` +
      userCommand('resume', [r.functionName]),
  );
  return 1;
});
