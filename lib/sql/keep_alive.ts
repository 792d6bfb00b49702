/**
 * The keep-alive (`switchyard.keep_alive`, its pg_cron job and settings;
 * docs/design/versions.md): wakes enabled, unpaused queue functions with no live worker.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from './windows.ts';

/** One wake the keep-alive made (`switchyard.keep_alive`). */
export interface WakeRequest {
  /** The function woken. */
  functionName: string;
  /** Its queue. */
  queueName: string;
  /** The function's URL (or its gateway path `/functions/v1/<name>` without a base URL). */
  url: string;
  /** `pg_net` when an HTTP request went out, `recorded` when pg_net is not installed. */
  via: 'pg_net' | 'recorded';
  /** pg_net's request id. */
  requestId: bigint | null;
}

/** Options of {@linkcode keepAlive}. */
export interface KeepAliveOptions {
  /** e.g. `https://<project-ref>.supabase.co`; default: the `functions_base_url` setting. */
  baseUrl?: string;
  /** A function woken less than this many seconds ago is skipped (default 30). */
  debounceSeconds?: number;
  /**
   * A worker without a heartbeat for this long no longer counts as live (default 15): it widens
   * each worker's own window, never narrows it (docs/design/versions.md).
   */
  heartbeatWindowSeconds?: number;
}

/**
 * Wakes every function that is enabled, unpaused and has no live worker, unless it
 * was woken within the debounce window; returns the wakes. The pg_cron job made by
 * {@linkcode scheduleKeepAlive} runs the same SQL function.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { keepAlive } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * for (const wake of await keepAlive(client, { debounceSeconds: 60 })) {
 *   console.log(`woke ${wake.functionName} via ${wake.via}`);
 * }
 * await client.close();
 * ```
 */
export async function keepAlive(
  source: SqlSource,
  { baseUrl, debounceSeconds = 30, heartbeatWindowSeconds = DEFAULT_HEARTBEAT_WINDOW_SECONDS }:
    KeepAliveOptions = {},
): Promise<WakeRequest[]> {
  const sql = sqlOf(source);
  const rows = await call(sql, () =>
    sql<
      {
        function_name: string;
        queue_name: string;
        url: string;
        via: 'pg_net' | 'recorded';
        request_id: string | null;
      }[]
    >`
      select function_name, queue_name, url, via, request_id::text as request_id
        from switchyard.keep_alive(${baseUrl ?? null}::text, ${debounceSeconds}::int,
                                   ${heartbeatWindowSeconds}::int)
       order by function_name`);
  return rows.map((r) => ({
    functionName: r.function_name,
    queueName: r.queue_name,
    url: r.url,
    via: r.via,
    requestId: r.request_id === null ? null : BigInt(r.request_id),
  }));
}

/**
 * The SQL statement a cron job runs for the keep-alive. Use it with
 * `cron.schedule_in_database(...)` where pg_cron lives in another database.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { keepAliveCommand } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * console.log(await keepAliveCommand(client, { debounceSeconds: 30 }));
 * await client.close();
 * ```
 */
export async function keepAliveCommand(
  source: SqlSource,
  { baseUrl, debounceSeconds = 30 }: Omit<KeepAliveOptions, 'heartbeatWindowSeconds'> = {},
): Promise<string> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ command: string }[]>`
      select switchyard.keep_alive_command(${
      baseUrl ?? null
    }::text, ${debounceSeconds}::int) as command`);
  return row.command;
}

/**
 * Creates or updates the pg_cron job `switchyard_keep_alive` in the connected
 * database (the one pg_cron is installed in, as on Supabase); returns its job id.
 *
 * @throws {PgCronMissingError} when pg_cron is not installed in this database
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { scheduleKeepAlive } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const jobId = await scheduleKeepAlive(client, { schedule: '* * * * *' });
 * console.log(`keep-alive job ${jobId}`);
 * await client.close();
 * ```
 */
export async function scheduleKeepAlive(
  source: SqlSource,
  { schedule = '* * * * *', baseUrl, debounceSeconds = 30 }: {
    schedule?: string;
    baseUrl?: string;
    debounceSeconds?: number;
  } = {},
): Promise<number> {
  const sql = sqlOf(source);
  const [row] = await call(sql, () =>
    sql<{ job: string }[]>`
      select switchyard.schedule_keep_alive(${schedule}::text, ${baseUrl ?? null}::text,
                                            ${debounceSeconds}::int)::text as job`);
  return Number(row.job);
}

/**
 * Removes the keep-alive job; false when there was none (or no pg_cron).
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { unscheduleKeepAlive } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * await unscheduleKeepAlive(client);
 * await client.close();
 * ```
 */
export async function unscheduleKeepAlive(source: SqlSource): Promise<boolean> {
  const sql = sqlOf(source);
  const [row] = await call(
    sql,
    () => sql<{ removed: boolean }[]>`select switchyard.unschedule_keep_alive() as removed`,
  );
  return row.removed;
}

/**
 * Settings the keep-alive reads. The bearer is better kept in Supabase Vault.
 * `functions_hosts` lists the hosts the base URL may name (comma-separated); without it, a
 * Supabase project's own host (`<ref>.supabase.co`) or a local one (docs/design/versions.md).
 */
export type KeepAliveSetting = 'functions_base_url' | 'functions_bearer' | 'functions_hosts';

/**
 * Sets (or with `null` removes) a keep-alive setting. On Supabase prefer a Vault
 * secret named `switchyard_functions_bearer` for the bearer: it wins over the setting.
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { setKeepAliveSetting } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * await setKeepAliveSetting(client, 'functions_base_url', 'https://abcd.supabase.co');
 * await client.close();
 * ```
 */
export async function setKeepAliveSetting(
  source: SqlSource,
  name: KeepAliveSetting,
  value: string | null,
): Promise<void> {
  const sql = sqlOf(source);
  await call(sql, () => sql`select switchyard.set_setting(${name}::text, ${value}::text)`);
}
