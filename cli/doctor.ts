/**
 * `deno task doctor [--project DIR] [--json] [--stuck-after SECONDS] [--keep-alive]`
 * (`npx switchyard doctor` from the npm package; without `--project`, the project the user is
 * in): checks a project and its database (`DATABASE_URL`) and prints each problem with the
 * command that fixes it, as the user runs the kit and their Supabase CLI
 * (`cli/_invocation.ts`; docs/design/local-runs.md#doctor):
 *
 * - `migrations`: migrations of `supabase/migrations/` not applied, or applied but missing from
 *   the project (`supabase_migrations.schema_migrations`, what `supabase db push` records);
 * - `sql core`: the database's SQL core older than the project's runtime needs, or newer than the
 *   project's migrations ship;
 * - `registry`: the registry cannot be loaded, or changed since it was compiled (what
 *   `deno task compile --check` says);
 * - `aliases`: an alias whose active version the registry lacks (workers refuse to start);
 * - `functions`: paused functions and why, disabled functions;
 * - `refusals`: refused worker starts since the function's last start (`switchyard.refusals`);
 * - `queues`: work on a queue with no queue function, and runs with a task queued longer than
 *   `--stuck-after` (default 300 seconds) on a queue with no live worker;
 * - `row triggers`: a declaration whose trigger is missing from its table (writes start nothing),
 *   with the migrations that declare it again; a backfill left unfinished is a notice;
 * - `webhooks`: a webhook function of the project (`serveWebhook`/`createWebhook` in its
 *   `index.ts`) whose secret variable is set neither in this environment nor in
 *   `supabase/functions/.env`: a problem on a local database (every delivery is answered 500
 *   `webhook_config`), a notice on a remote one (its secret is set with `supabase secrets set`,
 *   which the doctor cannot read);
 * - `keep-alive`: pg_net or pg_cron missing, no (or an inactive or failing) keep-alive job,
 *   functions never woken, wakes answered with an error (`switchyard.wake_failures`). Checked
 *   when the database is not local, or with `--keep-alive`: locally `deno task serve` starts the
 *   workers.
 *
 * `--json` prints `{ project, database, problems: [{ check, problem, fix }], notices: [{ check,
 * notice, fix }], skipped }` for CI. Notices are printed but do not fail the check.
 * Exit codes: 0 no problem, 1 problems (or the database refused), 2 bad usage.
 *
 * @module
 */
import { join, relative, resolve } from 'node:path';
import type postgres from 'postgres';
import { isLocalDatabase } from '../lib/sql/migrate.ts';
import { coreVersionProblem, REQUIRED_CORE_VERSION } from '../lib/sql/core_version.ts';
import { type DoctorFacts, doctorFacts } from '../lib/sql/doctor.ts';
import { compileFlows } from './compile.ts';
import {
  commandName,
  findProject,
  remoteFlag,
  supabaseCli,
  supabaseRemote,
  userCommand,
  userDirectory,
} from './_invocation.ts';
import { databaseUrl, parse, runCommand, secondsOption, UsageError } from './_operator_cli.ts';
import { readOrNull, sqlFileNames } from './_util.ts';
import { REGISTRY_PATH, registryPlan } from './scaffold_queue.ts';
import { readEnvFile } from './serve.ts';
import type { RowTrigger } from '../lib/sql/row_triggers.ts';

/** One problem: which check found it, what is wrong, and the command that fixes it. */
export interface Problem {
  check: string;
  problem: string;
  fix: string;
}

/** Something worth knowing that is not wrong (yet): an unfinished backfill, say. */
export interface Notice {
  check: string;
  notice: string;
  fix: string;
}

/** What {@linkcode diagnose} found. */
export interface Diagnosis {
  project: string;
  database: string;
  problems: Problem[];
  /** What is worth knowing but does not fail the check. */
  notices: Notice[];
  /** Checks not made, and why. */
  skipped: { check: string; why: string }[];
}

/** Options of {@linkcode diagnose}. */
export interface DoctorOptions {
  /** The project directory. */
  projectDir: string;
  /**
   * How the project is named in the commands printed (`--project <this>`, none for `.`);
   * default: as the user named the project `findProject` found, else its directory.
   */
  projectArg?: string;
  /** A task queued this long with no live worker is a problem. */
  stuckAfterSeconds: number;
  /** Check the keep-alive (pg_net, pg_cron, its job and wakes). */
  keepAlive: boolean;
  /**
   * Whether the database is a local one (`isLocalDatabase`): a webhook's secret missing from the
   * local environment is then a problem, else a notice. Default: true.
   */
  localDatabase?: boolean;
}

/** How long a registered function may go without any worker before it counts as never run. */
const NEVER_RUN_AFTER_MS = 120_000;

const MIGRATION = /^(\d+)_.*\.sql$/;

/** `3m 20s`, `2h 5m`: a duration for people. */
function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** At most `n` items, then how many more. */
function some(items: string[], n = 8): string {
  return items.length <= n
    ? items.join(', ')
    : `${items.slice(0, n).join(', ')} and ${items.length - n} more`;
}

/** `X.Y.Z` compared: negative, 0 or positive; null when either is not a release. */
function compareVersions(a: string, b: string): number | null {
  const pa = /^(\d+)\.(\d+)\.(\d+)$/.exec(a);
  const pb = /^(\d+)\.(\d+)\.(\d+)$/.exec(b);
  if (!pa || !pb) return null;
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d;
  }
  return 0;
}

/** The project's runtime: the installed copy, else the kit's own `lib/` (a checkout). */
async function runtimeRequiredCore(projectDir: string): Promise<string> {
  for (const dir of ['supabase/functions/_switchyard', 'lib']) {
    const text = await readOrNull(join(projectDir, dir, 'sql', 'core_version.ts'));
    const m = text && /REQUIRED_CORE_VERSION\s*=\s*'(\d+\.\d+\.\d+)'/.exec(text);
    if (m) return m[1];
  }
  return REQUIRED_CORE_VERSION;
}

/** The SQL core the project's migrations ship: the last `core_version()` they define. */
async function shippedCore(migrationsDir: string, names: string[]): Promise<string | null> {
  for (const name of [...names].reverse()) {
    const text = await Deno.readTextFile(join(migrationsDir, name));
    const at = text.lastIndexOf('function switchyard.core_version()');
    if (at < 0) continue;
    const m = /select\s+'(\d+\.\d+\.\d+)'::text/.exec(text.slice(at));
    if (m) return m[1];
  }
  return null;
}

/**
 * Checks the project and the database behind `sql` (see the module docs); every problem comes
 * with the command that fixes it.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { diagnose } from './doctor.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * const d = await diagnose(sql, { projectDir: '../my-app', stuckAfterSeconds: 300, keepAlive: true });
 * for (const p of d.problems) console.log(p.problem, '->', p.fix);
 * await sql.end();
 * ```
 */
export async function diagnose(sql: postgres.Sql, options: DoctorOptions): Promise<Diagnosis> {
  const projectDir = resolve(options.projectDir);
  // Every fix as the user types it where they stand (cli/_invocation.ts): the project's
  // commands with --project where it is needed, the operator commands with DATABASE_URL only.
  const named = { project: options.projectArg ?? projectDir };
  const task = (name: string, args = '') => userCommand(name, args ? [args] : [], named);
  const op = (name: string, args = '') => userCommand(name, args ? [args] : []);
  const cli = await supabaseCli(projectDir);
  const sb = cli.command;
  const local = `a local database: DATABASE_URL=… ${task('db:push')}`;
  const push = supabaseRemote(cli, 'db push', { aside: local });
  const problems: Problem[] = [];
  const notices: Notice[] = [];
  const skipped: Diagnosis['skipped'] = [];
  const add = (check: string, problem: string, fix: string) =>
    problems.push({ check, problem, fix });
  const note = (check: string, notice: string, fix: string) => notices.push({ check, notice, fix });

  if ((await readOrNull(join(projectDir, 'supabase', 'config.toml'))) === null) {
    throw new UsageError(
      `${join(projectDir, 'supabase', 'config.toml')} is missing: run doctor on a Supabase ` +
        'project (supabase init) or pass --project DIR',
    );
  }
  const facts: DoctorFacts = await doctorFacts(sql, { waitingSeconds: options.stuckAfterSeconds });
  const db = `database "${facts.database}"`;

  // migrations
  const migrationsDir = join(projectDir, 'supabase', 'migrations');
  const names = (await sqlFileNames(migrationsDir)).filter((n) => MIGRATION.test(n));
  const versions = new Map(names.map((n) => [MIGRATION.exec(n)![1], n]));
  if (facts.migrations === null) {
    if (facts.coreVersion === undefined) {
      add(
        'migrations',
        `no migration was ever applied to ${db} with the Supabase CLI ` +
          `(supabase_migrations.schema_migrations is missing); the project has ${names.length}`,
        push,
      );
    } else {
      add(
        'migrations',
        `${db} has the SQL core, but the Supabase CLI recorded no migration there ` +
          '(supabase_migrations.schema_migrations is missing): a push would apply every ' +
          'migration again',
        supabaseRemote(cli, 'migration repair', {
          then: `--status applied ${some([...versions.keys()], 3)}`,
          aside: 'each version the database has',
        }),
      );
    }
  } else {
    const applied = new Set(facts.migrations.map((m) => m.version));
    const pending = [...versions.entries()].filter(([v]) => !applied.has(v));
    const extra = facts.migrations.filter((m) => !versions.has(m.version));
    if (pending.length > 0) {
      const newest = facts.migrations.at(-1)?.version ?? '';
      const older = pending.some(([v]) => v < newest);
      add(
        'migrations',
        `${pending.length} migration(s) of supabase/migrations are not applied to ${db}: ` +
          some(pending.map(([, n]) => n)),
        older
          ? supabaseRemote(cli, 'db push', {
            then: '--include-all',
            aside: `${local}; some sort before the database's newest, which db push ` +
              'refuses without --include-all',
          })
          : push,
      );
    }
    if (extra.length > 0) {
      add(
        'migrations',
        `${db} applied ${extra.length} migration(s) that supabase/migrations lacks: ` +
          some(extra.map((m) => (m.name ? `${m.version}_${m.name}.sql` : m.version))),
        'restore them from version control (git log -- supabase/migrations), or, if they were ' +
          `removed on purpose: ${sb} migration repair ${remoteFlag(cli.major)} --status reverted ${
            some(extra.map((m) => m.version), 5)
          }`,
      );
    }
  }

  // sql core
  if (facts.coreVersion === undefined) {
    add('sql core', `the Switchyard SQL core is not in ${db}`, push);
  } else {
    const required = await runtimeRequiredCore(projectDir);
    const older = coreVersionProblem(facts.coreVersion, required);
    if (older) {
      add(
        'sql core',
        `the SQL core of ${db} is ${facts.coreVersion ?? 'older than 0.3.0'}; the project's ` +
          `runtime needs ${required} or later: its workers refuse to start`,
        `${push}, then redeploy the functions (${sb} functions deploy)`,
      );
    }
    const shipped = await shippedCore(migrationsDir, names);
    const cmp = shipped && facts.coreVersion ? compareVersions(facts.coreVersion, shipped) : null;
    if (cmp !== null && cmp > 0) {
      add(
        'sql core',
        `the SQL core of ${db} is ${facts.coreVersion}, newer than the ${shipped} the project's ` +
          'migrations and runtime ship: another checkout of a newer kit applied its migrations',
        `update the project from that kit (${task('install')}), then redeploy the functions ` +
          `(${sb} functions deploy)`,
      );
    }
  }

  // registry
  let plan: Awaited<ReturnType<typeof registryPlan>> | null = null;
  try {
    plan = await registryPlan(projectDir);
  } catch (e) {
    // A fresh install's registry lists no flow yet: nothing to check, and nothing wrong.
    if (/the worker registry is empty/.test((e as Error).message)) {
      skipped.push({ check: 'registry, aliases', why: `${REGISTRY_PATH} lists no flow yet` });
    } else {
      add(
        'registry',
        `cannot load ${REGISTRY_PATH}: ${(e as Error).message}`,
        `fix the registry, then ${task('compile')}`,
      );
    }
  }
  if (plan !== null) {
    try {
      const due = await compileFlows({ projectDir, check: true });
      if (due.path !== null) {
        const what = [
          ...due.flows.map((f) => `flow ${f.slug} (${f.change})`),
          ...due.aliases.map(([alias, versions]) => `alias ${alias} -> ${versions.at(-1)}`),
        ];
        add(
          'registry',
          `${REGISTRY_PATH} changed since it was compiled: ${some(what)}`,
          `${task('compile')}, then ${push}`,
        );
      }
    } catch (e) {
      add(
        'registry',
        `compile refuses the registry: ${(e as Error).message}`,
        `follow compile's message (${task('compile')})`,
      );
    }
  }

  if (facts.coreVersion === undefined) {
    skipped.push({
      check: 'aliases, functions, refusals, queues, row triggers',
      why: 'no SQL core',
    });
    await checkWebhooks(projectDir, options.localDatabase ?? true, add, note);
    return { project: projectDir, database: facts.database, problems, notices, skipped };
  }

  // aliases
  if (plan !== null) {
    const listed = new Set(plan.placements.map((p) => p.flow));
    for (const a of facts.aliases.filter((a) => !listed.has(a.flowSlug))) {
      const target = plan.aliases.find(([alias]) => alias === a.alias)?.[1].at(-1);
      add(
        'aliases',
        `alias ${a.alias} points at ${a.flowSlug}, which ${REGISTRY_PATH} does not list: ` +
          `workers refuse to start (coverage) and new runs of ${a.alias} start ${a.flowSlug}`,
        target
          ? `list ${a.flowSlug} in the registry again until it drains (${op('drain')}), or, when ` +
            `it has no open runs, move the alias: select switchyard.activate_alias('${a.alias}', ` +
            `'${target}')`
          : `list ${a.flowSlug} in the registry again (${task('compile')}, then deploy)`,
      );
    }
  }

  // functions
  const fns = facts.functions;
  for (const f of fns.filter((f) => f.pausedAt !== null)) {
    add(
      'functions',
      `function ${f.functionName} is paused since ${f.pausedAt!.toISOString()}: ${f.pauseReason}`,
      f.pausedByWork
        ? `deploy a registry with the versions the reason names (${task('compile')}, ${sb} ` +
          `functions deploy ${f.functionName}), then ${op('resume', f.functionName)}; ` +
          `messages of no task: ${op('quarantine', f.functionName)}`
        : `fix the cause, then ${op('resume', f.functionName)}`,
    );
  }
  for (const f of fns.filter((f) => !f.enabled)) {
    add(
      'functions',
      `function ${f.functionName} is disabled (a fenced rollout not ended?): it starts no worker`,
      `${op('fence', 'end')} (or select switchyard.set_function_enabled('${f.functionName}', ` +
        'true))',
    );
  }

  // refusals since the function's latest start. A pause (by an operator or by unsupported
  // work) and a disable are the function's flags: listed above while they hold, over once
  // lifted, so only the other kinds are listed here.
  const byName = new Map(fns.map((f) => [f.functionName, f]));
  const startRefusals = new Set(['coverage', 'worker_config', 'start_failed']);
  for (const r of facts.refusals.filter((r) => startRefusals.has(r.refusal))) {
    const f = byName.get(r.functionName);
    if (f?.lastStartedAt && f.lastStartedAt >= r.lastAt) continue;
    const times = r.count === 1 ? 'once' : `${r.count} times`;
    add(
      'refusals',
      `function ${r.functionName} refused to start ${times} since ${r.firstAt.toISOString()}, ` +
        `last at ${r.lastAt.toISOString()} (${r.refusal}): ${r.message}`,
      r.refusal === 'coverage'
        ? `add the versions it names to ${REGISTRY_PATH} (or move the alias), ${
          task('compile')
        }, then ${sb} functions deploy ${r.functionName}`
        : r.refusal === 'worker_config'
        ? `fix the function's settings (${sb} secrets set …), then ${sb} functions ` +
          `deploy ${r.functionName}`
        : `fix what the message says (the function's database URL: ${sb} secrets set ` +
          `SWITCHYARD_DB_URL=…), then wake it`,
    );
  }

  // queues
  const served = (queue: string) => fns.filter((f) => f.queueName === queue);
  for (const w of facts.work.filter((w) => served(w.queueName).length === 0)) {
    add(
      'queues',
      `queue ${w.queueName} has ${w.queued} queued and ${w.started} started task(s) of ` +
        `${w.runs} run(s) and no queue function: nothing will run them`,
      `${task('scaffold-queue', w.queueName)}, ${push}, then ${sb} functions deploy`,
    );
  }
  // batches (docs/design/batching.md): the tick closes them; overdue means it is not running
  for (const b of facts.stuckBatches ?? []) {
    add(
      'batches',
      `batch ${JSON.stringify(b.batchKey)} of ${b.startedAs} (${b.size} event(s)) ` +
        (b.lastError === null
          ? `should have closed at ${b.closeAt.toISOString()}: no tick is closing batches`
          : `fails to close: ${b.lastError}`),
      b.lastError === null
        ? 'schedule the tick: select switchyard.schedule_schedules() (or the keep-alive job)'
        : `fix what the error says (is alias ${b.startedAs} still there?); the next tick retries`,
    );
  }
  for (const w of facts.waiting) {
    const functions = served(w.queueName);
    if (functions.length === 0 || functions.some((f) => f.liveWorkers > 0)) continue;
    const names = functions.map((f) => f.functionName);
    const stopped = functions.every((f) => f.pausedAt !== null || !f.enabled);
    add(
      'queues',
      `queue ${w.queueName}: ${w.runs} run(s) have a task queued for more than ` +
        `${duration(options.stuckAfterSeconds * 1000)} (the oldest for ` +
        `${duration(Date.now() - w.oldestQueuedAt.getTime())}) and no worker is live ` +
        `(${some(names)})`,
      stopped
        ? `resume its function (see above): ${op('resume', names[0])}`
        : `wake ${names[0]}: curl -X POST -H 'Authorization: Bearer <SWITCHYARD_WORKER_SECRET>' ` +
          `${facts.functionsBaseUrl ?? 'https://<project-ref>.supabase.co'}/functions/v1/` +
          `${names[0]} (the keep-alive does it every minute: see its problems; locally: ` +
          `${task('serve')})`,
    );
  }

  // row triggers (docs/design/ingestion.md; docs/design/origins.md)
  for (const t of facts.rowTriggers.filter((t) => !t.installed)) {
    add(
      'row triggers',
      `row trigger ${t.name} is declared on ${t.table} but its trigger switchyard_${t.name} is ` +
        `missing from the table: writes to ${t.table} start no run of ${t.alias}`,
      `declare it again: ${task('trigger', `remove ${t.name}`)}, then ${
        task('trigger', addArguments(t))
      }, then ${push}`,
    );
  }
  for (const t of facts.rowTriggers.filter((t) => t.backfill?.state === 'pending')) {
    const b = t.backfill!;
    note(
      'row triggers',
      b.batches === 0
        ? `row trigger ${t.name}'s backfill of the rows ${t.table} had has not started`
        : `row trigger ${t.name}'s backfill is unfinished: ${b.rows} row(s) passed in ` +
          `${b.batches} batch(es), ${b.runs} run(s) started, the cursor at ${
            JSON.stringify(b.after)
          }${b.updatedAt ? `, last moved at ${b.updatedAt.toISOString()}` : ''}`,
      `DATABASE_URL=… ${op('trigger', `backfill ${t.name}`)} (resumes at the cursor)`,
    );
  }

  // webhooks
  await checkWebhooks(projectDir, options.localDatabase ?? true, add, note);

  // keep-alive
  if (!options.keepAlive) {
    skipped.push({
      check: 'keep-alive',
      why: `a local database (${task('serve')} starts the workers); --keep-alive checks it`,
    });
  } else if (fns.length === 0) {
    skipped.push({ check: 'keep-alive', why: 'no queue function is registered' });
  } else {
    const url = facts.functionsBaseUrl ?? 'https://<project-ref>.supabase.co';
    const setUp = `DATABASE_URL=… ${
      op('keep-alive', `--url ${url} --bearer-from-env SWITCHYARD_WORKER_SECRET`)
    }`;
    if (!facts.pgNet) {
      add(
        'keep-alive',
        `pg_net is not enabled in ${db}: the keep-alive cannot wake the functions`,
        `enable pg_net (Dashboard > Database > Extensions, or create extension pg_net), then ${setUp}`,
      );
    }
    if (!facts.pgCron) {
      add(
        'keep-alive',
        facts.cronDatabase && facts.cronDatabase !== facts.database
          ? `pg_cron runs in database "${facts.cronDatabase}" (cron.database_name), not in ` +
            `${db}: no keep-alive job can run here`
          : `pg_cron is not enabled in ${db}: no keep-alive job runs`,
        facts.cronDatabase && facts.cronDatabase !== facts.database
          ? `schedule select switchyard.keep_alive_command() there with cron.schedule_in_database`
          : `enable pg_cron (Dashboard > Database > Extensions, or create extension pg_cron ` +
            `with schema pg_catalog), then ${setUp}`,
      );
    } else if (facts.keepAliveJob === null) {
      add('keep-alive', `no keep-alive job (switchyard_keep_alive) in ${db}`, setUp);
    } else if (!facts.keepAliveJob.active) {
      add(
        'keep-alive',
        'the keep-alive job switchyard_keep_alive is inactive',
        'select cron.alter_job(jobid, active := true) from cron.job where jobname = ' +
          "'switchyard_keep_alive'",
      );
    } else if (facts.keepAliveJob.lastRun?.status === 'failed') {
      add(
        'keep-alive',
        `the keep-alive job's latest run failed at ${facts.keepAliveJob.lastRun.at.toISOString()}: ${
          facts.keepAliveJob.lastRun.message ?? '(no message)'
        }`,
        `fix what it says; ${setUp} sets the base URL and the bearer`,
      );
    }
    const now = Date.now();
    for (const f of fns) {
      if (f.pausedAt !== null || !f.enabled || f.lastWokenAt !== null) continue;
      if (f.lastStartedAt !== null || now - f.createdAt.getTime() < NEVER_RUN_AFTER_MS) continue;
      add(
        'keep-alive',
        `function ${f.functionName} has never run: no worker ever started and the keep-alive ` +
          `never woke it (registered ${duration(now - f.createdAt.getTime())} ago)`,
        `deploy it (${sb} functions deploy ${f.functionName}) and set up the keep-alive: ${setUp}`,
      );
    }
    for (const w of facts.wakeFailures) {
      if (w.lastOkAt !== null && w.lastOkAt > w.lastFailedAt) continue;
      const status = w.lastStatus;
      add(
        'keep-alive',
        `the keep-alive's wakes of ${w.functionName} fail: ${w.failures} in the last 6h, the ` +
          `latest at ${w.lastFailedAt.toISOString()}: ${w.lastError}`,
        status === 401 || status === 403
          ? `store the bearer the function accepts: ${setUp}`
          : status === 404
          ? `deploy it: ${sb} functions deploy ${w.functionName}`
          : status !== null && status >= 400
          ? 'the function refused: see its refusal above (and its logs: Dashboard > Edge ' +
            `Functions > ${w.functionName} > Logs)`
          : `check the base URL the wakes go to (${url}): ${setUp}`,
      );
    }
  }
  return { project: projectDir, database: facts.database, problems, notices, skipped };
}

/** The arguments of `trigger add` that declare `t` again, as it was declared. */
function addArguments(t: RowTrigger): string {
  const quote = (
    v: string,
  ) => (/^[A-Za-z0-9_.,:=/-]+$/.test(v) ? v : `'${v.replaceAll("'", "'\\''")}'`);
  const args = [`add ${t.name}`, `--table ${quote(t.table)}`, `--alias ${quote(t.alias)}`];
  if (t.events.join(',') !== 'insert') args.push(`--events ${t.events.join(',')}`);
  if (t.inputColumns) args.push(`--columns ${quote(t.inputColumns.join(','))}`);
  if (t.inputExpression) args.push(`--input ${quote(t.inputExpression)}`);
  if (t.condition) args.push(`--when ${quote(t.condition)}`);
  if (t.keyBy) args.push(`--key ${quote(t.keyBy)}`);
  if (t.mode) args.push(`--mode ${t.mode}`);
  if (t.ttl !== null) args.push(`--ttl ${t.ttl}`);
  if (t.delay !== null) args.push(`--delay ${t.delay}`);
  if (t.maxDelay !== null) args.push(`--max-delay ${t.maxDelay}`);
  if (t.backfill) args.push('--backfill');
  return args.join(' ');
}

/**
 * The project's webhook functions (an `index.ts` under `supabase/functions/` calling
 * `serveWebhook` or `createWebhook`) whose secret variable (`secretEnv`, default
 * `SWITCHYARD_WEBHOOK_SECRET`) is set neither in this environment nor in
 * `supabase/functions/.env`, what `serve` gives the functions. A function given its `secret`
 * inline, or naming its variable other than as a string literal, is not judged.
 */
async function checkWebhooks(
  projectDir: string,
  local: boolean,
  add: (check: string, problem: string, fix: string) => void,
  note: (check: string, notice: string, fix: string) => void,
): Promise<void> {
  const functionsDir = join(projectDir, 'supabase', 'functions');
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(functionsDir)) {
      if (e.isDirectory && !e.name.startsWith('_') && !e.name.startsWith('.')) names.push(e.name);
    }
  } catch {
    return;
  }
  const fileEnv = await readEnvFile(join(functionsDir, '.env'));
  for (const name of names.sort()) {
    const text = await readOrNull(join(functionsDir, name, 'index.ts'));
    if (text === null || !/\b(serveWebhook|createWebhook)\s*\(/.test(text)) continue;
    if (/\bsecret\s*:/.test(text)) continue;
    const named = /\bsecretEnv\s*:\s*(['"])([A-Za-z_][A-Za-z0-9_]*)\1/.exec(text);
    if (!named && /\bsecretEnv\s*:/.test(text)) continue;
    const variable = named?.[2] ?? 'SWITCHYARD_WEBHOOK_SECRET';
    let set: string | undefined;
    try {
      set = Deno.env.get(variable);
    } catch {
      set = undefined;
    }
    if (set || fileEnv[variable]) continue;
    const what = `webhook function ${name} reads its shared secret from ${variable}, which is ` +
      'set neither in this environment nor in supabase/functions/.env';
    const fix = `add ${variable}=<the shared secret> to supabase/functions/.env (local serve); ` +
      `on Supabase: supabase secrets set ${variable}=<the shared secret>`;
    if (local) {
      add('webhooks', `${what}: locally every delivery is answered 500 webhook_config`, fix);
    } else note('webhooks', `${what} (the deployed function's secrets are not visible here)`, fix);
  }
}

/** The text output: each problem and its fix, or that there is none. */
export function formatDiagnosis(d: Diagnosis, cwd: string = userDirectory()): string {
  const rel = relative(cwd, d.project);
  const where = `${rel.startsWith('..') ? d.project : rel || '.'} and database "${d.database}"`;
  const lines: string[] = [];
  for (const p of d.problems) {
    lines.push(`problem [${p.check}] ${p.problem}`, `  fix: ${p.fix}`);
  }
  for (const n of d.notices ?? []) lines.push(`notice [${n.check}] ${n.notice}`, `  do: ${n.fix}`);
  for (const s of d.skipped) lines.push(`not checked [${s.check}]: ${s.why}`);
  lines.push(
    d.problems.length === 0
      ? `no problem found in ${where}`
      : `${d.problems.length} problem(s) in ${where}`,
  );
  return lines.join('\n');
}

const USAGE = `usage: ${
  commandName('doctor')
} [--project DIR] [--json] [--stuck-after SECONDS] [--keep-alive]

Checks a project and its database (DATABASE_URL) and prints each problem with the command
that fixes it: migrations not applied (or applied but missing), the SQL core against the
runtime, the registry not compiled, aliases whose version the registry lacks, paused and
disabled functions, refused worker starts, work with no queue function or no live worker,
row triggers missing from their table (unfinished backfills as notices), webhook functions
whose secret is not set locally, and the keep-alive (pg_net, pg_cron, its job, failing wakes). Exit 1 when any.

  --project DIR        the Supabase project; default: the project you are in (the nearest
                       directory upward with supabase/config.toml)
  --json               print { project, database, problems: [{ check, problem, fix }],
                       notices: [{ check, notice, fix }], skipped }
  --stuck-after N      a task queued N seconds with no live worker is a problem (default 300)
  --keep-alive         check the keep-alive on a local database too (always on a remote one)
  -h, --help           this text`;

/** `deno task doctor` (and `switchyard doctor`): its arguments come from `_help.ts`. */
export function doctorCommand(): Promise<never> {
  return runCommand(USAGE, async (sql, args) => {
    const { values, positionals } = parse(args, {
      project: { type: 'string' },
      json: { type: 'boolean' },
      'stuck-after': { type: 'string' },
      'keep-alive': { type: 'boolean' },
    });
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
    }
    const d = await diagnose(sql, {
      projectDir: findProject(values.project),
      stuckAfterSeconds: secondsOption('stuck-after', values['stuck-after'], 300),
      keepAlive: values['keep-alive'] === true || !isLocalDatabase(databaseUrl()),
      localDatabase: isLocalDatabase(databaseUrl()),
    });
    console.log(values.json ? JSON.stringify(d, null, 2) : formatDiagnosis(d));
    return d.problems.length === 0 ? 0 : 1;
  });
}

if (import.meta.main) await doctorCommand();
