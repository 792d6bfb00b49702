/**
 * `deno task schedule <command> …`: the schedules of the SQL core (docs/design/schedules.md).
 *
 * ```sh
 * deno task schedule list
 * deno task schedule create nightly --alias report --cron '0 3 * * *' --time-zone Europe/Berlin
 * deno task schedule update nightly --cron '30 3 * * *' --overlap queue
 * deno task schedule pause nightly | resume nightly | delete nightly
 * deno task schedule backfill nightly --from 2026-11-01T00:00:00Z --to 2026-11-03T00:00:00Z
 * deno task schedule tick
 * ```
 *
 * Needs `DATABASE_URL`. Exit codes: 0 done, 1 refused by the SQL core (with its rule), 2 bad
 * usage.
 *
 * @module
 */
import {
  backfillSchedule,
  createSchedule,
  deleteSchedule,
  listSchedules,
  pauseSchedule,
  resumeSchedule,
  runSchedules,
  type Schedule,
  type ScheduleCatchUp,
  type ScheduleOverlap,
  updateSchedule,
} from '../lib/ops.ts';
import { onePositional, parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('schedule')} <command> [<name>] [options]

Commands (DATABASE_URL):
  list                         every schedule: cron, time zone, next tick, last tick and its run
  create <name> --alias A --cron 'M H DOM MON DOW' [--time-zone Z] [--input JSON]
                [--overlap skip|queue|cancel_previous] [--catch-up none|latest|all]
                [--catch-up-limit N]
  update <name> [the options of create] (options left out keep their value)
  pause <name> | resume <name> | delete <name>
  backfill <name> --from ISO --to ISO   start the runs of the ticks in that range (at most 1000
                                        ticks in 366 days)
  tick                         run one scheduler tick now (switchyard.run_schedules)`;

const OPTIONS = {
  alias: { type: 'string' },
  cron: { type: 'string' },
  'time-zone': { type: 'string' },
  input: { type: 'string' },
  overlap: { type: 'string' },
  'catch-up': { type: 'string' },
  'catch-up-limit': { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
} as const;

function line(s: Schedule): string {
  const last = s.lastTick
    ? `last ${s.lastTick.tickAt.toISOString()} ${s.lastTick.outcome}` +
      (s.lastTick.runStatus ? ` (run ${s.lastTick.runId} ${s.lastTick.runStatus})` : '') +
      (s.lastTick.error ? `: ${s.lastTick.error}` : '')
    : 'no tick yet';
  return `${s.name}  ${s.enabled ? 'enabled' : 'paused'}  ${s.alias}  '${s.cron}' ${s.timeZone}  ` +
    `next ${s.nextTickAt?.toISOString() ?? 'none within a year'}  ${last}  ` +
    `(overlap ${s.overlap}, catch-up ${s.catchUp}; ${s.missedTicks} missed, ${s.skippedTicks} skipped)`;
}

function date(value: string | undefined, option: string): Date {
  const d = value ? new Date(value) : new Date(NaN);
  if (Number.isNaN(d.getTime())) {
    throw new UsageError(`--${option} ${JSON.stringify(value ?? '')} is not an ISO date-time`);
  }
  return d;
}

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, OPTIONS);
  const [command, ...rest] = positionals;
  if (!command) throw new UsageError('missing <command>: list, create, update, pause, ...');
  if (command === 'list') {
    const all = await listSchedules(sql);
    if (all.length === 0) console.log('no schedules');
    for (const s of all) console.log(line(s));
    return;
  }
  if (command === 'tick') {
    console.log(`started ${await runSchedules(sql)} run(s)`);
    return;
  }
  const name = onePositional(
    rest,
    'schedule name',
    `missing <name>: name the schedule to ${command}`,
  );
  let input: unknown;
  if (values.input !== undefined) {
    try {
      input = JSON.parse(values.input);
    } catch {
      throw new UsageError(`--input is not JSON: ${values.input.slice(0, 80)}`);
    }
  }
  let catchUpLimit: number | undefined;
  if (values['catch-up-limit'] !== undefined) {
    catchUpLimit = Number(values['catch-up-limit']);
    if (!Number.isInteger(catchUpLimit)) {
      throw new UsageError(`--catch-up-limit ${values['catch-up-limit']} is not a whole number`);
    }
  }
  const fields = {
    alias: values.alias,
    cron: values.cron,
    timeZone: values['time-zone'],
    input,
    overlap: values.overlap as ScheduleOverlap | undefined,
    catchUp: values['catch-up'] as ScheduleCatchUp | undefined,
    catchUpLimit,
  };
  switch (command) {
    case 'create': {
      if (!fields.alias || !fields.cron) {
        throw new UsageError('create needs --alias and --cron, e.g. --cron "0 3 * * *"');
      }
      console.log(
        `created ${
          line(
            await createSchedule(sql, name, { ...fields, alias: fields.alias, cron: fields.cron }),
          )
        }`,
      );
      return;
    }
    case 'update':
      console.log(`updated ${line(await updateSchedule(sql, name, fields))}`);
      return;
    case 'pause':
      console.log(`paused ${line(await pauseSchedule(sql, name))}`);
      return;
    case 'resume':
      console.log(`resumed ${line(await resumeSchedule(sql, name))}`);
      return;
    case 'delete':
      console.log(
        (await deleteSchedule(sql, name)) ? `deleted schedule ${name}` : `no schedule ${name}`,
      );
      return;
    case 'backfill': {
      const n = await backfillSchedule(sql, name, date(values.from, 'from'), date(values.to, 'to'));
      console.log(`backfill of ${name}: started ${n} run(s)`);
      return;
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}: see --help`);
  }
});
