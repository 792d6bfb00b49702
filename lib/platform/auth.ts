/**
 * The one bearer check (docs/design/supabase.md Auth), shared by queue functions
 * (`EdgeWorker.start`) and the dashboard's actions: `Authorization: Bearer <token>` with the
 * token equal to `SUPABASE_SERVICE_ROLE_KEY`, to one of the keys in `SUPABASE_SECRET_KEYS` (a
 * JSON object of `sb_secret_…` keys, set by Supabase on projects with the new API keys) or to
 * `SWITCHYARD_WORKER_SECRET`, compared in constant time. Only an explicit `SWITCHYARD_AUTH=disabled` (or `auth: 'disabled'`) turns
 * the check off, for local runs.
 *
 * @module
 */
import { hostedRuntimeSignal } from './platform.ts';

/**
 * How requests are authorized: a list of accepted bearer tokens, or `'disabled'` (local runs
 * only). Default: `SUPABASE_SERVICE_ROLE_KEY`, every key of `SUPABASE_SECRET_KEYS` and
 * `SWITCHYARD_WORKER_SECRET` from the environment, or no check when `SWITCHYARD_AUTH=disabled`.
 *
 * @example
 * ```ts
 * import type { EdgeAuth } from './auth.ts';
 *
 * const auth: EdgeAuth = { secrets: ['a-long-random-secret'] };
 * ```
 */
export type EdgeAuth = { readonly secrets: readonly string[] } | 'disabled';

/**
 * The environment variables whose values are accepted bearer tokens (besides the keys of
 * {@linkcode SECRET_KEYS_ENV_VAR}).
 *
 * @example
 * ```ts
 * import { BEARER_SECRET_ENV_VARS } from './auth.ts';
 * console.log(`set one of ${BEARER_SECRET_ENV_VARS.join(', ')}`);
 * ```
 */
export const BEARER_SECRET_ENV_VARS: readonly string[] = [
  'SUPABASE_SERVICE_ROLE_KEY',
  'SWITCHYARD_WORKER_SECRET',
];

/**
 * The environment variable holding Supabase's secret API keys: a JSON object whose values are
 * keys (`{"default":"sb_secret_…"}`). Each value is an accepted bearer token.
 *
 * @example
 * ```ts
 * import { SECRET_KEYS_ENV_VAR, secretKeys } from './auth.ts';
 * console.assert(SECRET_KEYS_ENV_VAR === 'SUPABASE_SECRET_KEYS');
 * console.assert(secretKeys('{"default":"sb_secret_x"}')[0] === 'sb_secret_x');
 * ```
 */
export const SECRET_KEYS_ENV_VAR = 'SUPABASE_SECRET_KEYS';

/**
 * The keys of a `SUPABASE_SECRET_KEYS` value. Anything but a JSON object (unset, not JSON, a
 * string, an array) gives none; values that are not strings are skipped.
 *
 * @example
 * ```ts
 * import { secretKeys } from './auth.ts';
 * console.assert(secretKeys('{"default":"sb_secret_a","ci":"sb_secret_b"}').length === 2);
 * console.assert(secretKeys('not json').length === 0);
 * ```
 */
export function secretKeys(json: string | undefined): string[] {
  if (!json) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return [];
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return [];
  return Object.values(parsed).filter((v): v is string => typeof v === 'string');
}

/** Compares two strings in time that depends on neither their content nor their lengths. */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const enc = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest('SHA-256', enc.encode(given)),
    crypto.subtle.digest('SHA-256', enc.encode(expected)),
  ]);
  const x = new Uint8Array(a), y = new Uint8Array(b);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

/**
 * Why a request is refused, or `null` when it is authorized. With `auth` undefined the
 * secrets and `SWITCHYARD_AUTH` come from `env`; no configured secret refuses every request.
 *
 * @example
 * ```ts
 * import { authProblem } from './auth.ts';
 *
 * const env = (name: string) => (name === 'SWITCHYARD_WORKER_SECRET' ? 's3cret' : undefined);
 * const request = new Request('http://localhost/', { headers: { authorization: 'Bearer s3cret' } });
 * console.assert((await authProblem(request, undefined, env)) === null);
 * console.assert((await authProblem(new Request('http://localhost/'), undefined, env)) !== null);
 * ```
 */
export async function authProblem(
  request: Request,
  auth: EdgeAuth | undefined,
  env: (name: string) => string | undefined,
): Promise<string | null> {
  let secrets: readonly string[];
  if (auth === 'disabled') return null;
  if (auth !== undefined) {
    secrets = auth.secrets;
  } else {
    const mode = env('SWITCHYARD_AUTH');
    if (mode === 'disabled') return null;
    if (mode !== undefined && mode !== '' && mode !== 'required') {
      return `SWITCHYARD_AUTH "${mode}" is invalid: use "required" (default) or "disabled"`;
    }
    secrets = [
      ...BEARER_SECRET_ENV_VARS.map((name) => env(name) ?? ''),
      ...secretKeys(env(SECRET_KEYS_ENV_VAR)),
    ];
  }
  secrets = secrets.filter((s) => s.length > 0);
  if (secrets.length === 0) {
    return 'no secret is configured: set SWITCHYARD_WORKER_SECRET, SUPABASE_SECRET_KEYS or ' +
      'SUPABASE_SERVICE_ROLE_KEY (or SWITCHYARD_AUTH=disabled for local runs)';
  }
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) return 'missing bearer: send "Authorization: Bearer <worker secret>"';
  let ok = false;
  for (const secret of secrets) ok = (await sameSecret(match[1], secret)) || ok;
  return ok ? null : 'the bearer token is not an accepted worker secret';
}

/**
 * Why `SWITCHYARD_AUTH=disabled` (or `auth: 'disabled'`) is refused, or `null`: it is for local
 * runs, and the hosted runtime shows itself by its environment (docs/design/supabase.md). The
 * queue functions (500 `worker_config`) and the dashboard (`createDashboard` throws) refuse it.
 *
 * @example
 * ```ts
 * import { disabledAuthRefusal } from './auth.ts';
 *
 * const hosted = (name: string) => (name === 'SB_REGION' ? 'eu-west-1' : undefined);
 * console.assert(disabledAuthRefusal('disabled', hosted) !== null);
 * console.assert(disabledAuthRefusal('disabled', () => undefined) === null);
 * ```
 */
export function disabledAuthRefusal(
  auth: EdgeAuth | undefined,
  env: (name: string) => string | undefined,
): string | null {
  const disabled = auth === 'disabled' ||
    (auth === undefined && env('SWITCHYARD_AUTH') === 'disabled');
  if (!disabled) return null;
  const signal = hostedRuntimeSignal({ env });
  if (signal === null) return null;
  const how = auth === 'disabled' ? "auth: 'disabled'" : 'SWITCHYARD_AUTH=disabled';
  return `${how} is refused on Supabase's hosted runtime (${signal} is set): it is for local ` +
    'runs only (npx switchyard serve, supabase functions serve). Remove it (supabase secrets unset ' +
    'SWITCHYARD_AUTH) and send "Authorization: Bearer <SWITCHYARD_WORKER_SECRET or the service ' +
    'role key>"';
}
