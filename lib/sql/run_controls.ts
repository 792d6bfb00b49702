/**
 * An operator's controls of single runs and of many (docs/design/rerun.md): rerun in place
 * from a step (`switchyard.rerun_run`), fork (`fork_run`), move onto a newer version
 * (`move_run`), pause and resume (`pause_run`, `resume_run`), and each over a filter
 * (`bulk_run_action`). The SQL core decides and proves everything; these calls check their
 * arguments' types, name the values they refuse, and map the core's refusals
 * (docs/design/errors.md).
 *
 * @module
 */
import { SwitchyardError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { assertJson } from '../dsl/json.ts';
import { call, sqlOf, type SqlSource } from './source.ts';
import { assertUuid, repeatable } from './runs.ts';

/** Who did it, recorded in the action's run event (default: the database role). */
export interface ActorOption {
  /** Recorded as `by` in the run event; default the session's database role. */
  actor?: string;
}

/** Options of {@linkcode rerunRun}. */
export interface RerunOptions extends ActorOption {
  /** A JSON object merged into the run's input at the top level for the steps that run again. */
  inputPatch?: Record<string, unknown>;
}

/** Options of {@linkcode forkRun}. */
export interface ForkOptions extends ActorOption {
  /** The fork's input; default the original's. */
  input?: unknown;
  /** Another concrete version (or alias) of the original's alias; default the original's flow. */
  toFlow?: string;
}

/** What {@linkcode rerunRun} did. */
export interface RerunResult {
  /** The run. */
  runId: string;
  /** How many steps run again. */
  steps: number;
}

/** What {@linkcode forkRun} did. */
export interface ForkResult {
  /** The new run. */
  runId: string;
  /** The run it was forked from. */
  forkedFrom: string;
}

/** What {@linkcode moveRun}, {@linkcode pauseRun} and {@linkcode resumeRun} did. */
export interface RunControlResult {
  /** The run. */
  runId: string;
  /** False when nothing changed (already on that version, already paused, not paused). */
  changed: boolean;
}

function assertText(what: string, name: string, value: unknown, optional: boolean): void {
  if (optional && value === undefined) return;
  if (typeof value !== 'string' || value.trim() === '' || value.length > 1000) {
    throw new SwitchyardError(
      `${what}: ${name} ${describeValue(value)} is invalid: pass a non-empty string of at most ` +
        '1000 characters',
    );
  }
}

function assertRun(what: string, runId: unknown): asserts runId is string {
  if (runId === undefined) {
    throw new SwitchyardError(`${what}: runId is missing: pass the run's id`);
  }
  assertUuid(what, 'runId', runId);
}

/**
 * Reruns an ended run in place from `fromStep` (`switchyard.rerun_run`): that step and every
 * step depending on it run again with fresh attempts (a late answer of an older attempt is
 * ignored); every other completed output is kept.
 *
 * @throws {OperationError} `22023` (`run_unknown`, `step_unknown`, `input_patch_not_object`) or
 * `55000` (`run_not_ended`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { rerunRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const { steps } = await rerunRun(client, crypto.randomUUID(), 'charge', {
 *   inputPatch: { retryCard: true },
 * });
 * console.log(`${steps} step(s) run again`);
 * await client.close();
 * ```
 */
export async function rerunRun(
  source: SqlSource,
  runId: string,
  fromStep: string,
  options: RerunOptions = {},
): Promise<RerunResult> {
  assertRun('rerun', runId);
  assertText('rerun', 'fromStep', fromStep, false);
  assertText('rerun', 'actor', options.actor, true);
  const patch = options.inputPatch;
  if (patch !== undefined) {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
      throw new SwitchyardError(
        `rerun: inputPatch ${describeValue(patch)} is invalid: pass a JSON object, merged into ` +
          "the run's input at the top level",
      );
    }
    assertJson(patch, 'inputPatch');
  }
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    repeatable(() =>
      sql<{ steps: number }[]>`
        select switchyard.rerun_run(${runId}::uuid, ${fromStep},
          ${patch === undefined ? null : sql.json(patch as never)}::jsonb,
          ${options.actor ?? null}) as steps`
    ));
  return { runId, steps: row.steps };
}

/**
 * Forks a run from `fromStep` (`switchyard.fork_run`): a new run with the original's lineage that
 * keeps the outputs of the steps not depending on `fromStep` and runs the rest, on the same
 * version or on `toFlow` when the SQL core proves it compatible.
 *
 * @throws {OperationError} `22023` (`run_unknown`, `step_unknown`, `flow_other_alias`,
 * `version_incompatible` with `detail.problems`, `flow_or_alias_unknown`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { forkRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const fork = await forkRun(client, crypto.randomUUID(), 'charge', { toFlow: 'checkoutV2' });
 * console.log(`forked as ${fork.runId}`);
 * await client.close();
 * ```
 */
export async function forkRun(
  source: SqlSource,
  runId: string,
  fromStep: string,
  options: ForkOptions = {},
): Promise<ForkResult> {
  assertRun('fork', runId);
  assertText('fork', 'fromStep', fromStep, false);
  assertText('fork', 'toFlow', options.toFlow, true);
  assertText('fork', 'actor', options.actor, true);
  if (options.input !== undefined) assertJson(options.input, 'input');
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    repeatable(() =>
      sql<{ id: string }[]>`
        select switchyard.fork_run(${runId}::uuid, ${fromStep},
          ${options.input === undefined ? null : sql.json(options.input as never)}::jsonb,
          ${options.toFlow ?? null}, ${options.actor ?? null})::text as id`
    ));
  return { runId: row.id, forkedFrom: runId };
}

/**
 * Moves a started run onto another concrete version of its alias (`switchyard.move_run`) when
 * the SQL core proves it: completed and started steps kept, the rest on the new shape. A task
 * running when the run moves finishes on the worker of its old version; its answer counts, and
 * what follows it (or its retry) runs on the new version.
 *
 * @throws {OperationError} `22023` (`run_unknown`, `flow_other_alias`, `version_incompatible`) or
 * `55000` (`run_not_started`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { moveRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const { changed } = await moveRun(client, crypto.randomUUID(), 'checkoutV2');
 * console.log(changed ? 'moved' : 'already there');
 * await client.close();
 * ```
 */
export async function moveRun(
  source: SqlSource,
  runId: string,
  toFlow: string,
  options: ActorOption = {},
): Promise<RunControlResult> {
  assertRun('move', runId);
  assertText('move', 'toFlow', toFlow, false);
  assertText('move', 'actor', options.actor, true);
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    repeatable(() =>
      sql<{ moved: boolean }[]>`
        select switchyard.move_run(${runId}::uuid, ${toFlow}, ${options.actor ?? null}) as moved`
    ));
  return { runId, changed: row.moved };
}

/**
 * Pauses a started run (`switchyard.pause_run`): none of its tasks is claimed until
 * {@linkcode resumeRun}; tasks a worker runs finish.
 *
 * @throws {OperationError} `22023` (`run_unknown`) or `55000` (`run_not_started`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { pauseRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * await pauseRun(client, crypto.randomUUID(), { reason: 'looking at the card API' });
 * await client.close();
 * ```
 */
export async function pauseRun(
  source: SqlSource,
  runId: string,
  options: ActorOption & { reason?: string } = {},
): Promise<RunControlResult> {
  assertRun('pause', runId);
  assertText('pause', 'reason', options.reason, true);
  assertText('pause', 'actor', options.actor, true);
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    repeatable(() =>
      sql<{ paused: boolean }[]>`
        select switchyard.pause_run(${runId}::uuid, ${options.reason ?? null},
                                    ${options.actor ?? null}) as paused`
    ));
  return { runId, changed: row.paused };
}

/**
 * Resumes a paused run (`switchyard.resume_run`): its queued tasks are claimable at once, and a
 * step that ran out of attempts under `whenExhausted: 'pause'` is retried.
 *
 * @throws {OperationError} `22023` (`run_unknown`) or `55000` (`run_not_started`)
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { resumeRun } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const { requeued } = await resumeRun(client, crypto.randomUUID());
 * console.log(`${requeued} exhausted task(s) queued again`);
 * await client.close();
 * ```
 */
export async function resumeRun(
  source: SqlSource,
  runId: string,
  options: ActorOption = {},
): Promise<RunControlResult & { requeued: number }> {
  assertRun('resume', runId);
  assertText('resume', 'actor', options.actor, true);
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    repeatable(() =>
      sql<{ paused: boolean; requeued: number }[]>`
        select r.paused_at is not null as paused,
               switchyard.resume_run(${runId}::uuid, ${options.actor ?? null}) as requeued
          from (select (select paused_at from switchyard.runs
                         where run_id = ${runId}::uuid) as paused_at) r`
    ));
  return { runId, changed: row.paused, requeued: row.requeued };
}

/** The action {@linkcode bulkRunAction} takes on each run. */
export type BulkAction = 'rerun' | 'fork' | 'move' | 'pause' | 'resume';

/** Which runs {@linkcode bulkRunAction} acts on, and how (every field optional but the action's). */
export interface BulkRunOptions extends ActorOption {
  /** Runs of this concrete flow, started as this name, or of any version of this alias. */
  flowOrAlias?: string;
  /** Runs with this status. */
  status?: 'started' | 'completed' | 'failed' | 'cancelled';
  /** Runs started at or after this time. */
  startedFrom?: Date;
  /** Runs started before this time. */
  startedBefore?: Date;
  /** Runs whose error contains this text (case-insensitive). */
  errorContains?: string;
  /** `rerun` and `fork`: the step they run again from. */
  fromStep?: string;
  /** `fork` and `move`: the version they go onto. */
  toFlow?: string;
  /** `rerun`: the input patch; `fork`: the fork's whole input. */
  input?: unknown;
  /** Act for real; default false: a dry run that counts what would change and changes nothing. */
  apply?: boolean;
  /** At most this many runs per call (1 to 10000, default 100). */
  maxRuns?: number;
  /** Go on after this run id: the last one a previous call answered. */
  afterRun?: string;
}

/** One run a bulk action matched, and what happened to it. */
export interface BulkRunOutcome {
  /** The run. */
  runId: string;
  /**
   * `rerun`, `forked`, `moved`, `paused`, `resumed`, `unchanged`; `would …` in a dry run;
   * `refused` (the run's refusal in `detail`) or `busy` (another bulk call holds it).
   */
  outcome: string;
  /** The refusal, the fork's id, the steps rerun, or null. */
  detail: string | null;
}

/**
 * Does one action over the runs a filter matches (`switchyard.bulk_run_action`), bounded and
 * resumable: pass the last `runId` answered as `afterRun` to go on. A dry run (the default)
 * counts what would change; a repeat is idempotent; two calls at once act on each run once.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { bulkRunAction } from '../ops.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const would = await bulkRunAction(client, 'rerun', {
 *   flowOrAlias: 'checkout',
 *   status: 'failed',
 *   errorContains: 'card declined',
 *   fromStep: 'charge',
 * });
 * console.log(`${would.length} run(s) would be rerun`);
 * await client.close();
 * ```
 */
export async function bulkRunAction(
  source: SqlSource,
  action: BulkAction,
  options: BulkRunOptions = {},
): Promise<BulkRunOutcome[]> {
  if (!['rerun', 'fork', 'move', 'pause', 'resume'].includes(action)) {
    throw new SwitchyardError(
      `bulk: action ${describeValue(action)} is invalid: use rerun, fork, move, pause or resume`,
    );
  }
  for (const name of ['flowOrAlias', 'errorContains', 'fromStep', 'toFlow', 'actor'] as const) {
    assertText('bulk', name, options[name], true);
  }
  for (const name of ['startedFrom', 'startedBefore'] as const) {
    const value = options[name];
    if (value !== undefined && (!(value instanceof Date) || Number.isNaN(value.getTime()))) {
      throw new SwitchyardError(`bulk: ${name} ${describeValue(value)} is invalid: pass a Date`);
    }
  }
  if (options.apply !== undefined && typeof options.apply !== 'boolean') {
    throw new SwitchyardError(
      `bulk: apply ${describeValue(options.apply)} is invalid: pass true or false`,
    );
  }
  if (options.afterRun !== undefined) assertUuid('bulk', 'afterRun', options.afterRun);
  if (options.input !== undefined) assertJson(options.input, 'input');
  const sql = sqlOf(source);
  const rows = await call(
    sql,
    () =>
      sql<{ run_id: string; outcome: string; detail: string | null }[]>`
      select run_id::text, outcome, detail from switchyard.bulk_run_action(
        ${action}, ${options.flowOrAlias ?? null}, ${options.status ?? null},
        ${options.startedFrom ?? null}::timestamptz, ${options.startedBefore ?? null}::timestamptz,
        ${options.errorContains ?? null}, ${options.fromStep ?? null}, ${options.toFlow ?? null},
        ${options.input === undefined ? null : sql.json(options.input as never)}::jsonb,
        ${!(options.apply ?? false)}, ${options.maxRuns ?? 100}::int,
        ${options.afterRun ?? null}::uuid, ${options.actor ?? null})`,
  );
  return rows.map((r) => ({ runId: r.run_id, outcome: r.outcome, detail: r.detail }));
}
