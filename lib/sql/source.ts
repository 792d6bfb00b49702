/**
 * What the operator calls take as a database: a postgres.js client, or an object
 * that carries one as `sql` (such as the client of `createClient()`), and the
 * one wrapper that maps the SQL core's refusals to error classes.
 *
 * @module
 */
import { connectionFailure, type Sql } from './connection.ts';
import { fromSqlError } from './sql_errors.ts';

/** A postgres.js client, or an object that carries one (such as the client of `createClient()`). */
export type SqlSource = Sql | { readonly sql: Sql };

/** The postgres.js client of a source. */
export function sqlOf(source: SqlSource): Sql {
  return typeof source === 'function' ? source : source.sql;
}

/**
 * Runs one call of the SQL core on `sql`; its refusals become Switchyard errors (lib/errors.ts),
 * a missing SQL core says what to run, and a failure to reach the server names where the URL
 * came from, its host and port.
 */
export async function call<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw connectionFailure(fromSqlError(e), sql);
  }
}
