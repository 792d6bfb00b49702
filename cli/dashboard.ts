/**
 * `deno task dashboard [--port N] [--hostname H] [--env-file FILE]`: serves the dashboard
 * page and its JSON API (`lib/ops/dashboard.ts`) with `Deno.serve` until Ctrl-C.
 *
 * Needs `DATABASE_URL` (or `SUPABASE_DB_URL`). Actions (pause, resume, cancel, retry) need the
 * bearer of the queue functions: `SWITCHYARD_WORKER_SECRET` or `SUPABASE_SERVICE_ROLE_KEY`, read
 * from the environment and then from `supabase/functions/.env` (or `--env-file`), as
 * `deno task serve` does. Without one the page is read-only; `SWITCHYARD_DASHBOARD_AUTH=required` refuses every
 * API request without the bearer. The port is `--port`, else `PORT`, else 8787; the hostname
 * `127.0.0.1` unless `--hostname` says otherwise.
 *
 * It answers only for its own host names (`127.0.0.1`, `localhost`, `[::1]`, `--hostname`, and
 * `SWITCHYARD_DASHBOARD_HOSTS`): a request naming another host gets 421 (DNS rebinding). Its
 * server (cli/_http_server.ts) closes a connection whose request head takes more than 10 s,
 * whose request takes more than 30 s, or that is idle for 30 s.
 *
 * Exit codes: 0 stopped by a signal; 1 the server could not start; 2 bad usage (arguments,
 * `DATABASE_URL`, `SWITCHYARD_DASHBOARD_AUTH`).
 *
 * @module
 */
import { join, resolve } from 'node:path';
import { createDashboard } from '../lib/ops.ts';
import { openSql } from '../lib/sql/connection.ts';
import { serveWithTimeouts } from './_http_server.ts';
import { parse, UsageError } from './_operator_cli.ts';
import { commandName, nearestProject, userDirectory } from './_invocation.ts';
import { readEnvFile } from './serve.ts';

const USAGE = `usage: ${commandName('dashboard')} [--port N] [--hostname H] [--env-file FILE]

Serves the Switchyard dashboard (default http://127.0.0.1:8787/). Needs DATABASE_URL.
Actions need SWITCHYARD_WORKER_SECRET or SUPABASE_SERVICE_ROLE_KEY (environment, then the
supabase/functions/.env of the project you are in, or --env-file FILE);
SWITCHYARD_DASHBOARD_AUTH=required refuses reads without it too.`;

async function main(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    port: { type: 'string' },
    hostname: { type: 'string' },
    'env-file': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument(s): ${positionals.join(' ')}`);
  }
  const portText = (values.port as string | undefined) ?? Deno.env.get('PORT') ?? '8787';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
    throw new UsageError(
      `port ${JSON.stringify(portText)} is invalid: use an integer from 1 to 65535`,
    );
  }
  // The project's .env when the user stands in one; a relative --env-file is the user's.
  const project = nearestProject(userDirectory());
  const file = await readEnvFile(
    values['env-file'] !== undefined
      ? resolve(userDirectory(), values['env-file'] as string)
      : join(project ?? '.', 'supabase', 'functions', '.env'),
  );
  const env = (name: string) => Deno.env.get(name) || file[name] || undefined;
  const url = env('DATABASE_URL') ?? env('SUPABASE_DB_URL');
  if (!url) {
    throw new UsageError(
      'DATABASE_URL is not set: export the connection string of the project database',
    );
  }
  const sql = openSql(url, {
    max: 4,
    origin: env('DATABASE_URL') ? 'DATABASE_URL' : 'SUPABASE_DB_URL',
  });
  const hostname = (values.hostname as string | undefined) ?? '127.0.0.1';
  let dashboard;
  try {
    dashboard = createDashboard({ source: sql, env, hostnames: [hostname] });
  } catch (e) {
    await sql.end({ timeout: 5 });
    throw new UsageError((e as Error).message);
  }
  const server = await serveWithTimeouts(dashboard.fetch, { hostname, port });
  const shown = hostname === '0.0.0.0' ? '127.0.0.1' : hostname;
  const hasSecret = env('SWITCHYARD_WORKER_SECRET') || env('SUPABASE_SERVICE_ROLE_KEY');
  console.log(`Switchyard dashboard: http://${shown}:${port}/`);
  console.log(
    dashboard.access === 'required'
      ? 'access: every request needs the bearer (SWITCHYARD_DASHBOARD_AUTH=required)'
      : env('SWITCHYARD_AUTH') === 'disabled'
      ? 'access: actions open to anyone (SWITCHYARD_AUTH=disabled)'
      : hasSecret
      ? 'access: read-only until the page is given the bearer (enter it in the page header)'
      : 'access: read-only (no SWITCHYARD_WORKER_SECRET or SUPABASE_SERVICE_ROLE_KEY is set)',
  );
  await new Promise<void>((done) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) Deno.addSignalListener(signal, done);
  });
  await dashboard.close();
  await server.shutdown();
  await sql.end({ timeout: 5 });
  return 0;
}

/** `deno task dashboard` (and `switchyard dashboard`) as a command: serves until stopped. */
export async function dashboardCommand(args: string[]): Promise<never> {
  let code: number;
  try {
    code = await main(args);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`error: ${e.message}\n\n${USAGE}`);
      code = 2;
    } else {
      console.error(`error: ${(e as Error).message}`);
      code = 1;
    }
  }
  Deno.exit(code);
}

if (import.meta.main) await dashboardCommand(Deno.args);
