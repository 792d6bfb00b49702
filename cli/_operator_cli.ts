/**
 * What the operator commands (`deno task pause|resume|fence|drain`) share: the
 * database connection from the environment, argument errors, and exit codes.
 *
 * Exit codes: 0 done; 1 the database refused or the operation failed (unknown
 * function, a fence already open, a timeout); 2 bad usage (arguments, missing
 * `DATABASE_URL`).
 *
 * @module
 */
import type postgres from 'postgres';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { OperationError } from '../lib/errors.ts';
import { resolveConnectionString } from '../lib/sql/connection.ts';
import { fromSqlError } from '../lib/sql/sql_errors.ts';
import { connectionFailure, connectionOrigin, openSql } from '../lib/sql/connection.ts';
import { commandArgs } from './_help.ts';

/**
 * Bad arguments or environment: printed with the usage, exit code 2.
 *
 * @example
 * ```ts
 * import { UsageError } from './_operator_cli.ts';
 * throw new UsageError('missing <function>: name the queue function to pause');
 * ```
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * The database URL from the one resolver (`SWITCHYARD_DB_URL`, else `SUPABASE_DB_URL`, else
 * `DATABASE_URL`; docs/design/supabase.md); a {@linkcode UsageError} when none is set.
 *
 * @example
 * ```ts
 * import { databaseUrl } from './_operator_cli.ts';
 * console.log(new URL(databaseUrl()).hostname);
 * ```
 */
export function databaseUrl(): string {
  const url = resolveConnectionString();
  if (!url) {
    throw new UsageError(
      'DATABASE_URL is not set (nor SWITCHYARD_DB_URL or SUPABASE_DB_URL): export the ' +
        'connection string of the project database ' +
        '(for Supabase: Project Settings > Database > Connection string)',
    );
  }
  return url;
}

/**
 * Parses `args` strictly; unknown options and bad values become a {@linkcode UsageError}.
 *
 * @example
 * ```ts
 * import { parse } from './_operator_cli.ts';
 * const { values, positionals } = parse(['fn', '--reason', 'x'], { reason: { type: 'string' } });
 * console.assert(values.reason === 'x' && positionals[0] === 'fn');
 * ```
 */
export function parse<T extends ParseArgsConfig['options']>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/**
 * The one positional argument a command takes, or a {@linkcode UsageError}: `missing` when
 * there is none, `expected one <noun>, got N: ...` when there are more.
 *
 * @example
 * ```ts
 * import { onePositional } from './_operator_cli.ts';
 * console.assert(onePositional(['fn'], 'function', 'missing <function>') === 'fn');
 * ```
 */
export function onePositional(positionals: string[], noun: string, missing: string): string {
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0
        ? missing
        : `expected one ${noun}, got ${positionals.length}: ${positionals.join(' ')}`,
    );
  }
  return positionals[0];
}

/**
 * A whole number of seconds (at least 1) from an option, or `fallback`.
 *
 * @example
 * ```ts
 * import { secondsOption } from './_operator_cli.ts';
 * console.assert(secondsOption('timeout', '30', 600) === 30);
 * ```
 */
export function secondsOption(
  name: string,
  value: string | boolean | undefined,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(
      `--${name} ${JSON.stringify(value)} is invalid: use whole seconds of at least 1`,
    );
  }
  return n;
}

/**
 * Runs one command: connects (lazily), calls `main`, prints failures and exits
 * with the code the module doc describes; `--help` prints the usage.
 *
 * @example
 * ```ts
 * import { runCommand } from './_operator_cli.ts';
 * await runCommand('usage: deno task hello', async (sql) => {
 *   console.log((await sql`select 1 as one`)[0].one);
 * });
 * ```
 */
export async function runCommand(
  usage: string,
  main: (sql: postgres.Sql, args: string[]) => Promise<number | void>,
): Promise<never> {
  let code = 0;
  let sql: postgres.Sql | undefined;
  try {
    const args = commandArgs();
    if (args.includes('--help') || args.includes('-h')) {
      console.log(usage);
      Deno.exit(0);
    }
    const url = databaseUrl();
    sql = openSql(url, { max: 1, origin: connectionOrigin() });
    code = (await main(sql, args)) ?? 0;
  } catch (e) {
    code = report(sql ? connectionFailure(fromSqlError(e), sql) : e, usage);
  } finally {
    await sql?.end({ timeout: 2 }).catch(() => {});
  }
  Deno.exit(code);
}

function report(e: unknown, usage: string): number {
  if (e instanceof UsageError) {
    console.error(`error: ${e.message}\n\n${usage}`);
    return 2;
  }
  if (e instanceof OperationError) {
    console.error(`error: ${e.message}${e.hint ? `\nhint: ${e.hint}` : ''}`);
    return 1;
  }
  const err = e as { message?: string; hint?: string };
  console.error(`error: ${err?.message ?? String(e)}${err?.hint ? `\nhint: ${err.hint}` : ''}`);
  return 1;
}
