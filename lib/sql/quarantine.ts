/**
 * Quarantine (`switchyard.quarantine_messages`; docs/design/claim.md#the-unsupported-batch): the
 * explicit
 * operator way past foreign messages that paused a queue function. Every decision stays in
 * SQL; this module calls it and types the answer.
 *
 * @module
 */
import { call, sqlOf, type SqlSource } from './source.ts';

/** What {@linkcode quarantineMessages} did. */
export interface QuarantineResult {
  /** The paused function. */
  functionName: string;
  /** The queue its pause named. */
  queueName: string;
  /** Messages moved into `switchyard.quarantined_messages` (bodies kept there, never here). */
  quarantined: bigint[];
  /** Named messages that belong to a task: left in the queue (the registry lacks the pair). */
  withTask: { messageId: bigint; pair: string }[];
  /** Named messages no longer in the queue. */
  gone: bigint[];
  /** True when the function was resumed (no named message belongs to a task). */
  resumed: boolean;
}

/**
 * Moves the messages named by a function's unsupported-work pause that belong to no task into
 * `switchyard.quarantined_messages` (bodies and headers kept for inspection), then resumes the
 * function, unless a named message belongs to a real task (a registry lacking a version:
 * deploy it, then resume). Messages of tasks are never moved. Never called automatically.
 *
 * @throws {UnknownFunctionError} when no such function is registered
 * @throws {OperationError} when the function is not paused, or was paused by an operator
 *
 * @example
 * ```ts
 * import { createClient } from '../client.ts';
 * import { quarantineMessages } from '../ops.ts';
 * const client = createClient({ connectionString: Deno.env.get('DATABASE_URL') });
 * const result = await quarantineMessages(client, 'classify-threads-worker');
 * console.log(`moved [${result.quarantined.join(', ')}], resumed: ${result.resumed}`);
 * await client.close();
 * ```
 */
export async function quarantineMessages(
  source: SqlSource,
  functionName: string,
): Promise<QuarantineResult> {
  const sql = sqlOf(source);
  const [{ r }] = await call(sql, () =>
    sql<
      {
        r: {
          function_name: string;
          queue: string;
          quarantined: string[];
          with_task: { message_id: string; pair: string }[];
          gone: string[];
          resumed: boolean;
        };
      }[]
    >`select switchyard.quarantine_messages(${functionName}::text) as r`);
  return {
    functionName: r.function_name,
    queueName: r.queue,
    quarantined: r.quarantined.map(BigInt),
    withTask: r.with_task.map((t) => ({ messageId: BigInt(t.message_id), pair: t.pair })),
    gone: r.gone.map(BigInt),
    resumed: r.resumed,
  };
}
