/**
 * `deno task fence begin|wait|status|end`: the fenced rollout (docs/design/versions.md).
 *
 * 1. `fence begin <function…> [--timeout S]` records each function's exact
 *    `enabled` value, disables it, deprecates its live workers, then waits with
 *    progress lines until every live worker stopped (each worker's own heartbeat
 *    window, or `--heartbeat-window` when larger) and no task of theirs is
 *    `started`;
 * 2. deploy every replacement registry (old and new versions) while the
 *    functions stay disabled;
 * 3. `fence end` re-enables only the functions that were enabled before; the
 *    first new worker activates the new alias targets.
 *
 * `fence wait` waits again after a timeout; `fence status` prints the open fence.
 * Needs `DATABASE_URL`. Exit codes: 0 done, 1 refused or timed out (the fence
 * stays open), 2 bad usage.
 *
 * @module
 */
import type postgres from 'postgres';
import { FenceTimeoutError } from '../lib/errors.ts';
import { fenceBegin, fenceEnd, type FenceStatus, fenceStatus, waitForFence } from '../lib/ops.ts';
import { formatFenceStatus } from '../lib/ops/format.ts';
import { parse, runCommand, secondsOption, UsageError } from './_operator_cli.ts';
import { commandName, userCommand } from './_invocation.ts';

const USAGE = `usage: ${commandName('fence')} begin <function…> [--timeout S] [--heartbeat-window S]
       ${commandName('fence')} wait [--timeout S] [--heartbeat-window S]
       ${commandName('fence')} status [--heartbeat-window S]
       ${commandName('fence')} end

begin   disable the functions (recording whether each was enabled), ask their
        workers to stop, and wait until they stopped and no task of theirs is
        started (default timeout 600 s; a worker counts as live within its own
        heartbeat window, which --heartbeat-window S widens, default 15 s)
wait    wait for the open fence again
status  print the open fence
end     re-enable exactly the functions that were enabled before the fence
Needs DATABASE_URL.`;

const OPTIONS = {
  timeout: { type: 'string' },
  'heartbeat-window': { type: 'string' },
} as const;

function progressLine(status: FenceStatus): string {
  return status.functions.map((f) =>
    f.quiet
      ? `${f.functionName} quiet`
      : `${f.functionName} ${f.liveWorkers} live worker(s), ${f.startedTasks} started task(s)`
  ).join('; ');
}

async function wait(
  sql: postgres.Sql,
  timeoutSeconds: number,
  heartbeatWindowSeconds: number,
): Promise<number> {
  const started = performance.now();
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;
  let last = '';
  let lastPrinted = 0;
  try {
    const status = await waitForFence(sql, {
      timeoutMs: timeoutSeconds * 1000,
      heartbeatWindowSeconds,
      onProgress: (s) => {
        const line = progressLine(s);
        // A line when something changed, and every 10 s while nothing does.
        if (line !== last || performance.now() - lastPrinted > 10_000) {
          console.log(`[${elapsed()}] ${line}`);
          last = line;
          lastPrinted = performance.now();
        }
      },
    });
    console.log(
      `fence ${status.fenceId} is quiet after ${elapsed()}: every worker stopped and no task of theirs is started`,
    );
    const stalled = status.functions.reduce((n, f) => n + f.stalledTasks, 0);
    if (stalled > 0) {
      console.log(
        `note: ${stalled} task(s) held by stopped or silent workers stay started until the next ` +
          `worker's stall recovery requeues them (its registry must cover them)`,
      );
    }
    console.log(
      'next: deploy every replacement registry (the functions stay disabled), then run ' +
        `\`${userCommand('fence', ['end'])}\``,
    );
    return 0;
  } catch (e) {
    if (e instanceof FenceTimeoutError) {
      console.error(`error: ${e.message}`);
      console.error(
        `the fence stays open: run \`${userCommand('fence', ['wait'])}\` to wait again`,
      );
      return 1;
    }
    throw e;
  }
}

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, OPTIONS);
  const [command, ...rest] = positionals;
  const timeout = secondsOption('timeout', values.timeout, 600);
  const window = secondsOption('heartbeat-window', values['heartbeat-window'], 15);
  const noMore = () => {
    if (rest.length > 0) {
      throw new UsageError(`fence ${command} takes no arguments, got: ${rest.join(' ')}`);
    }
  };
  switch (command) {
    case 'begin': {
      if (rest.length === 0) {
        throw new UsageError('fence begin: name every queue function the rollout affects');
      }
      const members = await fenceBegin(sql, rest);
      console.log(`fence ${members[0].fenceId} opened over ${members.length} function(s):`);
      for (const m of members) {
        console.log(
          `  ${m.functionName}: ${
            m.wasEnabled ? 'was enabled, now disabled' : 'was disabled, stays disabled'
          }; ` +
            `${m.deprecatedWorkers} worker(s) asked to stop`,
        );
      }
      console.log(
        `waiting up to ${timeout} s for their workers to stop and their started tasks to finish ` +
          `(heartbeat window ${window} s)`,
      );
      return await wait(sql, timeout, window);
    }
    case 'wait':
      noMore();
      return await wait(sql, timeout, window);
    case 'status': {
      noMore();
      const status = await fenceStatus(sql, { heartbeatWindowSeconds: window });
      if (!status) {
        console.log('no fence is open');
        return 0;
      }
      console.log(
        `fence ${status.fenceId} open since ${status.openedAt.toISOString()}: ` +
          (status.quiet ? 'quiet' : 'waiting for workers to stop'),
      );
      console.log(formatFenceStatus(status));
      return 0;
    }
    case 'end': {
      noMore();
      const ended = await fenceEnd(sql);
      console.log(`fence ${ended[0].fenceId} closed:`);
      for (const f of ended) {
        console.log(
          f.enabled
            ? `  ${f.functionName}: enabled again`
            : `  ${f.functionName}: stays disabled (it was disabled before the fence)`,
        );
      }
      return 0;
    }
    case undefined:
      throw new UsageError('missing command: use begin, wait, status or end');
    default:
      throw new UsageError(
        `unknown command ${JSON.stringify(command)}: use begin, wait, status or end`,
      );
  }
});
