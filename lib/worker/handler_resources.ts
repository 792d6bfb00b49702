/**
 * What the worker lends to handlers through their context
 * (docs/design/claim.md#dispatch-and-completion): a
 * read-only environment, a postgres.js pool of their own (opened on first use) and a
 * supabase-js client when `SUPABASE_URL` and `SUPABASE_SERVICE_ROLE_KEY` are both set.
 *
 * @module
 */
import type { HandlerEnv, HandlerSql, HandlerSupabase } from '../dsl/context.ts';
import { openSql, type Sql } from '../sql/connection.ts';

/** The shared, per-worker part of every handler context. */
export interface HandlerResources {
  /** Read-only environment. */
  readonly env: HandlerEnv;
  /** The handlers' postgres.js client (opened on first call). */
  sql(): HandlerSql;
  /** The supabase-js client, or undefined without `SUPABASE_URL` and the service role key. */
  readonly supabase: HandlerSupabase | undefined;
  /** Closes the handlers' pool if the worker opened one. */
  close(): Promise<void>;
}

/** Options of {@linkcode openHandlerResources}. */
export interface HandlerResourceOptions {
  /** Reads an environment variable (the platform's, or `Deno.env`). */
  env: (name: string) => string | undefined;
  /** The database URL for the handlers' own pool; absent when the worker was given a client. */
  url: string | undefined;
  /** The client the worker was given (used when there is no URL). */
  given: Sql | undefined;
  /** Connections in the handlers' pool. */
  max: number;
}

/**
 * Builds the resources; imports supabase-js only when both Supabase variables are set.
 *
 * @example
 * ```ts
 * import { openHandlerResources } from './handler_resources.ts';
 *
 * const resources = await openHandlerResources({
 *   env: (name) => Deno.env.get(name),
 *   url: Deno.env.get('DATABASE_URL'),
 *   given: undefined,
 *   max: 2,
 * });
 * console.log(resources.supabase ? 'supabase-js ready' : 'no Supabase variables');
 * await resources.close();
 * ```
 */
export async function openHandlerResources(
  options: HandlerResourceOptions,
): Promise<HandlerResources> {
  const read = options.env;
  const env: HandlerEnv = Object.freeze({ get: (name: string) => read(name) });
  const supabaseUrl = read('SUPABASE_URL');
  const serviceKey = read('SUPABASE_SERVICE_ROLE_KEY');
  let supabase: HandlerSupabase | undefined;
  if (supabaseUrl && serviceKey) {
    const { createClient } = await import('@supabase/supabase-js');
    supabase = createClient(supabaseUrl, serviceKey, {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    }) as HandlerSupabase;
  }
  let own: Sql | undefined;
  const sql = (): HandlerSql => {
    if (options.url === undefined) return options.given as unknown as HandlerSql;
    own ??= openSql(options.url, { max: options.max });
    return own as unknown as HandlerSql;
  };
  return {
    env,
    sql,
    supabase,
    async close() {
      await own?.end({ timeout: 5 }).catch(() => {});
    },
  };
}
