/**
 * Retention (issue 11, docs/design/versions.md): `switchyard.prune` removes finished runs with
 * every row they left and the PGMQ archive rows of their messages, in bounded batches, while
 * workers run; never an open run, never another run's or flow's archive rows. Each test
 * clones its own database, since prune is global. "Old" runs are made old by moving their
 * finish time back (prune refuses cutoffs under an hour).
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { OperationError, PgCronMissingError } from '../../lib/errors.ts';
import { Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { prune, pruneAll, pruneCommand, schedulePrune, unschedulePrune } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { ageInterval } from '../../cli/prune.ts';
import { createTestDatabase, type TestDatabase, withCronDatabase } from '../_helpers/db.ts';
import { deno, envWithout } from '../_helpers/process.ts';
import { FAST, waitFor, within } from '../_helpers/wait.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const quiet = { info() {}, warn() {}, error() {} };

/** A fresh database and its client for one test. */
async function fresh() {
  const db = await createTestDatabase();
  const client = untypedClient(db.url);
  return {
    db,
    client,
    base: { connectionString: db.url, logger: quiet, ...FAST },
    async close() {
      await client.close();
      await db.close();
    },
  };
}

/** Moves the finish time of runs back by `days` days: they become old enough to prune. */
async function age(db: TestDatabase, runIds: string[], days = 8) {
  await db.sql`update switchyard.runs
                  set completed_at = completed_at - make_interval(days => ${days}::int),
                      failed_at = failed_at - make_interval(days => ${days}::int)
                where run_id = any(${runIds}::uuid[])`;
}

/** Every (queue, message id) of the runs' tasks. */
async function messagesOf(db: TestDatabase, runIds: string[]) {
  return (await db.sql<{ queue_name: string; message_id: string }[]>`
    select queue_name, message_id::text from switchyard.step_tasks
     where run_id = any(${runIds}::uuid[]) order by queue_name, message_id`)
    .map((r) => `${r.queue_name}:${r.message_id}`);
}

/** How many rows the runs still have in each table. */
async function rowsOf(db: TestDatabase, runIds: string[]) {
  const [r] = await db.sql<{ runs: number; states: number; tasks: number }[]>`
    select (select count(*)::int from switchyard.runs where run_id = any(${runIds}::uuid[])) as runs,
           (select count(*)::int from switchyard.step_states where run_id = any(${runIds}::uuid[]))
             as states,
           (select count(*)::int from switchyard.step_tasks where run_id = any(${runIds}::uuid[]))
             as tasks`;
  return { ...r };
}

/** Message ids in a PGMQ table (`q_` or `a_` of a queue). */
async function idsIn(db: TestDatabase, table: string): Promise<Set<string>> {
  const rows = await db.sql.unsafe<{ id: string }[]>(
    `select msg_id::text as id from pgmq.${table}`,
  );
  return new Set(rows.map((r) => r.id));
}

Deno.test('a pruned run is gone with all its rows and archive rows; other runs and flows on its queue are untouched', async () => {
  const t = await fresh();
  try {
    // Two flows on one shared queue, so they share one archive table.
    const a = new Flow<{ fail: boolean }>({ slug: 'keepA', maxAttempts: 1 })
      .step({ slug: 'one' }, (input) => {
        if (input.fail) throw new Error('boom');
        return { ok: true };
      })
      .step({ slug: 'two', dependsOn: ['one'] }, (input) => ({ got: input.one.ok }));
    const b = new Flow<{ n: number }>({ slug: 'keepB' }).step({ slug: 'go' }, (i) => ({ n: i.n }));
    const registry = [
      routeFlow(a, { queues: { one: 'retention_shared', two: 'retention_shared' } }),
      routeFlow(b, { queues: { go: 'retention_shared' } }),
    ] as const;
    const worker = await startWorker(registry, {
      ...t.base,
      queueName: 'retention_shared',
      maxConcurrent: 4,
    });
    let oldRuns: string[], newA: string[], newB: string[];
    try {
      oldRuns = [
        await t.client.startFlow('keepA', { fail: false }),
        await t.client.startFlow('keepA', { fail: false }),
        await t.client.startFlow('keepA', { fail: true }),
      ];
      newA = [await t.client.startFlow('keepA', { fail: false })];
      newB = [
        await t.client.startFlow('keepB', { n: 1 }),
        await t.client.startFlow('keepB', { n: 2 }),
      ];
      for (const id of [...oldRuns, ...newA, ...newB]) await t.client.waitForRun(id);
    } finally {
      await worker.stop();
    }
    assert.equal((await t.client.runStatus(oldRuns[2]))?.status, 'failed');
    await age(t.db, oldRuns);
    // Old keep-alive records and rows of long-dead workers go too; recent ones stay.
    await t.db.sql`select switchyard.register_function('retention-idle', 'retention_shared')`;
    await t.db
      .sql`insert into switchyard.wake_requests (function_name, queue_name, url, via, requested_at)
      values ('retention-idle', 'retention_shared', '/functions/v1/retention-idle', 'recorded',
              now() - interval '9 days'),
             ('retention-idle', 'retention_shared', '/functions/v1/retention-idle', 'recorded', now())`;
    await t.db.sql`update switchyard.workers
                      set last_heartbeat_at = now() - interval '9 days',
                          stopped_at = now() - interval '9 days'
                    where worker_id = ${worker.workerId}`;
    const stillLive = crypto.randomUUID();
    await t.db.sql`select switchyard.register_worker(${stillLive}::uuid, 'retention_shared',
                     'retention-idle', array['keepB/go'])`;

    const oldMessages = await messagesOf(t.db, oldRuns);
    const otherMessages = await messagesOf(t.db, [...newA, ...newB]);
    assert.equal(oldMessages.length, 5, 'two tasks per completed run, one for the failed run');
    const archivedBefore = await idsIn(t.db, 'a_retention_shared');
    for (const m of [...oldMessages, ...otherMessages]) {
      assert.ok(archivedBefore.has(m.split(':')[1]), `message ${m} was archived`);
    }

    const removed = await prune(t.client, { olderThan: '7 days' });
    assert.deepEqual(removed, {
      runs: 3,
      stepStates: 6, // the failed run's second step never started, but has its state
      stepTasks: 5,
      archiveRows: 5,
      queueMessages: 0,
      heldRuns: 0,
      wakeRequests: 1,
      workers: 1,
    });
    assert.deepEqual(await rowsOf(t.db, oldRuns), { runs: 0, states: 0, tasks: 0 });
    for (const id of oldRuns) assert.equal(await t.client.runStatus(id), null);
    const archivedAfter = await idsIn(t.db, 'a_retention_shared');
    for (const m of oldMessages) assert.ok(!archivedAfter.has(m.split(':')[1]), `${m} is gone`);
    for (const m of otherMessages) {
      assert.ok(archivedAfter.has(m.split(':')[1]), `${m} of a newer run or another flow stays`);
    }
    assert.equal(archivedAfter.size, archivedBefore.size - 5);
    assert.deepEqual(await rowsOf(t.db, [...newA, ...newB]), { runs: 3, states: 4, tasks: 4 });
    for (const id of [...newA, ...newB]) {
      assert.equal((await t.client.runStatus(id))?.status, 'completed');
    }
    const [left] = await t.db.sql`
      select (select count(*)::int from switchyard.wake_requests) as wakes,
             (select count(*)::int from switchyard.workers where worker_id = ${stillLive}) as live`;
    assert.deepEqual({ ...left }, { wakes: 1, live: 1 });

    assert.deepEqual(await prune(t.client, { olderThan: '7 days' }), {
      runs: 0,
      stepStates: 0,
      stepTasks: 0,
      archiveRows: 0,
      queueMessages: 0,
      heldRuns: 0,
      wakeRequests: 0,
      workers: 0,
    });
  } finally {
    await t.close();
  }
});

Deno.test('prune never picks an open run, however old: a run started 30 days ago keeps every row and its message', async () => {
  const t = await fresh();
  try {
    const flow = new Flow<{ n: number }>({ slug: 'agedOpen' })
      .step({ slug: 'one' }, (input) => ({ n: input.n }))
      .step({ slug: 'two', dependsOn: ['one'] }, (input) => ({ n: input.one.n + 1 }));
    await (await startWorker(flow, t.base)).stop(); // compiles the flow
    const open = await t.client.startFlow('agedOpen', { n: 1 });
    const ended = await t.client.startFlow('agedOpen', { n: 2 });
    await t.db.sql`select switchyard.cancel_run(${ended}::uuid, 'ended on purpose')`;
    // Both 30 days old in every timestamp they have: only the ended one may go.
    const both = [open, ended];
    await t.db.sql`update switchyard.runs set started_at = started_at - interval '30 days',
                          cancelled_at = cancelled_at - interval '30 days'
                    where run_id = any(${both}::uuid[])`;
    await t.db.sql`update switchyard.step_states set created_at = created_at - interval '30 days'
                    where run_id = any(${both}::uuid[])`;
    await t.db.sql`update switchyard.step_tasks set queued_at = queued_at - interval '30 days'
                    where run_id = any(${both}::uuid[])`;
    const [message] = await messagesOf(t.db, [open]);
    const removed = await prune(t.client, { olderThan: '7 days' });
    assert.equal(removed.runs, 1, 'the cancelled run only');
    assert.equal(removed.heldRuns, 0, 'the open run was never a candidate');
    assert.equal(removed.queueMessages, 0, 'no queued message was deleted');
    assert.deepEqual(await rowsOf(t.db, [ended]), { runs: 0, states: 0, tasks: 0 });
    assert.deepEqual(await rowsOf(t.db, [open]), { runs: 1, states: 2, tasks: 1 });
    assert.ok((await idsIn(t.db, 'q_agedopen')).has(message.split(':')[1]), 'its message waits');
    // And the open run still finishes.
    const worker = await startWorker(flow, t.base);
    try {
      const status = await t.client.waitForRun(open);
      assert.deepEqual([status.status, status.output], ['completed', { two: { n: 2 } }]);
    } finally {
      await worker.stop();
    }
  } finally {
    await t.close();
  }
});

Deno.test('prune under load with workers running loses no open work', async () => {
  const t = await fresh();
  // Records every run prune deletes, with the status it had.
  await t.db.sql.unsafe(`
    create table public.deleted_runs (run_id uuid, status text);
    create function public.record_deleted_run() returns trigger language plpgsql as $$
      begin insert into public.deleted_runs values (old.run_id, old.status); return old; end $$;
    create trigger record_deleted_run before delete on switchyard.runs
      for each row execute function public.record_deleted_run();`);
  // Two steps (a successor start per run); every seventh run fails once and is retried.
  const flow = new Flow<{ n: number }>({ slug: 'churn', maxAttempts: 3, baseDelay: 1 })
    .step({ slug: 'one' }, (input, ctx) => {
      if (input.n % 7 === 0 && ctx.attempt === 1) throw new Error('first attempt fails');
      return { n: input.n };
    })
    .step({ slug: 'two', dependsOn: ['one'] }, (input) => ({ n: input.one.n * 2 }));
  const options = { ...t.base, maxConcurrent: 8, batchSize: 4 };
  const workers = [await startWorker(flow, options), await startWorker(flow, options)];
  const TOTAL = 300;
  const started: string[] = [];
  let producing = true;
  const pruned = { runs: 0, held: 0, batches: 0 };
  try {
    const producer = (async () => {
      for (let i = 0; i < TOTAL; i++) {
        started.push(await t.client.startFlow('churn', { n: i }));
        if (i % 15 === 14) await new Promise((r) => setTimeout(r, 20));
      }
      producing = false;
    })();
    // Meanwhile: make every finished run old at once (runs that finished a moment ago, whose
    // duplicates and late answers may still arrive) and prune in small batches.
    const pruner = (async () => {
      for (;;) {
        await t.db.sql`update switchyard.runs
                          set completed_at = completed_at - interval '30 days'
                        where status = 'completed' and completed_at > now() - interval '1 day'`;
        const r = await prune(t.client, { olderThan: '7 days', batchSize: 10 });
        pruned.runs += r.runs;
        pruned.held += r.heldRuns;
        pruned.batches++;
        const [{ open }] = await t.db.sql<{ open: number }[]>`
          select count(*)::int as open from switchyard.runs where status = 'started'`;
        if (!producing && open === 0 && r.runs === 0) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await Promise.race([
      Promise.all([producer, pruner]),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('load did not finish')), 90_000)
      ),
    ]);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
  try {
    const deleted = await t.db.sql<{ run_id: string; status: string }[]>`
      select run_id::text, status from public.deleted_runs`;
    assert.ok(pruned.runs > TOTAL / 3, `prune ran during the load (${pruned.runs} runs)`);
    assert.equal(deleted.length, pruned.runs);
    assert.deepEqual(
      [...new Set(deleted.map((d) => d.status))],
      ['completed'],
      'only finished runs were deleted',
    );
    const remaining = await t.db.sql<{ run_id: string; status: string; output: unknown }[]>`
      select run_id::text, status, output from switchyard.runs where flow_slug = 'churn'`;
    assert.ok(remaining.every((r) => r.status === 'completed'), 'every remaining run completed');
    const seen = new Set([...deleted, ...remaining].map((r) => r.run_id));
    assert.equal(seen.size, TOTAL);
    assert.ok(started.every((id) => seen.has(id)), 'every run completed, pruned or not');
    const [state] = await t.db.sql`
      select (select count(*)::int from pgmq.q_churn) as queued,
             (select count(*)::int from switchyard.worker_functions where paused_at is not null)
               as paused,
             (select count(*)::int from switchyard.step_tasks t
                where not exists (select 1 from switchyard.runs r where r.run_id = t.run_id))
               as orphans`;
    assert.deepEqual({ ...state }, { queued: 0, paused: 0, orphans: 0 });
    // Every remaining run has its archive rows; prune removed exactly the pruned runs' ones.
    const [{ archived }] = await t.db.sql<{ archived: number }[]>`
      select count(*)::int as archived from pgmq.a_churn`;
    assert.equal(archived, remaining.length * 2);
    for (const w of workers) await within(30_000, 'a churn worker to stop (worker.done)', w.done);
  } finally {
    await t.close();
  }
});

Deno.test('a failed run whose other step still runs is held back until that message is archived', async () => {
  const t = await fresh();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const flow = new Flow<Record<string, never>>({ slug: 'forked', maxAttempts: 1 })
    .step({ slug: 'slow' }, async () => {
      await gate;
      return 'late';
    })
    .step({ slug: 'boom' }, () => {
      throw new Error('boom');
    });
  const worker = await startWorker(flow, { ...t.base, maxConcurrent: 4 });
  try {
    const runId = await t.client.startFlow('forked', {});
    await waitFor('the run to fail while slow still runs', async () => {
      const [r] = await t.db.sql`
        select r.status, t.status as slow from switchyard.runs r
          join switchyard.step_tasks t on t.run_id = r.run_id and t.step_slug = 'slow'
         where r.run_id = ${runId}`;
      return r?.status === 'failed' && r.slow === 'started';
    });
    await age(t.db, [runId]);
    const first = await prune(t.client, { olderThan: '7 days' });
    assert.equal(first.runs, 0);
    assert.equal(first.heldRuns, 1, 'its slow task still holds a message on the queue');
    assert.deepEqual(await rowsOf(t.db, [runId]), { runs: 1, states: 2, tasks: 2 });

    release();
    await waitFor('slow to complete and archive its message', async () => {
      const [r] = await t.db.sql`select count(*)::int as n from pgmq.q_forked`;
      return r.n === 0;
    });
    const second = await prune(t.client, { olderThan: '7 days' });
    assert.equal(second.runs, 1);
    assert.equal(second.heldRuns, 0);
    assert.equal(second.archiveRows, 2);
    assert.deepEqual(await rowsOf(t.db, [runId]), { runs: 0, states: 0, tasks: 0 });
  } finally {
    release();
    await worker.stop();
    await t.close();
  }
});

Deno.test('a stale message of a long-finished run that nobody holds is deleted with the run', async () => {
  const t = await fresh();
  let letFail!: () => void;
  const failing = new Promise<void>((r) => (letFail = r));
  // Two root steps on two queues; only strand_a has a real worker.
  const flow = new Flow<Record<string, never>>({ slug: 'strand', maxAttempts: 2 })
    .step({ slug: 'a', maxAttempts: 1 }, async () => {
      await failing;
      throw new Error('a fails');
    })
    .step({ slug: 'b' }, () => 'never runs here');
  const registry = [routeFlow(flow, { queues: { a: 'strand_a', b: 'strand_b' } })] as const;
  const worker = await startWorker(registry, { ...t.base, queueName: 'strand_a' });
  try {
    const runId = await t.client.startFlow('strand', {});
    // A worker on strand_b claims b, then dies.
    const dead = crypto.randomUUID();
    await t.db.sql`select switchyard.register_worker(${dead}::uuid, 'strand_b', 'strand-b-worker',
                     array['strand/a', 'strand/b'])`;
    const [claim] = await t.db.sql`
      select c.disposition from switchyard.start_tasks('strand_b',
        array(select msg_id from pgmq.read('strand_b', 30, 1)), ${dead}::uuid) c`;
    assert.equal(claim.disposition, 'claimed');
    await t.db.sql`select switchyard.worker_stopped(${dead}::uuid, 'crashed')`;
    letFail();
    assert.equal((await t.client.waitForRun(runId)).status, 'failed');
    // Stall recovery makes b's message visible again; no worker polls strand_b.
    const [{ n }] = await t.db.sql`select switchyard.recover_stalled('strand_b') as n`;
    assert.equal(n, 1);
    const [{ visible }] = await t.db.sql`
      select count(*)::int as visible from pgmq.q_strand_b where vt <= clock_timestamp()`;
    assert.equal(visible, 1);

    await age(t.db, [runId]);
    const removed = await prune(t.client, { olderThan: '7 days' });
    assert.equal(removed.runs, 1);
    assert.equal(removed.queueMessages, 1, "b's stale message left the queue with its run");
    assert.equal(removed.archiveRows, 1, "a's archived message");
    const [left] = await t.db.sql`
      select (select count(*)::int from pgmq.q_strand_b) as queued,
             (select count(*)::int from pgmq.a_strand_a) as archived`;
    assert.deepEqual({ ...left }, { queued: 0, archived: 0 });
  } finally {
    letFail();
    await worker.stop();
    await t.close();
  }
});

Deno.test('prune refuses bad arguments with the rule', async () => {
  const t = await fresh();
  try {
    const refused = (p: Promise<unknown>, rule: RegExp, detail: Record<string, unknown>) =>
      assert.rejects(p, (e) => {
        assert.ok(e instanceof OperationError, String(e));
        assert.equal(e.code, '22023');
        assert.match(e.message, rule);
        for (const [k, v] of Object.entries(detail)) assert.equal(e.detail[k], v, k);
        return true;
      });
    await refused(
      prune(t.client, { olderThan: '30 minutes' }),
      /prune: older_than 00:30:00 is invalid: use an interval of at least 1 hour/,
      { rule: 'interval_min', argument: 'older_than' },
    );
    await refused(
      prune(t.client, { olderThan: '-7 days' }),
      /older_than -7 days is invalid/,
      { rule: 'interval_min' },
    );
    await refused(
      prune(t.client, { olderThan: '7 days', batchSize: 0 }),
      /prune: batch_size 0 is invalid: use an integer from 1 to 10000/,
      { rule: 'integer_range', argument: 'batch_size' },
    );
    await refused(
      prune(t.client, { olderThan: '7 days', batchSize: 10_001 }),
      /batch_size 10001 is invalid/,
      { rule: 'integer_range' },
    );
    await refused(
      pruneCommand(t.client, { olderThan: '1 minute' }),
      /prune_command: older_than 00:01:00 is invalid/,
      { rule: 'interval_min' },
    );
    await assert.rejects(
      t.db.sql`select switchyard.prune(null, 10)`,
      /prune: older_than null is invalid: use an interval of at least 1 hour/,
    );
    await assert.rejects(
      t.db.sql`select switchyard.prune('7 days', null)`,
      /prune: batch_size null is invalid/,
    );
    assert.equal(
      await pruneCommand(t.client, { olderThan: '14 days', batchSize: 500 }),
      `select runs from switchyard.prune('14 days'::interval, 500)`,
    );
    // Without pg_cron in the database (test databases are clones): the way out.
    const [{ here }] = await t.db
      .sql`select exists (select 1 from pg_extension where extname = 'pg_cron') as here`;
    assert.equal(
      here,
      false,
      'test databases are clones of a template made from template1, and pg_cron can only be created in cron.database_name',
    );
    await assert.rejects(schedulePrune(t.client), (e) => {
      assert.ok(e instanceof PgCronMissingError);
      assert.match(e.message, /schedule_prune: pg_cron is not installed in database/);
      assert.match(e.hint ?? '', /switchyard\.prune_command\(\)/);
      return true;
    });
    assert.equal(await unschedulePrune(t.client), false);
    // Only the service role may prune.
    const [grants] = await t.db.sql`
      select has_function_privilege('service_role', 'switchyard.prune(interval, int)', 'execute')
               as service,
             has_function_privilege('anon', 'switchyard.prune(interval, int)', 'execute') as anon,
             has_function_privilege('authenticated', 'switchyard.schedule_prune(interval, text, int)',
                                    'execute') as authenticated`;
    assert.deepEqual({ ...grants }, { service: true, anon: false, authenticated: false });
  } finally {
    await t.close();
  }
});

Deno.test('deno task prune loops in batches with a progress line each, and refuses bad usage', async () => {
  const t = await fresh();
  const run = (args: string[], env: Record<string, string> = { DATABASE_URL: t.db.url }) =>
    deno(['task', '-q', 'prune', ...args], {
      cwd: ROOT,
      clearEnv: true,
      env: {
        ...envWithout('DATABASE_URL', 'SUPABASE_DB_URL', 'SWITCHYARD_DB_URL'),
        NO_COLOR: '1',
        ...env,
      },
    });
  try {
    const flow = new Flow<{ n: number }>({ slug: 'cli' }).step({ slug: 'go' }, (i) => i.n);
    const worker = await startWorker(flow, t.base);
    const ids: string[] = [];
    try {
      for (let i = 0; i < 5; i++) ids.push(await t.client.startFlow('cli', { n: i }));
      for (const id of ids) await t.client.waitForRun(id);
    } finally {
      await worker.stop();
    }
    await age(t.db, ids);
    const done = await run(['--older-than', '7d', '--batch-size', '2']);
    assert.equal(done.code, 0, done.stderr);
    const lines = done.stdout.trim().split('\n').map((l) => l.replace(/^\[\d+\.\ds\] /, ''));
    assert.deepEqual(lines.slice(0, 3), [
      'batch 1: 2 runs (2 step states, 2 tasks, 2 archived messages); 2 runs so far',
      'batch 2: 2 runs (2 step states, 2 tasks, 2 archived messages); 4 runs so far',
      'batch 3: 1 run (1 step state, 1 task, 1 archived message); 5 runs so far',
    ]);
    assert.match(
      lines[3],
      /^pruned runs finished more than 7 days ago in \d+\.\ds: 5 runs \(5 step states, 5 tasks, 5 archived messages\)$/,
    );
    assert.equal(lines.length, 4);
    assert.deepEqual(await rowsOf(t.db, ids), { runs: 0, states: 0, tasks: 0 });

    for (
      const [args, message] of [
        [[], /--older-than is required/],
        [['--older-than', '5x'], /--older-than "5x" is invalid: use a number and a unit/],
        [['--older-than', '7d', '--batch-size', '0'], /--batch-size "0" is invalid/],
        [['--older-than', '7d', 'extra'], /takes no positional arguments/],
      ] as const
    ) {
      const bad = await run([...args]);
      assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
      assert.match(bad.stderr, message);
      assert.match(bad.stderr, /usage: deno task prune/);
    }
    const early = await run(['--older-than', '30m']);
    assert.equal(early.code, 1);
    assert.match(
      early.stderr,
      /older_than 00:30:00 is invalid: use an interval of at least 1 hour/,
    );
    const nowhere = await run(['--older-than', '7d'], {});
    assert.equal(nowhere.code, 2);
    assert.match(nowhere.stderr, /DATABASE_URL is not set/);
    assert.equal(ageInterval('1h'), '1 hour');
    assert.equal(ageInterval('2w'), '2 weeks');
    assert.equal(ageInterval('7 days'), '7 days');
  } finally {
    await t.close();
  }
});

Deno.test('prune skips runs another session holds instead of waiting for them', async () => {
  const t = await fresh();
  const flow = new Flow<{ n: number }>({ slug: 'pinned' }).step({ slug: 'go' }, (i) => i.n);
  const worker = await startWorker(flow, t.base);
  const ids: string[] = [];
  try {
    for (let i = 0; i < 3; i++) ids.push(await t.client.startFlow('pinned', { n: i }));
    for (const id of ids) await t.client.waitForRun(id);
  } finally {
    await worker.stop();
  }
  await age(t.db, ids);
  // Another session holds all three runs (as a completion or a fence would, briefly).
  const holder = postgres(t.db.url, { max: 1, onnotice: () => {} });
  try {
    await holder.begin(async (tx) => {
      await tx`select 1 from switchyard.runs where run_id = any(${ids}::uuid[]) for update`;
      const batches: number[] = [];
      const total = await pruneAll(t.client, {
        olderThan: '7 days',
        batchSize: 2,
        onBatch: (b) => batches.push(b.runs),
      });
      assert.deepEqual(batches, [0], 'locked runs are skipped, not waited for');
      assert.equal(total.runs, 0);
    });
    const total = await pruneAll(t.client, { olderThan: '7 days', batchSize: 2 });
    assert.equal(total.runs, 3);
  } finally {
    await holder.end();
    await t.close();
  }
});

Deno.test({
  name: 'schedule_prune creates, updates and removes the pg_cron job where pg_cron lives',
  fn: async () => {
    // pg_cron can only be created in cron.database_name: the server's pg_cron database, with the
    // kit migrated in it (as on Supabase, one database), in turn.
    await withCronDatabase(async ({ sql }) => {
      const id = await schedulePrune(sql);
      assert.equal(
        await schedulePrune(sql, { olderThan: '30 days', schedule: '*/5 * * * *', batchSize: 200 }),
        id,
      );
      const jobs = await sql`select jobname, schedule, command from cron.job`;
      assert.deepEqual(jobs.map((j) => ({ ...j })), [{
        jobname: 'switchyard_prune',
        schedule: '*/5 * * * *',
        command: await pruneCommand(sql, { olderThan: '30 days', batchSize: 200 }),
      }]);
      // The command the job runs works as written.
      const [{ runs }] = await sql.unsafe(String(jobs[0].command));
      assert.equal(Number(runs), 0);
      assert.equal(await unschedulePrune(sql), true);
      assert.equal(await unschedulePrune(sql), false);
    });
  },
});
