/**
 * `deno task drain [queue]`: per queue and concrete version, whether it is
 * active (an alias target), draining (started runs may still reach the queue,
 * or tasks remain: with counts) or drained. An old version may leave the
 * registry once it is drained on every queue.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 printed, 1 nothing is placed on the
 * named queue, 2 bad usage.
 *
 * @module
 */
import { drainStatus } from '../lib/ops.ts';
import { formatDrainStatus } from '../lib/ops/format.ts';
import { isValidQueueName, QUEUE_NAME_RULE } from '../lib/dsl/queue_names.ts';
import { parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('drain')} [queue]

Prints, per queue and concrete flow version, active / draining (with counts) /
drained: all queues, or only [queue]. Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { positionals } = parse(args, {});
  if (positionals.length > 1) {
    throw new UsageError(
      `expected at most one queue, got ${positionals.length}: ${positionals.join(' ')}`,
    );
  }
  const queue = positionals[0];
  if (queue !== undefined && !isValidQueueName(queue)) {
    throw new UsageError(`queue name ${JSON.stringify(queue)} is invalid: ${QUEUE_NAME_RULE}`);
  }
  const states = await drainStatus(sql, queue);
  if (states.length === 0) {
    if (queue !== undefined) {
      console.error(`error: no flow version places a step on queue "${queue}"`);
      return 1;
    }
    console.log('no flow is compiled yet');
    return 0;
  }
  console.log(formatDrainStatus(states));
});
