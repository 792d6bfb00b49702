/**
 * `deno task keep-alive --url <functions base url> [--bearer-from-env NAME] [--debounce N]
 * [--schedule CRON] [--without-pg-net]`: the keep-alive in one command (docs/design/versions.md),
 * instead of enabling pg_net and pg_cron and typing three statements in the SQL editor.
 *
 * It checks first, and writes nothing when something is missing: the SQL core
 * (`deno task db:push`), pg_net (the keep-alive's HTTP requests) and pg_cron (its job) in the
 * database of `DATABASE_URL`, each with exactly how to enable it on Supabase; and a bearer for the
 * wake requests. Then, through the SQL core's own functions, it sets `functions_base_url`
 * (`switchyard.set_setting`, which validates the URL and its host), stores the bearer when
 * `--bearer-from-env` names an environment variable (in Vault as `switchyard_functions_bearer`
 * when Vault is installed, as on Supabase; else the `functions_bearer` setting; the value is never
 * printed) and creates or updates the pg_cron job `switchyard_keep_alive`
 * (`switchyard.schedule_keep_alive`). Running it again changes nothing and says so.
 *
 * `--without-pg-net` is for a server without pg_net (a local PostgreSQL whose workers run
 * anyway): the job then only records its wakes in `switchyard.wake_requests`.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 done, 1 something is missing or the database refused,
 * 2 bad usage.
 *
 * @module
 */
import type postgres from 'postgres';
import { parse, runCommand, UsageError } from './_operator_cli.ts';
import { commandName, userCommand } from './_invocation.ts';

const USAGE = `usage: ${commandName('keep-alive')} --url <functions base url>
       [--bearer-from-env NAME] [--debounce N] [--schedule CRON] [--without-pg-net]

Sets up the keep-alive, which wakes every enabled, unpaused queue function without a live
worker: checks that pg_net and pg_cron are enabled (and says how, when not), sets the
functions_base_url setting, stores the bearer the wake requests carry, and creates or updates
the pg_cron job switchyard_keep_alive. Idempotent.

  --url URL               the functions base URL, e.g. https://<project-ref>.supabase.co
  --bearer-from-env NAME  store the value of environment variable NAME as the bearer (Vault
                          secret switchyard_functions_bearer when Vault is installed, else the
                          functions_bearer setting): SWITCHYARD_WORKER_SECRET or an sb_secret_
                          key; without it a bearer must already be stored
  --debounce N            seconds a woken function is left alone (default 30)
  --schedule CRON         the job's schedule (default '* * * * *', every minute)
  --without-pg-net        a server without pg_net: the job only records its wakes
Needs DATABASE_URL (on Supabase: the session pooler or direct connection string).`;

/** Options of {@linkcode setUpKeepAlive}. */
export interface KeepAliveSetup {
  url: string;
  /** The bearer's value (from `--bearer-from-env`), or undefined to keep the stored one. */
  bearer?: string;
  /** Where the bearer came from, for the report ("environment variable X"). */
  bearerSource?: string;
  debounceSeconds: number;
  schedule: string;
  withoutPgNet: boolean;
}

/** A check that failed: what is missing and exactly how to enable it. */
export class KeepAliveMissingError extends Error {
  constructor(readonly missing: string[]) {
    super(
      `the keep-alive cannot be set up; nothing was written:\n${
        missing.map((m) => `  - ${m}`).join('\n')
      }\nthen run this command again`,
    );
    this.name = 'KeepAliveMissingError';
  }
}

async function extension(sql: postgres.Sql, name: string) {
  const [row] = await sql<{ installed: string | null; available: boolean }[]>`
    select (select extversion from pg_catalog.pg_extension where extname = ${name}) as installed,
           exists (select 1 from pg_catalog.pg_available_extensions where name = ${name})
             as available`;
  return row;
}

/**
 * What is missing for the keep-alive in the connected database, each with the way to enable it
 * (empty: nothing is).
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { keepAliveProblems } from './keep_alive.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * console.log(await keepAliveProblems(sql, { withoutPgNet: false, bearer: undefined }));
 * await sql.end();
 * ```
 */
export async function keepAliveProblems(
  sql: postgres.Sql,
  { withoutPgNet, bearer }: { withoutPgNet: boolean; bearer?: string },
): Promise<string[]> {
  const problems: string[] = [];
  const [{ db, core, cronDb }] = await sql<
    { db: string; core: boolean; cronDb: string | null }[]
  >`
    select current_database() as db,
           to_regprocedure('switchyard.schedule_keep_alive(text, text, integer)') is not null
             as core,
           current_setting('cron.database_name', true) as "cronDb"`;
  if (!core) {
    problems.push(
      `the Switchyard SQL core is not in database "${db}": apply the migrations first ` +
        '(supabase db push --linked, with Supabase CLI 3 --remote; or against DATABASE_URL: ' +
        `${userCommand('db:push')})`,
    );
  }
  if (!withoutPgNet) {
    const net = await extension(sql, 'pg_net');
    if (!net.installed) {
      problems.push(
        net.available
          ? `pg_net is not enabled in database "${db}" (the keep-alive's HTTP requests): on ` +
            'Supabase, Dashboard > Database > Extensions > pg_net, or in the SQL editor ' +
            '`create extension pg_net;`'
          : 'pg_net is not available on this server (it comes with Supabase; elsewhere install ' +
            'it from github.com/supabase/pg_net), or pass --without-pg-net to only record the ' +
            'wakes (a server whose workers run anyway)',
      );
    }
  }
  const cron = await extension(sql, 'pg_cron');
  if (!cron.installed) {
    problems.push(
      !cron.available
        ? 'pg_cron is not available on this server: install it (Debian: postgresql-15-cron) ' +
          "and preload it (shared_preload_libraries = 'pg_cron')"
        : cronDb && cronDb !== db
        ? `pg_cron runs in database "${cronDb}" (cron.database_name), not "${db}": point ` +
          'DATABASE_URL at that database with the SQL core in it, or schedule ' +
          '`switchyard.keep_alive_command()` there with cron.schedule_in_database'
        : `pg_cron is not enabled in database "${db}" (the keep-alive's job): on Supabase, ` +
          'Dashboard > Database > Extensions > pg_cron, or in the SQL editor ' +
          '`create extension pg_cron with schema pg_catalog;`',
    );
  }
  if (core && !withoutPgNet && bearer === undefined) {
    const [{ stored }] = await sql<{ stored: boolean }[]>`
      select switchyard._functions_bearer() is not null as stored`;
    if (!stored) {
      problems.push(
        'no bearer is stored for the wake requests: pass --bearer-from-env NAME, NAME an ' +
          'environment variable holding SWITCHYARD_WORKER_SECRET or an sb_secret_ key (or the ' +
          'legacy service role key)',
      );
    }
  }
  return problems;
}

/** What {@linkcode setUpKeepAlive} did, one line per item. */
export interface KeepAliveReport {
  jobId: number;
  lines: string[];
  changed: boolean;
}

/**
 * Checks ({@linkcode keepAliveProblems}), then sets the base URL, stores the bearer and
 * schedules the job, in one transaction; idempotent.
 *
 * @throws {KeepAliveMissingError} when a check fails (nothing is written)
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { setUpKeepAlive } from './keep_alive.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * const report = await setUpKeepAlive(sql, {
 *   url: 'https://abcdefghijklmnop.supabase.co',
 *   debounceSeconds: 30,
 *   schedule: '* * * * *',
 *   withoutPgNet: false,
 * });
 * console.log(report.lines.join('\n'));
 * await sql.end();
 * ```
 */
export async function setUpKeepAlive(
  sql: postgres.Sql,
  setup: KeepAliveSetup,
): Promise<KeepAliveReport> {
  const problems = await keepAliveProblems(sql, setup);
  if (problems.length > 0) throw new KeepAliveMissingError(problems);
  return await sql.begin(async (tx) => {
    const lines: string[] = [];
    let changed = false;
    const [{ base }] = await tx<{ base: string | null }[]>`
      select value as base from switchyard.settings where name = 'functions_base_url'`
      .then((r) => r.length ? r : [{ base: null }]);
    if (base === setup.url) {
      lines.push(`unchanged functions_base_url ${setup.url}`);
    } else {
      await tx`select switchyard.set_setting('functions_base_url', ${setup.url})`;
      lines.push(`set       functions_base_url ${setup.url}${base ? ` (was ${base})` : ''}`);
      changed = true;
    }
    if (setup.bearer !== undefined) {
      const [{ vault }] = await tx<{ vault: boolean }[]>`
        select exists (select 1 from pg_catalog.pg_proc p
                        join pg_catalog.pg_namespace n on n.oid = p.pronamespace
                       where n.nspname = 'vault' and p.proname = 'create_secret')
           and to_regclass('vault.decrypted_secrets') is not null as vault`;
      const where = vault ? 'Vault secret switchyard_functions_bearer' : 'setting functions_bearer';
      const [{ current }] = await tx<{ current: string | null }[]>`
        select switchyard._functions_bearer() as current`;
      if (current === setup.bearer) {
        lines.push(`unchanged bearer in ${where} (${setup.bearerSource})`);
      } else {
        if (vault) {
          const [{ id }] = await tx.unsafe<{ id: string | null }[]>(
            "select (select id::text from vault.secrets where name = 'switchyard_functions_bearer') as id",
          );
          if (id) {
            await tx.unsafe('select vault.update_secret($1::uuid, $2)', [id, setup.bearer]);
          } else {
            await tx.unsafe("select vault.create_secret($1, 'switchyard_functions_bearer')", [
              setup.bearer,
            ]);
          }
        } else {
          await tx`select switchyard.set_setting('functions_bearer', ${setup.bearer})`;
        }
        lines.push(`set       bearer in ${where} (from ${setup.bearerSource}; not shown)`);
        changed = true;
      }
    }
    const want = (await tx<{ command: string }[]>`
      select switchyard.keep_alive_command(null, ${setup.debounceSeconds}::int) as command`)[0]
      .command;
    const before = await tx.unsafe<{ jobid: string; schedule: string; command: string }[]>(
      "select jobid::text, schedule, command from cron.job where jobname = 'switchyard_keep_alive' " +
        'and username = current_user',
    );
    const [{ job }] = await tx<{ job: string }[]>`
      select switchyard.schedule_keep_alive(${setup.schedule}::text, null,
                                            ${setup.debounceSeconds}::int)::text as job`;
    const same = before.length === 1 && before[0].schedule === setup.schedule &&
      before[0].command === want;
    lines.push(
      `${same ? 'unchanged' : before.length ? 'updated  ' : 'created  '} pg_cron job ` +
        `switchyard_keep_alive (id ${job}): '${setup.schedule}', ${want}`,
    );
    if (!same) changed = true;
    if (setup.withoutPgNet) {
      lines.push('note: without pg_net the job only records its wakes in switchyard.wake_requests');
    }
    return { jobId: Number(job), lines, changed };
  });
}

/**
 * The command's work after connecting: parses the keep-alive options in `args` (`--url`,
 * `--bearer-from-env`, `--debounce`, `--schedule`, `--without-pg-net`), sets the keep-alive up
 * and prints the report. `deno task install --keep-alive` calls it too.
 *
 * @throws {UsageError} for bad options; {@linkcode KeepAliveMissingError} when a check fails
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { runKeepAlive } from "./keep_alive.ts";
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * await runKeepAlive(sql, ['--url', 'https://abcdefghijklmnop.supabase.co']);
 * await sql.end();
 * ```
 */
export async function runKeepAlive(sql: postgres.Sql, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    url: { type: 'string' },
    'bearer-from-env': { type: 'string' },
    debounce: { type: 'string' },
    schedule: { type: 'string' },
    'without-pg-net': { type: 'boolean' },
  });
  if (positionals.length > 0) {
    throw new UsageError(
      `keep-alive takes no positional arguments, got: ${positionals.join(' ')}`,
    );
  }
  const url = values.url;
  if (typeof url !== 'string' || url === '') {
    throw new UsageError(
      '--url is required: the functions base URL, e.g. https://<project-ref>.supabase.co',
    );
  }
  const debounce = values.debounce ?? '30';
  if (!/^\d{1,9}$/.test(debounce)) {
    throw new UsageError(
      `--debounce ${JSON.stringify(debounce)} is invalid: use whole seconds of at least 0`,
    );
  }
  const schedule = values.schedule ?? '* * * * *';
  if (schedule.trim() === '') {
    throw new UsageError("--schedule is empty: use cron syntax such as '* * * * *'");
  }
  let bearer: string | undefined;
  const name = values['bearer-from-env'];
  if (name !== undefined) {
    bearer = Deno.env.get(name);
    if (!bearer) {
      throw new UsageError(
        `--bearer-from-env ${name}: the environment variable ${name} is ${
          bearer === '' ? 'empty' : 'not set'
        }: export it (e.g. ${name}=<the worker secret>) and run again`,
      );
    }
  }
  const report = await setUpKeepAlive(sql, {
    url,
    bearer,
    bearerSource: name === undefined ? undefined : `environment variable ${name}`,
    debounceSeconds: Number(debounce),
    schedule,
    withoutPgNet: values['without-pg-net'] ?? false,
  });
  for (const line of report.lines) console.log(line);
  console.log(
    report.changed
      ? 'keep-alive set up: check its runs with `select * from cron.job_run_details ' +
        `where jobid = ${report.jobId} order by start_time desc limit 5`
      : 'nothing to do: the keep-alive is set up as asked',
  );
}

/** `deno task keep-alive` (and `switchyard keep-alive`): {@linkcode runKeepAlive} as a command. */
export function keepAliveCommand(): Promise<never> {
  return runCommand(USAGE, runKeepAlive);
}

if (import.meta.main) await keepAliveCommand();
