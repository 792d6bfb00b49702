/**
 * Successor start (docs/design/runs.md#ready-steps-conditions-and-skips,
 * docs/design/code-layout.md#the-sql-source-and-its-migrations check 5): complete_tasks starts the
 * plain
 * successors of a batch's runs together, and a run with a condition or map step among its ready
 * steps goes through _start_ready_steps. Both end in _queue_plain_tasks; the same successors
 * through either path get the same tasks, message bodies, delays and message order per queue.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, routeFlow } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { pgArray } from '../../lib/sql/worker_queries.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;
const client = untypedClient(db.url);

const QUEUES = { a: 'succ_root', b: 'succ_shared', c: 'succ_other', e: 'succ_shared' } as const;

function successors(slug: string) {
  return new Flow<{ n: number }>({ slug, maxAttempts: 2, baseDelay: 3 })
    .step({ slug: 'a' }, (input) => input.n)
    .step({ slug: 'b', dependsOn: ['a'], startDelay: 5 }, () => 'b')
    .step({ slug: 'c', dependsOn: ['a'], maxAttempts: 7, timeout: 30 }, () => 'c')
    .step({ slug: 'e', dependsOn: ['a'], baseDelay: 9 }, () => 'e');
}

/** A flow with plain successors only: complete_tasks starts them itself. */
const plain = routeFlow(successors('succPlainV1'), { queues: QUEUES });
/** The same, plus a ready sibling with a condition: the run goes through _start_ready_steps. */
const special = routeFlow(
  successors('succSpecialV1').step({ slug: 'x', dependsOn: ['a'], if: { a: 1 } }, () => 'x'),
  { queues: { ...QUEUES, x: 'succ_other' } },
);

async function finishRoot(routed: typeof plain | typeof special, runId: string): Promise<void> {
  const slug = routed.flow.slug;
  const [task] = await sql<{ message_id: string }[]>`
    select message_id::text as message_id from switchyard.step_tasks
     where run_id = ${runId}::uuid and step_slug = 'a'`;
  const worker = crypto.randomUUID();
  await sql`select switchyard.register_worker(${worker}::uuid, ${QUEUES.a}, 'succ-root-worker',
                                              ${pgArray([`${slug}/a`])}::text[])`;
  const claimed = await sql<{ disposition: string }[]>`
    select disposition from switchyard.start_tasks(${QUEUES.a},
      ${pgArray([task.message_id])}::bigint[], ${worker}::uuid)`;
  assert.deepEqual(claimed.map((c) => c.disposition), ['claimed']);
  const [{ ok }] = await sql<{ ok: boolean }[]>`
    select ok from switchyard.complete_tasks(${
    sql.json([{ run_id: runId, step_slug: 'a', attempt: 1, output: 1 }] as never)
  }::jsonb)`;
  assert.equal(ok, true);
}

/** The tasks of steps b, c and e of a run and their messages, in message order per queue. */
async function started(runId: string) {
  const tasks = await sql<Record<string, unknown>[]>`
    select t.step_slug, t.queue_name, t.task_index, t.status, t.attempts_count, t.max_attempts,
           t.base_delay, t.max_delay, t.timeout, t.message_id
      from switchyard.step_tasks t
     where t.run_id = ${runId}::uuid and t.step_slug in ('b', 'c', 'e')
     order by t.queue_name, t.message_id`;
  const rows: Record<string, unknown>[] = [];
  for (const t of tasks) {
    const [m] = await sql<{ body: Record<string, unknown>; delay: number }[]>`
      select message - 'run_id' - 'flow_slug' as body,
             round(extract(epoch from vt - enqueued_at))::int as delay
        from ${sql('pgmq')}.${sql(`q_${t.queue_name}`)} where msg_id = ${t.message_id as string}`;
    const { message_id: _, ...task } = t;
    rows.push({ ...task, body: m.body, delay: m.delay });
  }
  return rows;
}

Deno.test('the same successors through complete_tasks and _start_ready_steps: same tasks, bodies, delays, order', async () => {
  for (const routed of [plain, special]) {
    await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(routed).shape as never)
    }::jsonb)`;
  }
  const results = [];
  for (const routed of [plain, special]) {
    const runId = await client.startFlow(routed.flow.slug, { n: 1 });
    await finishRoot(routed, runId);
    results.push(await started(runId));
  }
  const [viaBatch, viaRun] = results;
  assert.equal(viaBatch.length, 3);
  assert.deepEqual(viaRun, viaBatch);
  assert.deepEqual(viaBatch.map((t) => [t.step_slug, t.queue_name, t.delay]), [
    ['c', 'succ_other', 0],
    ['b', 'succ_shared', 5],
    ['e', 'succ_shared', 0],
  ]);
  assert.deepEqual(viaBatch.find((t) => t.step_slug === 'c'), {
    step_slug: 'c',
    queue_name: 'succ_other',
    task_index: 0,
    status: 'queued',
    attempts_count: 0,
    max_attempts: 7,
    base_delay: 3,
    max_delay: 86400,
    timeout: 30,
    body: { step_slug: 'c' },
    delay: 0,
  });
  // The condition step's task is there too, on the run that took the per-run path.
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.step_tasks t join switchyard.runs r using (run_id)
     where r.flow_slug = 'succSpecialV1' and t.step_slug = 'x'`;
  assert.equal(n, 1);
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
