/**
 * The commands `rerun`, `fork` and `move` (docs/design/rerun.md): one run named by its id,
 * or, with a filter instead, every run it matches (`switchyard.bulk_run_action`): a dry run that
 * counts what would change unless `--apply`, at most `--max` runs per call, going on after
 * `--after <run>` (the command prints the id to pass next).
 *
 * @module
 */
import { bulkRunAction, forkRun, moveRun, rerunRun } from '../lib/ops.ts';
import type postgres from 'postgres';
import type { Sql } from '../lib/sql/connection.ts';
import { onePositional, parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

type Action = 'rerun' | 'fork' | 'move';

/**
 * Whether an argument is a run id (a UUID, any case): `pause` and `resume` take a run as well as
 * a queue function, and a function name is never a UUID in practice (it names a worker, such as
 * classify-threads-worker), so a UUID is taken as a run.
 *
 * @example
 * ```ts
 * import { isRunId } from './_run_controls.ts';
 * console.assert(isRunId('0b6a3f3e-2c1d-4e5f-8a9b-0c1d2e3f4a5b') && !isRunId('billing-worker'));
 * ```
 */
export function isRunId(text: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text);
}

const FILTER = `Filter (instead of <run>; a dry run unless --apply):
  --flow NAME      runs of a concrete flow, started as NAME, or of any version of alias NAME
  --status S       started | completed | failed | cancelled
  --error TEXT     runs whose error contains TEXT (case-insensitive)
  --since ISO      started at or after;  --until ISO  started before
  --apply          act (default: count what would change, change nothing)
  --max N          at most N runs per call (default 100, at most 10000)
  --after RUN      go on after this run id (the last one a call printed)`;

/** The usage text of one of the commands. */
export function usageOf(action: Action): string {
  const head = {
    rerun: `usage: ${
      commandName('rerun')
    } <run> --from STEP [--input-patch JSON] [--to FLOW] [--actor NAME]
       ${commandName('rerun')} --from STEP <filter> [--input-patch JSON] [--to FLOW]

Reruns an ended run in place from STEP: that step and its dependents run again with
fresh attempts, other outputs kept. --input-patch merges a JSON object into the input.
--to FLOW moves each rerun run onto FLOW (another version of its alias, the fixed one)
in the same transaction, before any worker of its old version can claim a task of it.`,
    fork: `usage: ${commandName('fork')} <run> --from STEP [--input JSON] [--to FLOW] [--actor NAME]
       ${commandName('fork')} --from STEP <filter> [--to FLOW]

Forks a run from STEP: a new run keeping the outputs not depending on STEP, on the
same version or on FLOW (another version of its alias) when SQL proves it compatible.`,
    move: `usage: ${commandName('move')} <run> --to FLOW [--actor NAME]
       ${commandName('move')} --to FLOW <filter>

Moves a started run onto FLOW, another version of its alias, when SQL proves it
compatible; a task still running finishes on its old version, the rest runs on FLOW.`,
  }[action];
  return `${head}\n\n${FILTER}\n\nNeeds DATABASE_URL.`;
}

function json(name: string, text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--${name} ${JSON.stringify(text)} is invalid: pass JSON`);
  }
}

function date(name: string, text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) {
    throw new UsageError(`--${name} ${JSON.stringify(text)} is invalid: pass an ISO 8601 time`);
  }
  return d;
}

/** Runs one of the commands with the process's arguments. */
export async function runControlCommand(action: Action): Promise<never> {
  const usage = usageOf(action);
  return await runCommand(usage, async (sql, args) => {
    const { values, positionals } = parse(args, {
      from: { type: 'string' },
      to: { type: 'string' },
      'input-patch': { type: 'string' },
      input: { type: 'string' },
      actor: { type: 'string' },
      flow: { type: 'string' },
      status: { type: 'string' },
      error: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      apply: { type: 'boolean' },
      max: { type: 'string' },
      after: { type: 'string' },
    });
    if (action !== 'move' && values.from === undefined) {
      throw new UsageError('missing --from STEP: name the step the run runs again from');
    }
    if (action === 'move' && values.to === undefined) {
      throw new UsageError('missing --to FLOW: name the version the run goes onto');
    }
    const actor = values.actor ?? `${commandName(action)} (${Deno.env.get('USER') ?? 'cli'})`;
    const filtered = ['flow', 'status', 'error', 'since', 'until'].some((k) =>
      values[k as keyof typeof values] !== undefined
    );
    if (!filtered) {
      const runId = onePositional(positionals, 'run id', 'missing <run> (or a filter)');
      if (action === 'rerun') {
        const patch = json('input-patch', values['input-patch']);
        // With --to, the rerun and the move commit together (one transaction).
        const r = await sql.begin(async (tx) => {
          const done = await rerunRun(tx as unknown as Sql, runId, values.from!, {
            actor,
            ...(patch === undefined ? {} : { inputPatch: patch as Record<string, unknown> }),
          });
          if (values.to !== undefined) {
            await moveRun(tx as unknown as Sql, runId, values.to, { actor });
          }
          return done;
        });
        console.log(
          `rerun run ${r.runId} from ${values.from}` +
            (values.to === undefined ? '' : ` onto ${values.to}`) +
            `: ${r.steps} step(s) run again`,
        );
      } else if (action === 'fork') {
        const input = json('input', values.input);
        const r = await forkRun(sql, runId, values.from!, {
          actor,
          ...(input === undefined ? {} : { input }),
          ...(values.to === undefined ? {} : { toFlow: values.to }),
        });
        console.log(`forked run ${r.forkedFrom} from ${values.from} as ${r.runId}`);
      } else {
        const r = await moveRun(sql, runId, values.to!, { actor });
        console.log(
          r.changed
            ? `moved run ${r.runId} onto ${values.to}`
            : `run ${r.runId} is on ${values.to}`,
        );
      }
      return;
    }
    if (positionals.length > 0) {
      throw new UsageError(`give <run> or a filter, not both: ${positionals.join(' ')}`);
    }
    const max = values.max === undefined ? 100 : Number(values.max);
    if (!Number.isInteger(max) || max < 1 || max > 10000) {
      throw new UsageError(`--max ${JSON.stringify(values.max)} is invalid: use 1 to 10000`);
    }
    const status = values.status;
    if (status !== undefined && !['started', 'completed', 'failed', 'cancelled'].includes(status)) {
      throw new UsageError(
        `--status ${
          JSON.stringify(status)
        } is invalid: use started, completed, failed or cancelled`,
      );
    }
    const input = json(
      action === 'rerun' ? 'input-patch' : 'input',
      values['input-patch'] ?? values.input,
    );
    if (action === 'rerun' && values.to !== undefined) {
      await rerunOnto(sql, values, actor, max, status, input);
      return;
    }
    const rows = await bulkRunAction(sql, action, {
      actor,
      apply: values.apply ?? false,
      maxRuns: max,
      ...(values.flow === undefined ? {} : { flowOrAlias: values.flow }),
      ...(status === undefined ? {} : { status: status as 'failed' }),
      ...(values.error === undefined ? {} : { errorContains: values.error }),
      ...(values.since === undefined ? {} : { startedFrom: date('since', values.since) }),
      ...(values.until === undefined ? {} : { startedBefore: date('until', values.until) }),
      ...(values.from === undefined ? {} : { fromStep: values.from }),
      ...(values.to === undefined ? {} : { toFlow: values.to }),
      ...(values.after === undefined ? {} : { afterRun: values.after }),
      ...(input === undefined ? {} : { input }),
    });
    const counts = new Map<string, number>();
    for (const r of rows) {
      counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
      if (r.outcome === 'refused' || r.outcome === 'busy') {
        console.log(`${r.runId}: ${r.outcome}: ${r.detail}`);
      }
    }
    const summary = [...counts].map(([k, n]) => `${n} ${k}`).join(', ') || 'no run matched';
    console.log(`${values.apply ? '' : 'dry run: '}${summary}`);
    if (rows.length === max) {
      console.log(`more may match: go on with --after ${rows[rows.length - 1].runId}`);
    }
  });
}

/** A dry run's end: the transaction rolls back with what it counted. */
class DryRun extends Error {}

/**
 * `rerun <filter> --to FLOW`: the matched runs are rerun and then moved onto FLOW in one
 * transaction (a subtransaction per move, so one run's refused move is its own answer and leaves
 * it rerun on its version); a dry run does the same and rolls it all back, so its counts are exact.
 */
async function rerunOnto(
  sql: Sql,
  values: Record<string, string | boolean | undefined>,
  actor: string,
  max: number,
  status: string | undefined,
  input: unknown,
): Promise<void> {
  const to = values.to as string;
  const counts = new Map<string, number>();
  const lines: string[] = [];
  let last: string | undefined;
  let matched = 0;
  const work = async (tx: Sql) => {
    const rows = await bulkRunAction(tx, 'rerun', {
      actor,
      apply: true,
      maxRuns: max,
      ...(values.flow === undefined ? {} : { flowOrAlias: values.flow as string }),
      ...(status === undefined ? {} : { status: status as 'failed' }),
      ...(values.error === undefined ? {} : { errorContains: values.error as string }),
      ...(values.since === undefined ? {} : { startedFrom: date('since', values.since as string) }),
      ...(values.until === undefined
        ? {}
        : { startedBefore: date('until', values.until as string) }),
      fromStep: values.from as string,
      ...(values.after === undefined ? {} : { afterRun: values.after as string }),
      ...(input === undefined ? {} : { input }),
    });
    matched = rows.length;
    last = rows.at(-1)?.runId;
    for (const r of rows) {
      let outcome = r.outcome;
      if (r.outcome === 'rerun') {
        try {
          await (tx as unknown as postgres.TransactionSql).savepoint((sp) =>
            moveRun(sp as unknown as Sql, r.runId, to, { actor })
          );
          outcome = `rerun onto ${to}`;
        } catch (e) {
          outcome = 'rerun, move refused';
          lines.push(`${r.runId}: move refused: ${(e as Error).message}`);
        }
      } else if (r.outcome === 'refused' || r.outcome === 'busy') {
        lines.push(`${r.runId}: ${r.outcome}: ${r.detail}`);
      }
      counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    }
    if (!values.apply) throw new DryRun();
  };
  try {
    await sql.begin((tx) => work(tx as unknown as Sql));
  } catch (e) {
    if (!(e instanceof DryRun)) throw e;
  }
  for (const line of lines) console.log(line);
  const summary = [...counts].map(([k, n]) => `${n} ${values.apply ? k : `would ${k}`}`)
    .join(', ') || 'no run matched';
  console.log(`${values.apply ? '' : 'dry run: '}${summary}`);
  if (matched === max && last) console.log(`more may match: go on with --after ${last}`);
}
