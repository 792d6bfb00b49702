/**
 * The worker's access to the database: one method per SQL call of the core
 * (docs/design/claim.md). No decision is made here; classification, retries
 * and dependency resolution stay in SQL.
 *
 * @module
 */
import type { EndedRunSpan } from '../tracing.ts';
import type postgres from 'postgres';
import type { FlowShape } from '../dsl/placement.ts';

/**
 * A concrete flow a coverage refusal names that the worker's registry lacks, as the database
 * knows it ({@linkcode WorkerQueries.flowsAliases}).
 */
export interface UnlistedFlow {
  flow_slug: string;
  /** The alias it belongs to, if any. */
  alias: string | null;
  /** Whether it is that alias's active target. */
  is_target: boolean;
  started_runs: number;
  /** The target the project's latest compiled declaration gives its alias, if any. */
  declared_target: string | null;
}

/**
 * A row of `switchyard.start_tasks`, with the inputs put back together: SQL sends a run's input
 * once per batch (on the first claimed row of the run) and no input for a root step, whose
 * handler input is the flow input; {@linkcode WorkerQueries.startTasks} gives every claimed row
 * both, as one shared value per run (docs/design/claim.md#start_tasks).
 */
export interface TaskClaim {
  disposition: 'claimed' | 'duplicate' | 'stale' | 'throttled' | 'unsupported';
  message_id: bigint;
  queue_name: string;
  flow_slug: string | null;
  step_slug: string | null;
  run_id: string | null;
  /** The task's position within its step (a map element's index; 0 for an ordinary step). */
  task_index: number | null;
  attempt: number | null;
  timeout: number | null;
  /**
   * Of the step timeout, the milliseconds this attempt already ran on instances that handed it
   * back (docs/design/worker.md#worker-states-and-parts); absent from a 0.3.0 core.
   */
  carried_ms?: number | null;
  /** The handler input: the flow input for a root step, a map task's element, else the dependencies' outputs. */
  input: unknown;
  /** The run's input. */
  flow_input: unknown;
}

/** A task's identity (docs/design/worker.md#worker-states-and-parts): its run, step and index (0 unless a map's). */
export interface TaskKey {
  runId: string;
  stepSlug: string;
  taskIndex: number;
}

/**
 * The limits the SQL core enforces (`switchyard.limits()`, docs/design/limits.md).
 *
 * @example
 * ```ts
 * import type { SqlLimits } from './worker_queries.ts';
 *
 * const defaults: SqlLimits = {
 *   max_input_bytes: 1048576,
 *   max_output_bytes: 1048576,
 *   max_function_name_chars: 63,
 *   max_reason_chars: 1000,
 * };
 * ```
 */
export interface SqlLimits {
  /** Bytes of JSON text a flow input may have. */
  max_input_bytes: number;
  /** Bytes of JSON text a step output may have. */
  max_output_bytes: number;
  /** Characters a function name may have. */
  max_function_name_chars: number;
  /** Characters an operator's pause reason may have. */
  max_reason_chars: number;
}

/**
 * A PostgreSQL array literal for text values. postgres.js' `sql.array()` depends
 * on array types it fetches per connection, and a fresh connection may serialize
 * before they arrive; a literal cast in SQL (`::text[]`, `::bigint[]`) is exact.
 */
export function pgArray(values: readonly (string | bigint | number)[]): string {
  return `{${
    values.map((v) => `"${String(v).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')
  }}`;
}

/** A run that ended while this worker held one of its tasks started. */
export interface EndedRun {
  run_id: string;
  /** `cancelled` or `failed`. */
  status: string;
  /** The cancel reason or the run's error (at most 1,000 characters), or null. */
  reason: string | null;
}

/** What `switchyard.worker_heartbeat` answers. */
export interface HeartbeatAnswer {
  state: 'ok' | 'deprecated' | 'paused' | 'disabled';
  ended_runs: EndedRun[];
}

/** Typed wrappers over the SQL core for one worker's client. */
export class WorkerQueries {
  /** The read's plan per queue and window, and when it was asked (see {@linkcode readWithPoll}). */
  #readPlans = new Map<
    string,
    { at: number; visibility: number; ordered: boolean; claim_batch: boolean }
  >();

  constructor(readonly sql: postgres.Sql) {}

  /** The pause/enabled flags of a function, or null when it has no row yet. */
  async functionFlags(
    functionName: string,
  ): Promise<{ enabled: boolean; paused_at: Date | null; pause_reason: string | null } | null> {
    const rows = await this.sql<
      { enabled: boolean; paused_at: Date | null; pause_reason: string | null }[]
    >`select enabled, paused_at, pause_reason
        from switchyard.function_states(${functionName}::text)`;
    return rows[0] ?? null;
  }

  /**
   * The release of the database's SQL core (`switchyard.core_version()`), or null for a core
   * older than 0.3.0, which has no such function (SQLSTATE 42883).
   */
  async coreVersion(): Promise<string | null> {
    const [row] = await this.sql<{ present: boolean }[]>`
      select to_regprocedure('switchyard.core_version()') is not null as present`;
    if (!row.present) return null;
    const [{ version }] = await this.sql<{ version: string }[]>`
      select switchyard.core_version() as version`;
    return version;
  }

  /** The SQL core's limits (`switchyard.limits()`, docs/design/limits.md). */
  async limits(): Promise<SqlLimits> {
    const [row] = await this.sql<{ limits: SqlLimits }[]>`select switchyard.limits() as limits`;
    return row.limits;
  }

  /**
   * Compiles or verifies a flow: `created`, `verified`, or `updated` when only its runtime
   * options changed (applied to tasks created from now on and recorded in
   * `switchyard.flow_option_changes`).
   */
  async ensureFlow(shape: FlowShape): Promise<'created' | 'verified' | 'updated'> {
    const [row] = await this.sql<{ result: 'created' | 'verified' | 'updated' }[]>`
      select switchyard.ensure_flow(${this.sql.json(shape as never)}::jsonb) as result`;
    return row.result;
  }

  /**
   * {@linkcode ensureFlow} for local development: a changed shape replaces the compiled flow
   * (its runs deleted) and answers `recompiled` (`switchyard.recompile_flow`).
   */
  async recompileFlow(
    shape: FlowShape,
  ): Promise<'created' | 'verified' | 'updated' | 'recompiled'> {
    const [row] = await this.sql<{ result: 'created' | 'verified' | 'updated' | 'recompiled' }[]>`
      select switchyard.recompile_flow(${this.sql.json(shape as never)}::jsonb) as result`;
    return row.result;
  }

  async syncAlias(alias: string, versions: string[]): Promise<string> {
    const [row] = await this.sql<{ result: string }[]>`
      select switchyard.sync_alias(${alias}::text, ${pgArray(versions)}::text[]) as result`;
    return row.result;
  }

  async coverageGaps(
    queue: string,
    pairs: string[],
  ): Promise<{ flow_slug: string; step_slug: string; reasons: string }[]> {
    return await this.sql<{ flow_slug: string; step_slug: string; reasons: string }[]>`
      select flow_slug, step_slug, reasons
        from switchyard.coverage_gaps(${queue}::text, ${pgArray(pairs)}::text[])`;
  }

  /**
   * For the concrete flows a coverage refusal names that the registry lacks: the alias each
   * belongs to, whether it is that alias's active target, its started runs, and the target the
   * project's latest compiled declaration gives the alias, so the refusal can name the command
   * that fixes it.
   */
  async flowsAliases(slugs: string[]): Promise<UnlistedFlow[]> {
    return await this.sql<UnlistedFlow[]>`
      select f.flow_slug, m.alias, (a.alias is not null) as is_target,
             (select count(*)::int from switchyard.runs r
               where r.flow_slug = f.flow_slug and r.status = 'started') as started_runs,
             (select d.versions[cardinality(d.versions)] from switchyard.alias_declarations d
               where d.alias = m.alias) as declared_target
        from unnest(${pgArray(slugs)}::text[]) f(flow_slug)
        left join switchyard.alias_members m on m.flow_slug = f.flow_slug
        left join switchyard.aliases a on a.alias = m.alias and a.flow_slug = f.flow_slug
       order by f.flow_slug`;
  }

  async registerWorker(
    workerId: string,
    queue: string,
    functionName: string,
    pairs: string[],
    heartbeatWindowSeconds = 15, // register_worker's default
  ): Promise<void> {
    await this.sql`select switchyard.register_worker(${workerId}::uuid, ${queue}::text,
      ${functionName}::text, ${pgArray(pairs)}::text[], ${heartbeatWindowSeconds}::int)`;
  }

  /**
   * Message ids read from the queue (bodies are not needed: claims trust identity only). The
   * read hides them for the claim window (`visibilityTimeout`) plus what their claim needs
   * (`switchyard.read_visibility_seconds`: the queue's longest task timeout and the margin,
   * capped), so the claim does not write them again (docs/design/claim.md#read,
   * docs/design/claim.md#hiding-claimed-messages).
   *
   * A plain queue is read by PGMQ's `read_with_poll`, which waits in the database. A queue that
   * `switchyard.read_ordered` names (runs with priorities, or steps with keyed concurrency) is
   * read by `switchyard.read_tasks` in priority order and keys in turn
   * (docs/design/flow-control.md#priority-and-keys-in-turn), which does not
   * wait: this polls it every `pollIntervalMs` for up to `maxPollSeconds`. Either way no
   * statement that waits holds a lock on a switchyard table, so a migration's preamble
   * (docs/design/supabase.md) is
   * never held off by an idle worker. The plan (visibility, ordered) is asked at most once a
   * second per queue, so a busy worker reads with one statement, as before; a timeout changed
   * live, or a queue turned ordered, counts within a second.
   */
  async readWithPoll(
    queue: string,
    visibilityTimeout: number,
    qty: number,
    maxPollSeconds: number,
    pollIntervalMs: number,
  ): Promise<bigint[]> {
    return (await this.readBatch(queue, visibilityTimeout, qty, maxPollSeconds, pollIntervalMs))
      .ids;
  }

  /**
   * {@linkcode readWithPoll}, with what the claim can skip: `hiddenUntil` is the earliest `vt`
   * PGMQ's read gave the batch (as the database wrote it), for {@linkcode startTasks}, so that a
   * claim whose messages are all hidden long enough runs no statement on the queue table
   * (docs/design/claim.md#hiding-claimed-messages); for a queue read in order
   * (`switchyard.read_tasks` answers ids only), the read statement's start plus its visibility,
   * which its writes of `vt` never fall below. Null against a SQL core without
   * `switchyard.claim_batch` (an older release), whose claim is then `start_tasks`, as before.
   */
  async readBatch(
    queue: string,
    visibilityTimeout: number,
    qty: number,
    maxPollSeconds: number,
    pollIntervalMs: number,
  ): Promise<{ ids: bigint[]; hiddenUntil: string | null }> {
    const planKey = `${visibilityTimeout}/${queue}`;
    let plan = this.#readPlans.get(planKey);
    if (plan === undefined || Date.now() - plan.at >= 1000) {
      const [row] = await this.sql<
        { visibility: number; ordered: boolean; claim_batch: boolean }[]
      >`
        select switchyard.read_visibility_seconds(${queue}::text, ${visibilityTimeout}::int)
                 as visibility,
               switchyard.read_ordered(${queue}::text) as ordered,
               to_regprocedure(
                 'switchyard.claim_batch(text, bigint[], uuid, text[], timestamptz)')
                 is not null as claim_batch`;
      plan = { at: Date.now(), ...row };
      this.#readPlans.set(planKey, plan);
    }
    if (!plan.ordered) {
      const rows = await this.sql<{ msg_id: string; until: string }[]>`
        select r.msg_id::text as msg_id, (min(r.vt) over ())::text as until
          from pgmq.read_with_poll(${queue}::text, ${plan.visibility}::int, ${qty}::int,
            ${maxPollSeconds}::int, ${pollIntervalMs}::int) r`;
      return {
        ids: rows.map((r) => BigInt(r.msg_id)),
        hiddenUntil: plan.claim_batch && rows.length > 0 ? rows[0].until : null,
      };
    }
    const deadline = Date.now() + maxPollSeconds * 1000;
    for (;;) {
      // read_tasks answers ids only: the statement's start plus the visibility is a bound its
      // writes of vt (queue_clock() + visibility, later) never fall below.
      const rows = await this.sql<{ msg_id: string; until: string }[]>`
        select m::text as msg_id,
               (statement_timestamp() + make_interval(secs => ${plan.visibility}::int))::text
                 as until
          from switchyard.read_tasks(${queue}::text, ${plan.visibility}::int, ${qty}::int) m`;
      if (rows.length > 0 || Date.now() >= deadline) {
        return {
          ids: rows.map((r) => BigInt(r.msg_id)),
          hiddenUntil: plan.claim_batch && rows.length > 0 ? rows[0].until : null,
        };
      }
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
    }
  }

  /**
   * Claims a batch. `pairs` null (the worker's call) classifies against the exact set the
   * worker registered, so the set is not sent with every batch. `hiddenUntil`, from
   * {@linkcode readBatch}: the read's earliest `vt`, so that `switchyard.claim_batch` writes no
   * message already hidden long enough; null claims with `switchyard.start_tasks`, which checks
   * each message.
   */
  async startTasks(
    queue: string,
    messageIds: bigint[],
    workerId: string,
    pairs: string[] | null,
    hiddenUntil: string | null = null,
  ): Promise<TaskClaim[]> {
    // As text, so SQL NULL (not sent) and JSON null stay apart; parsed here once.
    type Row = Omit<TaskClaim, 'message_id' | 'input' | 'flow_input'> & {
      message_id: string;
      input: string | null;
      flow_input: string | null;
    };
    // The vt goes as text: as a timestamptz parameter the client would cut it to milliseconds.
    const ids = pgArray(messageIds);
    const set = pairs === null ? null : pgArray(pairs);
    const claim = hiddenUntil === null
      ? this.sql`switchyard.start_tasks(${queue}::text, ${ids}::bigint[], ${workerId}::uuid,
          ${set}::text[])`
      : this.sql`switchyard.claim_batch(${queue}::text, ${ids}::bigint[], ${workerId}::uuid,
          ${set}::text[], ${hiddenUntil}::text::timestamptz)`;
    const rows = await this.sql<Row[]>`
      select disposition, message_id::text as message_id, queue_name, flow_slug, step_slug,
             run_id, task_index,
             attempt, timeout, carried_ms, input::text as input, flow_input::text as flow_input
        from ${claim}`;
    const flowInputs = new Map<string, unknown>();
    for (const r of rows) {
      if (r.disposition === 'claimed' && r.flow_input !== null) {
        flowInputs.set(r.run_id!, JSON.parse(r.flow_input));
      }
    }
    return rows.map((r) => {
      if (r.disposition !== 'claimed') {
        return { ...r, message_id: BigInt(r.message_id), input: null, flow_input: null };
      }
      const flowInput = flowInputs.get(r.run_id!);
      return {
        ...r,
        message_id: BigInt(r.message_id),
        input: r.input === null ? flowInput : JSON.parse(r.input),
        flow_input: flowInput,
      };
    });
  }

  async completeTask(
    runId: string,
    stepSlug: string,
    attempt: number,
    output: unknown,
    taskIndex = 0,
  ) {
    const [row] = await this.sql<{ ok: boolean }[]>`
      select switchyard.complete_task(${runId}::uuid, ${stepSlug}::text, ${attempt}::int,
        ${this.sql.json((output ?? null) as never)}::jsonb, ${taskIndex}::int) as ok`;
    return row.ok;
  }

  /** Completes several tasks in one call; one result per item, in order. */
  async completeTasks(
    items: readonly {
      runId: string;
      stepSlug: string;
      taskIndex?: number;
      attempt: number;
      output: unknown;
    }[],
  ): Promise<boolean[]> {
    const doc = items.map((c) => ({
      run_id: c.runId,
      step_slug: c.stepSlug,
      task_index: c.taskIndex ?? 0,
      attempt: c.attempt,
      output: c.output ?? null,
    }));
    const rows = await this.sql<{ ok: boolean }[]>`
      select ok from switchyard.complete_tasks(${this.sql.json(doc as never)}::jsonb)`;
    return rows.map((r) => r.ok);
  }

  async failTask(
    runId: string,
    stepSlug: string,
    attempt: number,
    error: string,
    taskIndex = 0,
    how: { retryAfterSeconds?: number | null; nonRetriable?: boolean } = {},
  ) {
    const [row] = await this.sql<{ result: string }[]>`
      select switchyard.fail_task_with(${runId}::uuid, ${stepSlug}::text, ${attempt}::int,
        ${error}::text, ${taskIndex}::int, ${how.retryAfterSeconds ?? null}::int,
        ${how.nonRetriable ?? false}::boolean) as result`;
    return row.result;
  }

  async heartbeat(workerId: string): Promise<'ok' | 'deprecated' | 'paused' | 'disabled'> {
    const [row] = await this.sql<{ state: 'ok' | 'deprecated' | 'paused' | 'disabled' }[]>`
      select switchyard.heartbeat(${workerId}::uuid) as state`;
    return row.state;
  }

  /**
   * The heartbeat of a 0.4.0 core (`switchyard.worker_heartbeat`): the state, and the runs of
   * this worker's started tasks that ended (cancelled, or failed by another task).
   */
  async heartbeatWithRuns(workerId: string): Promise<HeartbeatAnswer> {
    const [row] = await this.sql<{ answer: HeartbeatAnswer }[]>`
      select switchyard.worker_heartbeat(${workerId}::uuid) as answer`;
    return row.answer;
  }

  /** Saves a running task's checkpoint (`switchyard.checkpoint_task`); its size in bytes. */
  async checkpointTask(
    runId: string,
    stepSlug: string,
    taskIndex: number,
    attempt: number,
    state: unknown,
  ): Promise<number> {
    const [row] = await this.sql<{ n: number }[]>`
      select switchyard.checkpoint_task(${runId}::uuid, ${stepSlug}::text, ${taskIndex}::int,
        ${attempt}::int, ${this.sql.json(state as never)}::jsonb) as n`;
    return row.n;
  }

  /** Records a running task's progress (`switchyard.report_progress`); the event's id. */
  async reportProgress(
    runId: string,
    stepSlug: string,
    taskIndex: number,
    attempt: number,
    data: unknown,
  ): Promise<number> {
    const [row] = await this.sql<{ id: string }[]>`
      select switchyard.report_progress(${runId}::uuid, ${stepSlug}::text, ${taskIndex}::int,
        ${attempt}::int, ${this.sql.json(data as never)}::jsonb)::text as id`;
    return Number(row.id);
  }

  /** A task's last checkpoint, or null (`switchyard.task_checkpoint`). */
  /** Deletes a running task's checkpoint (`switchyard.clear_checkpoint`); whether it had one. */
  async clearCheckpoint(
    runId: string,
    stepSlug: string,
    taskIndex: number,
    attempt: number,
  ): Promise<boolean> {
    const [row] = await this.sql<{ had: boolean }[]>`
      select switchyard.clear_checkpoint(${runId}::uuid, ${stepSlug}::text, ${taskIndex}::int,
        ${attempt}::int) as had`;
    return row.had;
  }

  async taskCheckpoint(
    runId: string,
    stepSlug: string,
    taskIndex: number,
  ): Promise<{ state: unknown; attempt: number } | null> {
    const [row] = await this.sql<{ c: { state: unknown; attempt: number } | null }[]>`
      select switchyard.task_checkpoint(${runId}::uuid, ${stepSlug}::text, ${taskIndex}::int)
        as c`;
    return row.c;
  }

  /** Stall recovery of a queue; each worker is judged by the window it registered with. */
  async recoverStalled(queue: string): Promise<number> {
    const [row] = await this.sql<{ n: number }[]>`
      select switchyard.recover_stalled(${queue}::text) as n`;
    return row.n;
  }

  /**
   * The trace contexts stored with these runs (`switchyard.run_trace_contexts`), by run id; a
   * run without one is absent. Read only while tracing records spans
   * (docs/design/observability.md).
   */
  async runTraceContexts(runIds: readonly string[]): Promise<Map<string, string>> {
    const rows = await this.sql<{ run_id: string; trace_context: string }[]>`
      select run_id, trace_context
        from switchyard.run_trace_contexts(${pgArray(runIds)}::uuid[])`;
    return new Map(rows.map((r) => [r.run_id, r.trace_context]));
  }

  /**
   * Up to `max` traced runs that ended and whose span nobody recorded, marked taken
   * (`switchyard.take_run_spans`): the worker records their spans
   * (docs/design/observability.md#metrics-traces-and-charts).
   */
  async takeRunSpans(max = 100): Promise<EndedRunSpan[]> {
    const rows = await this.sql<{
      run_id: string;
      flow_slug: string;
      flow: string;
      status: string;
      error: string | null;
      started_at: Date;
      ended_at: Date;
      trace_context: string;
      span_context: string;
    }[]>`select * from switchyard.take_run_spans(${max}::int)`;
    return rows.map((r) => ({
      runId: r.run_id,
      flow: r.flow,
      version: r.flow_slug,
      status: r.status,
      error: r.error,
      startedAt: new Date(r.started_at),
      endedAt: new Date(r.ended_at),
      traceContext: r.trace_context,
      spanContext: r.span_context,
    }));
  }

  /**
   * Makes messages visible again at once (a read that arrived after the worker was asked to
   * stop): nothing was claimed, so nothing else changes.
   */
  async releaseMessages(queue: string, messageIds: readonly bigint[]): Promise<void> {
    await this.sql`select pgmq.set_vt(${queue}::text, id, 0)
                     from unnest(${pgArray(messageIds)}::bigint[]) id`;
  }

  /**
   * A stopping worker hands back the started tasks it holds: queued again, visible at once,
   * the attempt refunded (`switchyard.release_tasks`).
   */
  /**
   * Hands back every task the worker holds (`switchyard.release_tasks`): the attempts of the
   * tasks in `handedBack` (handlers that honoured the shutdown, or never started) and of tasks
   * checkpointed since their claim are refunded, within SQL's bounds; the others count.
   */
  async releaseTasks(workerId: string, handedBack: readonly TaskKey[] = []): Promise<number> {
    const keys = handedBack.map((k) => ({
      run_id: k.runId,
      step_slug: k.stepSlug,
      task_index: k.taskIndex,
    }));
    const [row] = await this.sql<{ n: number }[]>`
      select switchyard.release_tasks(${workerId}::uuid, ${this.sql.json(keys as never)}::jsonb)
        as n`;
    return row.n;
  }

  /**
   * Records why this function's worker did not start or paused (`switchyard.record_refusal`,
   * docs/design/worker.md#refusals-are-seen-where-operators-look): one row per function and kind,
   * the latest message kept.
   */
  async recordRefusal(functionName: string, refusal: string, message: string): Promise<void> {
    await this.sql`
      select switchyard.record_refusal(${functionName}::text, ${refusal}::text, ${message}::text)`;
  }

  async workerStopped(workerId: string, reason: string | null): Promise<void> {
    await this.sql`select switchyard.worker_stopped(${workerId}::uuid, ${reason}::text)`;
  }
}
