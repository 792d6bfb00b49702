/**
 * The one table that maps the SQL core's refusals to Switchyard's error classes: by SQLSTATE,
 * with fields read from the JSON object in `DETAIL`, never from the message text
 * (docs/design/errors.md). Plumbing: the worker and the connection's callers use it; no entry
 * exports it.
 *
 * @module
 */
import {
  FenceStateError,
  FunctionDisabledError,
  FunctionPausedError,
  OperationError,
  PgCronMissingError,
  RunNotFoundError,
  SqlCoreMissingError,
  SwitchyardError,
  UnknownFunctionError,
} from '../errors.ts';

/** The parts of a server error the table reads (postgres.js' `PostgresError` has them). */
interface ServerError {
  code: string;
  message: string;
  hint?: string;
  detail?: string;
}

function isServerError(e: unknown): e is ServerError {
  const err = e as Partial<ServerError> | null;
  return typeof err?.code === 'string' && typeof err.message === 'string';
}

/** The JSON object the SQL core puts in `DETAIL`, or null when there is none. */
function detailOf(e: ServerError): Record<string, unknown> | null {
  if (typeof e.detail !== 'string' || !e.detail.startsWith('{')) return null;
  try {
    const value = JSON.parse(e.detail);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** SQLSTATE -> the error class the SQL core's refusal becomes. */
const SQL_ERRORS: Readonly<
  Record<string, (e: ServerError, detail: Record<string, unknown>) => SwitchyardError>
> = {
  SY001: (_e, d) => new FunctionPausedError(text(d.function_name), text(d.reason)),
  SY002: (_e, d) => new FunctionDisabledError(text(d.function_name)),
  SY003: (e, d) =>
    new UnknownFunctionError(
      Array.isArray(d.function_names) ? d.function_names.map(String) : [],
      e.message,
      { cause: e },
    ),
  SY010: (e) => new FenceStateError(e.message, 'SY010', e.hint || undefined, { cause: e }),
  SY011: (e) => new FenceStateError(e.message, 'SY011', e.hint || undefined, { cause: e }),
  SY020: (e) => new PgCronMissingError(e.message, e.hint || undefined, { cause: e }),
};

/**
 * Maps an error the SQL core raised to its Switchyard class: by SQLSTATE through one table,
 * with fields read from the JSON object in `DETAIL`. Other refusals of the core (they carry
 * such a detail) become {@linkcode OperationError} with their code; anything else (a lost
 * connection, an error of PostgreSQL itself) is returned unchanged.
 *
 * @example
 * ```ts
 * import { FunctionPausedError } from '../errors.ts';
 * import { fromSqlError } from './sql_errors.ts';
 * const raw = Object.assign(new Error('function "a-worker" is paused: maintenance'), {
 *   code: 'SY001',
 *   detail: '{"function_name":"a-worker","reason":"maintenance"}',
 * });
 * const e = fromSqlError(raw);
 * console.assert(e instanceof FunctionPausedError && e.reason === 'maintenance');
 * ```
 */
export function fromSqlError(e: unknown): unknown {
  if (e instanceof SwitchyardError || !isServerError(e)) return e;
  // No SQL core, or an older one: what to run, not the server's words alone.
  if (
    (e.code === '3F000' && /"switchyard"/.test(e.message)) ||
    ((e.code === '42883' || e.code === '42P01') && /\bswitchyard\./.test(e.message))
  ) {
    return new SqlCoreMissingError(e.message, { cause: e });
  }
  const detail = detailOf(e);
  const make = SQL_ERRORS[e.code];
  if (make) return make(e, detail ?? {});
  if (detail === null) return e;
  if (detail.rule === 'run_unknown' && typeof detail.value === 'string') {
    return new RunNotFoundError(detail.value, { cause: e });
  }
  return new OperationError(e.message, e.code, e.hint || undefined, { cause: e, detail });
}
