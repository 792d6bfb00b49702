/**
 * A run as a fixture (docs/design/clock.md#export-and-replay): everything a test engine needs to
 * replay a run
 * from any database — its input and version, each step's state and output, each task's attempts,
 * error and output, the signals its waits received, and its events — read in one statement, as
 * JSON that survives a file.
 *
 * @module
 */
import { SwitchyardError } from '../errors.ts';
import { describeValue } from '../_describe_value.ts';
import { call, sqlOf, type SqlSource } from './source.ts';

/** The format a {@linkcode RunRecord} is written in; a reader refuses any other. */
export const RUN_RECORD_FORMAT = 'switchyard-run/1';

/**
 * One task of a recorded step: a map step has one per element, any other step one.
 *
 * @example
 * ```ts
 * import type { RunRecordTask } from './run_export.ts';
 *
 * const task: RunRecordTask = {
 *   taskIndex: 0,
 *   status: 'completed',
 *   attempts: 2,
 *   maxAttempts: 3,
 *   error: 'Error: HTTP 503',
 *   output: { receipt: 'r-1' },
 * };
 * ```
 */
export interface RunRecordTask {
  /** The element's index (0 for an ordinary step). */
  readonly taskIndex: number;
  /** `queued`, `started`, `completed`, `failed`, `skipped` or `cancelled`. */
  readonly status: string;
  /** Attempts it used. */
  readonly attempts: number;
  /** Attempts it had. */
  readonly maxAttempts: number;
  /** Its last error (of a failed attempt), or null. */
  readonly error: string | null;
  /** Its output once completed, else null. */
  readonly output: unknown;
}

/**
 * One recorded step.
 *
 * @example
 * ```ts
 * import type { RunRecordStep } from './run_export.ts';
 *
 * const step: RunRecordStep = {
 *   stepSlug: 'approve',
 *   status: 'completed',
 *   output: { by: 'ana' },
 *   skipReason: null,
 *   signal: { payload: { by: 'ana' }, key: null, at: '2030-01-03T10:00:00.000Z' },
 *   tasks: [],
 * };
 * ```
 */
export interface RunRecordStep {
  /** The step. */
  readonly stepSlug: string;
  /** `created`, `started`, `completed`, `failed`, `skipped` or `cancelled`. */
  readonly status: string;
  /** Its output once completed (a map step's: the elements' outputs in order), else null. */
  readonly output: unknown;
  /** Why it was skipped, or null. */
  readonly skipReason: string | null;
  /** The signal a wait step received, or null. */
  readonly signal:
    | { readonly payload: unknown; readonly key: string | null; readonly at: string }
    | null;
  /** Its tasks (none for a wait, sleep or flow step). */
  readonly tasks: readonly RunRecordTask[];
}

/**
 * One recorded event of the run.
 *
 * @example
 * ```ts
 * import type { RunRecordEvent } from './run_export.ts';
 *
 * const e: RunRecordEvent = { eventId: 7, stepSlug: 'charge', event: 'completed', at: '2030-01-03T10:00:00.000Z' };
 * ```
 */
export interface RunRecordEvent {
  /** Its id, increasing within the run. */
  readonly eventId: number;
  /** Its step, or null for the run's own. */
  readonly stepSlug: string | null;
  /** What happened (`started`, `completed`, `waiting`, `progress`, ...). */
  readonly event: string;
  /** When, as ISO 8601. */
  readonly at: string;
  /** A progress event's task index. */
  readonly taskIndex?: number;
  /** A progress event's data. */
  readonly data?: unknown;
}

/**
 * A run exported from a database (`exportRun`): the fixture a test engine replays
 * (`engine.replay`). Plain JSON: write it with `JSON.stringify`, read it back with `JSON.parse`.
 *
 * @example
 * ```ts
 * import type { RunRecord } from './run_export.ts';
 *
 * function version(record: RunRecord): string {
 *   return `${record.run.startedAs} -> ${record.run.flowSlug} (core ${record.coreVersion})`;
 * }
 * ```
 */
export interface RunRecord {
  /** `switchyard-run/1`. */
  readonly format: typeof RUN_RECORD_FORMAT;
  /** The SQL core release of the database it came from. */
  readonly coreVersion: string;
  /** When it was exported (the database's clock), as ISO 8601. */
  readonly exportedAt: string;
  /** The run itself. */
  readonly run: {
    readonly runId: string;
    /** Its concrete flow: the version it ran. */
    readonly flowSlug: string;
    /** The alias (or slug) it was started as. */
    readonly startedAs: string;
    readonly status: string;
    readonly input: unknown;
    readonly output: unknown;
    readonly error: string | null;
    readonly priority: number;
    readonly startedAt: string;
    readonly completedAt: string | null;
    readonly failedAt: string | null;
    readonly cancelledAt: string | null;
    readonly deadlineAt: string | null;
  };
  /** Its steps, in the order the flow added them. */
  readonly steps: readonly RunRecordStep[];
  /** Its events, in order. */
  readonly events: readonly RunRecordEvent[];
}

/**
 * Reads run `runId` from a database as a {@linkcode RunRecord} (one statement, read-only). Throws a
 * `SwitchyardError` when there is no such run.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { exportRun } from './run_export.ts';
 *
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const record = await exportRun(client, '00000000-0000-4000-8000-000000000001').catch(() => null);
 * if (record) await Deno.writeTextFile('run.json', JSON.stringify(record, null, 2));
 * await client.close();
 * ```
 */
export async function exportRun(source: SqlSource, runId: string): Promise<RunRecord> {
  if (
    typeof runId !== 'string' ||
    !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(runId)
  ) {
    throw new SwitchyardError(
      `exportRun: runId ${describeValue(runId)} is invalid: use the UUID of a run`,
    );
  }
  const sql = sqlOf(source);
  const iso = (column: string) =>
    `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const [row] = await call(sql, () =>
    sql.unsafe<{ record: RunRecord | null }[]>(
      `select (select jsonb_build_object(
         'format', '${RUN_RECORD_FORMAT}',
         'coreVersion', switchyard.core_version(),
         'exportedAt', ${iso('switchyard.clock_now()')},
         'run', jsonb_build_object(
           'runId', r.run_id, 'flowSlug', r.flow_slug, 'startedAs', r.started_as,
           'status', r.status, 'input', r.input, 'output', r.output, 'error', r.error,
           'priority', r.priority, 'startedAt', ${iso('r.started_at')},
           'completedAt', ${iso('r.completed_at')}, 'failedAt', ${iso('r.failed_at')},
           'cancelledAt', ${iso('r.cancelled_at')}, 'deadlineAt', ${iso('r.deadline_at')}),
         'steps', coalesce((
           select jsonb_agg(jsonb_build_object(
                    'stepSlug', ss.step_slug, 'status', ss.status, 'output', ss.output,
                    'skipReason', ss.skip_reason,
                    'signal', (select jsonb_build_object('payload', s.payload, 'key', s.signal_key,
                                                         'at', ${iso('s.signalled_at')})
                                 from switchyard.run_signals s
                                where s.run_id = ss.run_id and s.step_slug = ss.step_slug),
                    'tasks', coalesce((
                      select jsonb_agg(jsonb_build_object(
                               'taskIndex', t.task_index, 'status', t.status,
                               'attempts', t.attempts_count, 'maxAttempts', t.max_attempts,
                               'error', t.error, 'output', t.output) order by t.task_index)
                        from switchyard.step_tasks t
                       where t.run_id = ss.run_id and t.step_slug = ss.step_slug), '[]'::jsonb))
                    order by st.step_index)
             from switchyard.step_states ss
             join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
            where ss.run_id = r.run_id), '[]'::jsonb),
         'events', coalesce((
           select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                    'eventId', e.event_id, 'event', e.event, 'at', ${iso('e.created_at')},
                    'taskIndex', e.task_index, 'data', e.data))
                    || jsonb_build_object('stepSlug', e.step_slug) order by e.event_id)
             from switchyard.run_events e where e.run_id = r.run_id), '[]'::jsonb))
         from switchyard.runs r where r.run_id = $1::uuid) as record`,
      [runId],
    ));
  if (!row.record) {
    throw new SwitchyardError(`exportRun: there is no run ${runId} in this database`);
  }
  return row.record;
}

/**
 * Checks that a value read back (a file's JSON) is a {@linkcode RunRecord} this kit reads; throws a
 * `SwitchyardError` naming what is wrong.
 *
 * @example
 * ```ts
 * import { assertRunRecord } from './run_export.ts';
 *
 * try {
 *   assertRunRecord({ format: 'something else' });
 * } catch (e) {
 *   console.log((e as Error).message);
 * }
 * ```
 */
export function assertRunRecord(value: unknown): asserts value is RunRecord {
  const record = value as Partial<RunRecord> | null;
  if (typeof record !== 'object' || record === null || record.format !== RUN_RECORD_FORMAT) {
    throw new SwitchyardError(
      `a run record must be an object with format "${RUN_RECORD_FORMAT}" (what exportRun ` +
        `writes); got ${
          typeof record === 'object' && record !== null
            ? `format ${describeValue(record.format)}`
            : describeValue(value)
        }`,
    );
  }
  const run = record.run as Partial<RunRecord['run']> | undefined;
  if (
    typeof run !== 'object' || run === null || typeof run.runId !== 'string' ||
    typeof run.flowSlug !== 'string' || !Array.isArray(record.steps) ||
    !Array.isArray(record.events)
  ) {
    throw new SwitchyardError(
      'a run record needs run.runId, run.flowSlug, steps and events (as exportRun writes them)',
    );
  }
}
