/**
 * The poller (docs/design/claim.md and docs/design/worker.md#worker-states-and-parts): reads
 * message ids while there are free
 * slots, claims them with `start_tasks` against the exact pair set the worker registered,
 * and hands claimed tasks to the executor. A batch with unsupported work stops the worker
 * fatally; the SQL core has already made the batch visible again and paused the function. The
 * pause is logged and recorded in `switchyard.refusals`
 * (docs/design/worker.md#refusals-are-seen-where-operators-look).
 *
 * @module
 */
import { UnsupportedWorkError } from '../errors.ts';
import type { WorkerQueries } from '../sql/worker_queries.ts';
import type { CompletionWriter } from './completion_writer.ts';
import type { Executor } from './executor.ts';
import type { Lifecycle } from './lifecycle.ts';
import { errorText, sleep, type WorkerLogger } from './persist.ts';
import { endWithError, startClaimSpan } from '../tracing.ts';
import { recordRefusal } from './refusal.ts';

/** What {@linkcode poll} needs. */
export interface PollerOptions {
  q: WorkerQueries;
  lifecycle: Lifecycle;
  executor: Executor;
  writer: CompletionWriter;
  log: WorkerLogger;
  workerId: string;
  queueName: string;
  functionName: string;
  maxConcurrent: number;
  batchSize: number;
  visibilityTimeout: number;
  maxPollSeconds: number;
  pollIntervalMs: number;
}

/** Polls until the lifecycle is stopping; see the module documentation. */
export async function poll(o: PollerOptions): Promise<void> {
  const { q, lifecycle, log } = o;
  let backoff = 0;
  while (!lifecycle.stopping) {
    const free = o.maxConcurrent - o.executor.size;
    // Pending completion writes are bounded too: a slow database slows the reads.
    if (free <= 0 || o.writer.size >= o.maxConcurrent) {
      await lifecycle.waitForWake();
      continue;
    }
    try {
      // The read's earliest vt goes to the claim, which then writes no message hidden long
      // enough already (docs/design/claim.md#hiding-claimed-messages).
      const { ids, hiddenUntil } = await q.readBatch(
        o.queueName,
        o.visibilityTimeout,
        Math.min(o.batchSize, free),
        o.maxPollSeconds,
        o.pollIntervalMs,
      );
      backoff = 0;
      if (ids.length === 0) continue;
      if (lifecycle.stopping) {
        // Read after a stop request: let the messages reappear now rather than after the timeout.
        await q.releaseMessages(o.queueName, ids);
        break;
      }
      // The supported pairs were stored at registration; the claim uses that exact set.
      // (Read and claim stay two transactions: a claim holding the read's row locks could
      // deadlock with a completion archiving a duplicate's message.)
      const span = startClaimSpan({
        'switchyard.queue': o.queueName,
        'switchyard.worker_id': o.workerId,
        'messaging.batch.message_count': ids.length,
      });
      let claims: Awaited<ReturnType<typeof q.startTasks>>;
      // The runs' trace contexts are read only while spans are recorded (an SDK is enabled).
      let traceContexts = new Map<string, string>();
      try {
        claims = await q.startTasks(o.queueName, ids, o.workerId, null, hiddenUntil);
        const claimed = claims.filter((c) => c.disposition === 'claimed');
        span.setAttribute('switchyard.claimed', claimed.length);
        if (span.isRecording() && claimed.length > 0) {
          // The tasks are claimed now: a failed read loses their traces' parents, never them.
          try {
            traceContexts = await q.runTraceContexts([...new Set(claimed.map((c) => c.run_id!))]);
          } catch (e) {
            log.warn(
              `reading the runs' trace contexts failed (spans start new traces): ${errorText(e)}`,
            );
          }
        }
        span.end();
      } catch (e) {
        endWithError(span, e);
        // The read hid the batch for as long as its claim needs (docs/design/claim.md#read), and
        // the failed claim
        // changed nothing: make it visible again now, if the database still answers.
        await q.releaseMessages(o.queueName, ids).catch(() => {});
        throw e;
      }
      const unsupported = claims.filter((c) => c.disposition === 'unsupported');
      if (unsupported.length > 0) {
        const fatal = new UnsupportedWorkError(
          o.queueName,
          o.functionName,
          unsupported.map((c) => c.message_id),
          [
            ...new Set(
              unsupported.map((c) => c.flow_slug ? `${c.flow_slug}/${c.step_slug}` : '(no task)'),
            ),
          ],
        );
        log.error(fatal.message);
        // Where operators look besides this log
        // (docs/design/worker.md#refusals-are-seen-where-operators-look), best effort.
        await recordRefusal(o.functionName, 'unsupported_work', fatal.message, { sql: q.sql, log });
        lifecycle.fail(fatal);
        log.info('stopping: unsupported work');
        break;
      }
      for (const claim of claims) {
        if (claim.disposition === 'claimed') {
          o.executor.run(claim, {
            traceparent: traceContexts.get(claim.run_id!) ?? null,
            claim: span.spanContext(),
          });
        }
      }
    } catch (e) {
      // Connection loss (a database restart) or a transient error: back off and retry.
      backoff = Math.min(backoff + 1, 10);
      log.warn(`poll failed (retrying): ${errorText(e)}`);
      await sleep(200 * backoff);
    }
  }
}
