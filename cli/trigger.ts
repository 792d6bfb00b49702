/**
 * `switchyard trigger <command> …`: row triggers (docs/design/ingestion.md), writes to the app's
 * own tables that start runs in the writer's transaction.
 *
 * ```sh
 * switchyard trigger add new_signup --table public.signups --alias onboarding \
 *   --columns id,email --key row --mode dedupe --backfill      # writes a migration
 * switchyard trigger remove new_signup                          # writes a migration
 * switchyard trigger list                                       # DATABASE_URL
 * switchyard trigger backfill new_signup --batch-size 1000      # DATABASE_URL
 * ```
 *
 * `add` and `remove` write `supabase/migrations/<timestamp>_row_trigger_<name>.sql` (or
 * `…_remove_row_trigger_<name>.sql`) in the project (`--project DIR`, else the nearest directory
 * upward with `supabase/config.toml`): the declaration is part of the app's schema, applied by
 * `supabase db push` in the migration role's transaction, which checks it and creates the
 * trigger. Exit codes: 0 done, 1 refused by the SQL core (with its rule), 2 bad usage.
 *
 * @module
 */
import { join, relative } from 'node:path';
import {
  backfillRowTrigger,
  listRowTriggers,
  removeRowTriggerMigration,
  type RowTrigger,
  type RowTriggerDeclaration,
  type RowTriggerEvent,
  type RowTriggerKeyMode,
  rowTriggerMigration,
} from '../lib/ops.ts';
import { commandArgs } from './_help.ts';
import { commandName, findProject, ProjectNotFoundError } from './_invocation.ts';
import { onePositional, parse, runCommand, UsageError } from './_operator_cli.ts';
import { migrationTimestamp, timestampsAfter } from './_util.ts';

const USAGE = `usage: ${commandName('trigger')} <command> [<name>] [options]

Commands:
  add <name> --table T --alias A [--events insert,update,delete] [--columns a,b | --input EXPR]
             [--when EXPR] [--key row|COLUMN --mode singleton|dedupe|debounce [--ttl S]
             [--delay S] [--max-delay S]] [--backfill] [--batch-by table|COLUMN|EXPR]
             [--project DIR]
                          write a migration declaring that writes to table T start runs of A
                          (with --batch-by: join batches of A's batched flow)
  remove <name> [--project DIR]   write a migration removing the declaration
  list                            every declaration and its backfill (DATABASE_URL)
  backfill <name> [--batch-size N] [--max-batches N]
                                  start the runs of the rows the table had, batch by batch;
                                  resumes where a killed backfill stopped (DATABASE_URL)`;

const OPTIONS = {
  table: { type: 'string' },
  alias: { type: 'string' },
  events: { type: 'string' },
  columns: { type: 'string' },
  input: { type: 'string' },
  when: { type: 'string' },
  key: { type: 'string' },
  'batch-by': { type: 'string' },
  mode: { type: 'string' },
  ttl: { type: 'string' },
  delay: { type: 'string' },
  'max-delay': { type: 'string' },
  backfill: { type: 'boolean' },
  project: { type: 'string' },
  'batch-size': { type: 'string' },
  'max-batches': { type: 'string' },
} as const;

function wholeNumber(option: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${option} ${JSON.stringify(value)} is not a whole number`);
  }
  return Number(value);
}

function list(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(',').map((s) => s.trim());
}

function line(t: RowTrigger): string {
  const input = t.inputColumns
    ? `input ${t.inputColumns.join(',')}`
    : t.inputExpression
    ? `input ${t.inputExpression}`
    : 'input the row';
  const key = t.keyBy ? `  key ${t.keyBy} ${t.mode}` : '';
  const batch = t.batchBy ? `  batch by ${t.batchBy}` : '';
  const backfill = t.backfill
    ? `  backfill ${t.backfill.state} (${t.backfill.rows} rows, ${t.backfill.runs} runs, ` +
      `${t.backfill.batches} batches)`
    : '';
  return `${t.name}  ${t.events.join(',')} on ${t.table} -> ${t.alias}  ${input}` +
    `${t.condition ? `  when ${t.condition}` : ''}${key}${batch}${backfill}` +
    `${t.installed ? '' : '  TRIGGER MISSING from the table'}`;
}

/** Writes a new migration named `<timestamp>_<suffix>` into the project; returns its path. */
async function writeMigration(project: string | undefined, suffix: string, content: string) {
  let dir: string;
  try {
    dir = findProject(project);
  } catch (e) {
    if (e instanceof ProjectNotFoundError) throw new UsageError(e.message);
    throw e;
  }
  const migrations = join(dir, 'supabase', 'migrations');
  await Deno.mkdir(migrations, { recursive: true });
  const names = [...Deno.readDirSync(migrations)].map((e) => e.name)
    .filter((n) => /^\d{14}_.*\.sql$/.test(n)).sort();
  const newestName = names.at(-1);
  const at = await timestampsAfter({
    newest: newestName?.slice(0, 14),
    newestName,
    count: 1,
    now: new Date(),
    what: 'the row trigger migration',
    refuse: (message) => new UsageError(message),
  });
  const path = join(migrations, `${migrationTimestamp(at)}_${suffix}.sql`);
  await Deno.writeTextFile(path, content, { createNew: true });
  return relative(dir, path);
}

async function writeCommand(args: string[]): Promise<never> {
  let code = 0;
  try {
    const { values, positionals } = parse(args, OPTIONS);
    const [command, ...rest] = positionals;
    const name = onePositional(rest, 'trigger name', `missing <name>: name the row trigger`);
    if (!/^[a-z][a-z0-9_]{0,46}$/.test(name)) {
      throw new UsageError(
        `row trigger name ${JSON.stringify(name.slice(0, 80))} is invalid: use lower-case ` +
          'letters, digits and underscores, starting with a letter (^[a-z][a-z0-9_]{0,46}$)',
      );
    }
    if (command === 'remove') {
      const path = await writeMigration(
        values.project,
        `remove_row_trigger_${name}`,
        removeRowTriggerMigration(name),
      );
      console.log(`wrote ${path}: apply it with \`supabase db push\` (or db:push)`);
    } else {
      if (!values.table || !values.alias) {
        throw new UsageError('add needs --table and --alias, e.g. --table public.signups');
      }
      if (values.columns !== undefined && values.input !== undefined) {
        throw new UsageError('give --columns or --input, not both');
      }
      const declaration: RowTriggerDeclaration = {
        name,
        table: values.table,
        alias: values.alias,
        events: list(values.events) as RowTriggerEvent[] | undefined,
        inputColumns: list(values.columns),
        inputExpression: values.input,
        condition: values.when,
        keyBy: values.key,
        mode: values.mode as RowTriggerKeyMode | undefined,
        ttl: wholeNumber('ttl', values.ttl),
        delay: wholeNumber('delay', values.delay),
        maxDelay: wholeNumber('max-delay', values['max-delay']),
        backfill: values.backfill,
        batchBy: values['batch-by'],
      };
      const path = await writeMigration(
        values.project,
        `row_trigger_${name}`,
        rowTriggerMigration(declaration),
      );
      console.log(
        `wrote ${path}: apply it with \`supabase db push\` (or db:push); the SQL core checks ` +
          'the declaration then and refuses a bad one with its rule' +
          (values.backfill ? `; then run \`${commandName('trigger')} backfill ${name}\`` : ''),
      );
    }
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`error: ${e.message}\n\n${USAGE}`);
      code = 2;
    } else {
      console.error(`error: ${(e as Error)?.message ?? String(e)}`);
      code = 1;
    }
  }
  Deno.exit(code);
}

const args = commandArgs();
const first = args.find((a) => !a.startsWith('-'));
if ((first === 'add' || first === 'remove') && !args.includes('--help') && !args.includes('-h')) {
  await writeCommand(args);
}

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, OPTIONS);
  const [command, ...rest] = positionals;
  if (!command) throw new UsageError('missing <command>: add, remove, list or backfill');
  if (command === 'list') {
    const all = await listRowTriggers(sql);
    if (all.length === 0) console.log('no row triggers');
    for (const t of all) console.log(line(t));
    return;
  }
  if (command === 'backfill') {
    const name = onePositional(rest, 'trigger name', 'missing <name>: name the row trigger');
    const last = await backfillRowTrigger(sql, name, {
      batchSize: wholeNumber('batch-size', values['batch-size']),
      maxBatches: wholeNumber('max-batches', values['max-batches']),
      onBatch: (b) =>
        console.log(
          `batch: ${b.rows} rows, ${b.runs} runs (total ${b.totalRows} rows, ${b.totalRuns} runs)` +
            `${b.done ? ', done' : ''}`,
        ),
    });
    console.log(
      last.done
        ? `backfill of ${name} done: ${last.totalRows} rows, ${last.totalRuns} runs`
        : `backfill of ${name} stopped after --max-batches: run it again to resume`,
    );
    return;
  }
  throw new UsageError(`unknown command ${JSON.stringify(command)}: see --help`);
});
