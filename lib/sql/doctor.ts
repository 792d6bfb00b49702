/**
 * What `deno task doctor` reads from a database (docs/design/local-runs.md#doctor): the migrations
 * the
 * Supabase CLI recorded, the SQL core's release, aliases, queue functions with their flags,
 * workers and refusals, the work on each queue, runs waiting with no live worker, the keep-alive's
 * failing wakes, row trigger declarations (installed, backfill), and whether pg_net, pg_cron and the keep-alive job are there. Reads only; the
 * judgement (what is a problem, and the command that fixes it) is the doctor's.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';
import {
  type FunctionRefusal,
  functionRefusals,
  type WakeFailure,
  wakeFailures,
} from './refusals.ts';
import { DEFAULT_HEARTBEAT_WINDOW_SECONDS } from './windows.ts';
import { listRowTriggers, type RowTrigger } from './row_triggers.ts';

/** A queue function as the doctor sees it. */
export interface DoctorFunction {
  functionName: string;
  queueName: string;
  enabled: boolean;
  pausedAt: Date | null;
  pauseReason: string | null;
  /** The pause was made by unsupported work (it names messages), not by an operator. */
  pausedByWork: boolean;
  createdAt: Date;
  lastWokenAt: Date | null;
  liveWorkers: number;
  /** When its latest worker registered, null when none ever did. */
  lastStartedAt: Date | null;
}

/** Work on one queue: its open tasks. */
export interface QueueWork {
  queueName: string;
  /** Tasks queued (waiting for a worker). */
  queued: number;
  /** Tasks started (a worker has them). */
  started: number;
  /** Runs those tasks belong to. */
  runs: number;
}

/** Runs with a task queued on a queue for longer than the threshold. */
export interface WaitingRuns {
  queueName: string;
  runs: number;
  /** When the longest-waiting task was queued. */
  oldestQueuedAt: Date;
}

/**
 * An open batch the tick should have closed (docs/design/batching.md): its timeout passed more
 * than two minutes ago, or its last close failed.
 */
export interface StuckBatch {
  startedAs: string;
  batchKey: string;
  size: number;
  closeAt: Date;
  lastError: string | null;
}

/** The keep-alive's pg_cron job (`switchyard_keep_alive`). */
export interface KeepAliveJob {
  active: boolean;
  /** Its latest run in `cron.job_run_details`, when pg_cron keeps them. */
  lastRun: { status: string; message: string | null; at: Date } | null;
}

/** Everything {@linkcode doctorFacts} reads. */
export interface DoctorFacts {
  /** The database's name. */
  database: string;
  /** Migrations `supabase db push` recorded (version, name); null: none was ever recorded. */
  migrations: { version: string; name: string | null }[] | null;
  /** The SQL core's release; null when the core is older than 0.3.0; undefined: no core. */
  coreVersion: string | null | undefined;
  /** Aliases and their active versions. */
  aliases: { alias: string; flowSlug: string }[];
  functions: DoctorFunction[];
  work: QueueWork[];
  waiting: WaitingRuns[];
  refusals: FunctionRefusal[];
  wakeFailures: WakeFailure[];
  /** pg_net's `net.http_post` exists. */
  pgNet: boolean;
  /** pg_cron's `cron.job` is in this database. */
  pgCron: boolean;
  /** `cron.database_name`, where pg_cron runs (null when it is not preloaded). */
  cronDatabase: string | null;
  /** The keep-alive job; null when there is none (or pg_cron is not here). */
  keepAliveJob: KeepAliveJob | null;
  /** The `functions_base_url` setting. */
  functionsBaseUrl: string | null;
  /** Open batches overdue or failing to close (none on a core without batching). */
  stuckBatches?: StuckBatch[];
  /**
   * Row trigger declarations (docs/design/ingestion.md): whether each trigger is in place and
   * its backfill's state. Empty before the core has them.
   */
  rowTriggers: RowTrigger[];
}

/**
 * Reads the facts the doctor judges. Without the SQL core only the migrations and the
 * extensions are read.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { doctorFacts } from './doctor.ts';
 * const sql = postgres(Deno.env.get('DATABASE_URL')!);
 * console.log((await doctorFacts(sql, { waitingSeconds: 300 })).functions.length);
 * await sql.end();
 * ```
 */
export async function doctorFacts(
  source: SqlSource,
  { waitingSeconds }: { waitingSeconds: number },
): Promise<DoctorFacts> {
  const sql = sqlOf(source);
  return await call(sql, async () => {
    const [env] = await sql<
      {
        database: string;
        has_migrations: boolean;
        has_core: boolean;
        has_version: boolean;
        has_refusals: boolean;
        has_row_triggers: boolean;
        pg_net: boolean;
        pg_cron: boolean;
        cron_runs: boolean;
        cron_database: string | null;
      }[]
    >`
      select current_database() as database,
             to_regclass('supabase_migrations.schema_migrations') is not null as has_migrations,
             to_regclass('switchyard.worker_functions') is not null as has_core,
             to_regprocedure('switchyard.core_version()') is not null as has_version,
             to_regclass('switchyard.refusals') is not null as has_refusals,
             to_regclass('switchyard.row_triggers') is not null as has_row_triggers,
             exists (select 1 from pg_catalog.pg_proc p
                       join pg_catalog.pg_namespace n on n.oid = p.pronamespace
                      where n.nspname = 'net' and p.proname = 'http_post') as pg_net,
             to_regclass('cron.job') is not null as pg_cron,
             to_regclass('cron.job_run_details') is not null as cron_runs,
             current_setting('cron.database_name', true) as cron_database`;
    const migrations = env.has_migrations
      ? (await sql.unsafe<{ version: string; name: string | null }[]>(
        'select version, name from supabase_migrations.schema_migrations order by version',
      )).map((r) => ({ version: r.version, name: r.name }))
      : null;
    let keepAliveJob: KeepAliveJob | null = null;
    if (env.pg_cron) {
      const [job] = await sql.unsafe<{ jobid: string; active: boolean }[]>(
        `select jobid::text as jobid, active from cron.job
          where jobname = 'switchyard_keep_alive' order by jobid desc limit 1`,
      );
      if (job) {
        const [run] = env.cron_runs
          ? await sql.unsafe<{ status: string; return_message: string | null; at: Date }[]>(
            `select status, return_message, start_time as at from cron.job_run_details
              where jobid = $1::bigint and status in ('succeeded', 'failed')
              order by runid desc limit 1`,
            [job.jobid],
          )
          : [];
        keepAliveJob = {
          active: job.active,
          lastRun: run ? { status: run.status, message: run.return_message, at: run.at } : null,
        };
      }
    }
    const facts: DoctorFacts = {
      database: env.database,
      migrations,
      coreVersion: undefined,
      aliases: [],
      functions: [],
      work: [],
      waiting: [],
      refusals: [],
      wakeFailures: [],
      pgNet: env.pg_net,
      pgCron: env.pg_cron,
      cronDatabase: env.cron_database || null,
      keepAliveJob,
      functionsBaseUrl: null,
      rowTriggers: [],
    };
    if (!env.has_core) return facts;
    facts.coreVersion = env.has_version
      ? (await sql<{ v: string }[]>`select switchyard.core_version() as v`)[0].v
      : null;
    facts.aliases = (await sql<{ alias: string; flow_slug: string }[]>`
      select alias, flow_slug from switchyard.aliases order by alias`)
      .map((r) => ({ alias: r.alias, flowSlug: r.flow_slug }));
    facts.functions = (await sql<
      {
        function_name: string;
        queue_name: string;
        enabled: boolean;
        paused_at: Date | null;
        pause_reason: string | null;
        paused_by_work: boolean;
        created_at: Date;
        last_woken_at: Date | null;
        live_workers: number;
        last_started_at: Date | null;
      }[]
    >`
      select s.function_name, s.queue_name, s.enabled, s.paused_at, s.pause_reason,
             f.pause_detail is not null as paused_by_work, f.created_at, s.last_woken_at,
             s.live_workers,
             (select max(w.started_at) from switchyard.workers w
               where w.function_name = s.function_name) as last_started_at
        from switchyard.function_states(null, ${DEFAULT_HEARTBEAT_WINDOW_SECONDS}::int) s
        join switchyard.worker_functions f using (function_name)
       order by s.function_name`).map((r) => ({
      functionName: r.function_name,
      queueName: r.queue_name,
      enabled: r.enabled,
      pausedAt: r.paused_at,
      pauseReason: r.pause_reason,
      pausedByWork: r.paused_by_work,
      createdAt: r.created_at,
      lastWokenAt: r.last_woken_at,
      liveWorkers: r.live_workers,
      lastStartedAt: r.last_started_at,
    }));
    facts.work = (await sql<
      { queue_name: string; queued: number; started: number; runs: number }[]
    >`
      select t.queue_name, count(*) filter (where t.status = 'queued')::int as queued,
             count(*) filter (where t.status = 'started')::int as started,
             count(distinct t.run_id)::int as runs
        from switchyard.step_tasks t
       where t.status in ('queued', 'started')
       group by t.queue_name
       order by t.queue_name`).map((r) => ({
      queueName: r.queue_name,
      queued: r.queued,
      started: r.started,
      runs: r.runs,
    }));
    facts.waiting = (await sql<{ queue_name: string; runs: number; oldest: Date }[]>`
      select t.queue_name, count(distinct t.run_id)::int as runs, min(t.queued_at) as oldest
        from switchyard.step_tasks t
       where t.status = 'queued'
         and t.queued_at < now() - make_interval(secs => ${waitingSeconds}::int)
       group by t.queue_name
       order by t.queue_name`).map((r) => ({
      queueName: r.queue_name,
      runs: r.runs,
      oldestQueuedAt: r.oldest,
    }));
    // Batches (docs/design/batching.md), on a core that has them.
    if (
      (await sql<{ ok: boolean }[]>`
      select to_regprocedure('switchyard.list_batches(int)') is not null as ok`)[0].ok
    ) {
      facts.stuckBatches = (await sql<
        {
          started_as: string;
          batch_key: string;
          size: number;
          close_at: Date;
          last_error: string | null;
        }[]
      >`
        select started_as, batch_key, size, close_at, last_error
          from switchyard.list_batches(100000)
         where last_error is not null or close_at < switchyard.clock_now() - interval '2 minutes'
         limit 100`).map((r) => ({
        startedAs: r.started_as,
        batchKey: r.batch_key,
        size: r.size,
        closeAt: r.close_at,
        lastError: r.last_error,
      }));
    }
    // A core older than this release has no records of refusals and wakes.
    if (env.has_refusals) {
      facts.refusals = await functionRefusals(sql);
      facts.wakeFailures = await wakeFailures(sql);
    }
    if (env.has_row_triggers) facts.rowTriggers = await listRowTriggers(sql);
    const [base] = await sql<{ value: string }[]>`
      select value from switchyard.settings where name = 'functions_base_url'`;
    facts.functionsBaseUrl = base?.value ?? null;
    return facts;
  });
}
