/**
 * Chaos: N runs x 3 steps over two shared queues, four worker processes, random SIGKILLs
 * (each victim is replaced) and one PostgreSQL restart in the middle, with flow control on every
 * step (a concurrency key on the first, a shared rate limit on the others) and runs of priorities
 * -1, 0 and 1, so both queues are read by the ordered read
 * (docs/design/flow-control.md#priority-and-keys-in-turn).
 *
 * The suite starts its own throwaway cluster (the shared harness cluster serves other files
 * in parallel and must not be restarted) and always stops it. N is 200 by default; set
 * `SWITCHYARD_CHAOS_RUNS` for a longer run.
 *
 * @module
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { type Cluster, startCluster } from '../../tools/_cluster.ts';
import { migrate } from '../../lib/sql/migrate.ts';
import { CHAOS_MAX_ATTEMPTS } from '../fixtures/chaos_worker.ts';
import { waitFor } from '../_helpers/wait.ts';
import { spawnDeno, type Spawned } from '../_helpers/process.ts';

const RUNS = Number(Deno.env.get('SWITCHYARD_CHAOS_RUNS') ?? '200');
if (!Number.isInteger(RUNS) || RUNS < 10) {
  throw new Error(`SWITCHYARD_CHAOS_RUNS=${RUNS} is invalid: use an integer of at least 10`);
}
/** Runs started per second: the chaos spans about RUNS / RATE seconds. */
const RATE = 40;
const FIXTURE = new URL('../fixtures/chaos_worker.ts', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True for errors that mean the connection (not the statement) failed. */
function isConnectionError(e: unknown): boolean {
  const code = String((e as { code?: string })?.code ?? '');
  return /^(ECONN|EPIPE|CONNECTION_|57P0[123]|08)/.test(code) ||
    /connection|terminat|ECONNRESET|broken pipe/i.test(String((e as Error)?.message ?? ''));
}

interface Proc {
  name: string;
  queue: 'chaos_a' | 'chaos_b';
  child: Spawned;
  workerId: string;
  killed: boolean;
  /** Survivors are never killed: they prove workers reconnect after the restart. */
  survivor: boolean;
}

async function spawnWorker(
  url: string,
  queue: Proc['queue'],
  name: string,
  survivor: boolean,
): Promise<Proc> {
  // Its output is captured as it comes, so the child never blocks on a full pipe.
  const child = spawnDeno(['run', '-A', FIXTURE], {
    env: { DATABASE_URL: url, CHAOS_QUEUE: queue, SWITCHYARD_LOG: 'error' },
    stderr: 'inherit',
  });
  const [, workerId] = await child.waitFor(/ready ([0-9a-f-]{36})/).catch((e) => {
    throw new Error(`chaos worker ${name} (${queue}) exited or hung before it was ready: ${e}`);
  });
  return { name, queue, child, workerId, killed: false, survivor };
}

/** `signal`, then SIGKILL to what is left after 15 s. */
async function terminate(proc: Proc, signal: Deno.Signal) {
  if (proc.child.exited) return;
  await proc.child.stop(signal, 15_000);
}

Deno.test({
  name: `chaos: ${RUNS} runs x 3 steps survive SIGKILLed workers and a PostgreSQL restart`,
  // Child processes and the private cluster are managed (and always stopped) by the test.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let cluster: Cluster | undefined;
    let sql: postgres.Sql | undefined;
    const procs: Proc[] = [];
    try {
      cluster = await startCluster();
      const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
      await admin`create database switchyard_chaos`;
      await admin.end();
      const url = cluster.url.replace(/\/postgres$/, '/switchyard_chaos');
      await migrate(url);
      sql = postgres(url, { max: 4, onnotice: () => {}, prepare: false });
      await sql`create table public.chaos_executions (
        run_id uuid not null, step_slug text not null, attempt int not null,
        worker_id uuid not null, pid int not null, at timestamptz not null default now())`;
      // Flow control under chaos: second and third share this limit (below the start rate
      // of their tasks, so some are held back), first is limited per tenant (4 of them).
      await sql`select switchyard.set_rate_limit('chaos', 60, 1, 10)`;

      // Two workers per queue; the first of each is a survivor.
      procs.push(
        ...await Promise.all([
          spawnWorker(url, 'chaos_a', 'a1', true),
          spawnWorker(url, 'chaos_a', 'a2', false),
          spawnWorker(url, 'chaos_b', 'b1', true),
          spawnWorker(url, 'chaos_b', 'b2', false),
        ]),
      );

      // Runs are started gradually so kills and the restart land while work is in flight.
      let started = 0;
      let restartedAt: Date | undefined;
      const starter = (async () => {
        const chunk = Math.max(1, Math.round(RATE / 5));
        while (started < RUNS) {
          // The second half of the runs starts only after the restart, so there is always
          // work left to prove that the survivors reconnected (however fast the first half went).
          const limit = restartedAt ? RUNS : Math.ceil(RUNS / 2);
          if (started >= limit) {
            await sleep(50);
            continue;
          }
          const n = Math.min(chunk, limit - started);
          try {
            await sql!`select count(switchyard.start_flow('chaos', jsonb_build_object('n', i, 'tenant', i % 4),
                                                   priority => i % 3 - 1))
                         from generate_series(${started}::int, ${started + n - 1}::int) i`;
            started += n;
          } catch (e) {
            if (!isConnectionError(e)) throw e;
            // The restart dropped the connection; the statement either committed or did not.
            const [{ c }] = await waitFor(
              'the database after a failed start_flow',
              () => sql!<{ c: number }[]>`select count(*)::int as c from switchyard.runs`,
            );
            started = c;
          }
          await sleep(200);
        }
      })();

      let kills = 0;
      let spawned = procs.length;
      const killer = async () => {
        const victims = procs.filter((p) => !p.survivor && !p.child.exited && !p.killed);
        if (victims.length === 0) return;
        // Prefer a victim holding started tasks, so a kill exercises recovery; wait a little
        // for one to be busy.
        let holding: Proc[] = [];
        for (let tries = 0; tries < 40 && holding.length === 0; tries++) {
          const busy = await sql!<{ worker_id: string }[]>`
            select distinct worker_id::text from switchyard.step_tasks where status = 'started'`
            .catch(() => []);
          holding = victims.filter((v) => busy.some((b) => b.worker_id === v.workerId));
          if (holding.length === 0) await sleep(25);
        }
        const pool = holding.length > 0 ? holding : victims;
        const victim = pool[Math.floor(Math.random() * pool.length)];
        victim.killed = true;
        await terminate(victim, 'SIGKILL');
        kills++;
        procs.push(await spawnWorker(url, victim.queue, `${victim.queue}#${++spawned}`, false));
      };

      const chaos = (async () => {
        while (started < RUNS || kills < 3) {
          await sleep(400 + Math.random() * 600);
          if (!restartedAt && started >= RUNS * 0.45) {
            await cluster!.restart();
            const [{ now }] = await waitFor(
              'the restarted database',
              () => sql!<{ now: Date }[]>`select now() as now`,
            );
            restartedAt = now;
            continue;
          }
          await killer();
        }
      })();
      await Promise.all([starter, chaos]);

      await waitFor(`${RUNS} completed runs`, async () => {
        const [{ done }] = await sql!<{ done: number }[]>`
          select count(*)::int as done from switchyard.runs where status = 'completed'`;
        return done === RUNS;
      }, { timeoutMs: 90_000, intervalMs: 200 });

      // Every live process is one the test started; none stopped on its own.
      for (const p of procs) {
        assert.ok(
          p.killed || !p.child.exited,
          `worker process ${p.name} exited without being killed`,
        );
      }
      const survivors = procs.filter((p) => p.survivor);
      for (const p of procs) await terminate(p, 'SIGTERM');

      // Every run completed, with the outputs its input implies.
      const runs = await sql<{ n: number; status: string; output: unknown }[]>`
        select (input ->> 'n')::int as n, status, output from switchyard.runs`;
      assert.equal(runs.length, RUNS);
      for (const r of runs) {
        assert.equal(r.status, 'completed');
        assert.deepEqual(r.output, { third: { c: (r.n * 2 + 1) * 3 } });
      }

      // Every task exists once per (run, step), completed once, with a consistent output.
      const tasks = await sql<
        {
          n: number;
          step_slug: string;
          status: string;
          attempts_count: number;
          max_attempts: number;
          output: unknown;
          state_output: unknown;
          state_status: string;
        }[]
      >`select (r.input ->> 'n')::int as n, t.step_slug, t.status, t.attempts_count,
               t.max_attempts, t.output, ss.output as state_output, ss.status as state_status
          from switchyard.step_tasks t
          join switchyard.runs r on r.run_id = t.run_id
          join switchyard.step_states ss on ss.run_id = t.run_id and ss.step_slug = t.step_slug`;
      assert.equal(tasks.length, RUNS * 3, 'one task per (run, step)');
      const expected: Record<string, (n: number) => unknown> = {
        first: (n) => ({ a: n * 2 }),
        second: (n) => ({ b: n * 2 + 1 }),
        third: (n) => ({ c: (n * 2 + 1) * 3 }),
      };
      for (const t of tasks) {
        assert.equal(t.status, 'completed', `task ${t.n}/${t.step_slug} is ${t.status}`);
        assert.equal(t.state_status, 'completed');
        assert.deepEqual(t.output, expected[t.step_slug](t.n));
        assert.deepEqual(t.state_output, t.output);
        assert.ok(
          t.attempts_count >= 1 && t.attempts_count <= t.max_attempts,
          `task ${t.n}/${t.step_slug}: ${t.attempts_count} attempts, maxAttempts ${t.max_attempts}`,
        );
        assert.equal(t.max_attempts, CHAOS_MAX_ATTEMPTS);
      }

      // Executions may repeat after a kill; each completion matches an execution of the
      // attempt that held the task, and no execution belongs to a later attempt.
      const [ex] = await sql<
        { executions: number; unmatched: number; beyond: number; repeated: number }[]
      >`
        select (select count(*)::int from public.chaos_executions) as executions,
               (select count(*)::int from switchyard.step_tasks t
                 where not exists (select 1 from public.chaos_executions e
                                    where e.run_id = t.run_id and e.step_slug = t.step_slug
                                      and e.attempt = t.attempts_count)) as unmatched,
               (select count(*)::int from public.chaos_executions e
                  join switchyard.step_tasks t on t.run_id = e.run_id and t.step_slug = e.step_slug
                 where e.attempt > t.attempts_count) as beyond,
               (select count(*)::int from switchyard.step_tasks where attempts_count > 1) as repeated`;
      assert.ok(ex.executions >= RUNS * 3, `${ex.executions} executions for ${RUNS * 3} tasks`);
      const [fc] = await sql<{ keyed: number; limit: number }[]>`select
          (select count(*)::int from switchyard.step_tasks
            where step_slug = 'first' and concurrency_key = 'chaosV1/first:' || (
              select (r.input -> 'tenant')::text from switchyard.runs r
               where r.run_id = step_tasks.run_id)) as keyed,
          (select count(*)::int from switchyard.rate_limits where name = 'chaos') as limit`;
      assert.deepEqual({ ...fc }, { keyed: RUNS, limit: 1 }, 'every first task took its slot');
      assert.equal(ex.unmatched, 0, 'every completed attempt was executed');
      assert.equal(ex.beyond, 0, 'no execution of an attempt that was never claimed');

      // Nothing is left visible or in flight; every task message was archived exactly once.
      const [q] = await sql<{ qa: number; qb: number; aa: number; ab: number; dup: number }[]>`
        select (select count(*)::int from pgmq.q_chaos_a) as qa,
               (select count(*)::int from pgmq.q_chaos_b) as qb,
               (select count(*)::int from pgmq.a_chaos_a) as aa,
               (select count(*)::int from pgmq.a_chaos_b) as ab,
               (select count(*)::int from (
                  select msg_id from pgmq.a_chaos_a group by msg_id having count(*) > 1) d) as dup`;
      assert.deepEqual(q, { qa: 0, qb: 0, aa: RUNS * 2, ab: RUNS, dup: 0 });

      // Kills happened and cost attempts that were recovered.
      assert.ok(kills >= 3, `${kills} kills`);
      assert.ok(ex.repeated > 0, 'at least one task was recovered after a kill');

      // The survivors lived through the restart in the same process and kept completing tasks.
      assert.ok(restartedAt, 'the database was restarted');
      for (const p of survivors) {
        assert.ok(!p.killed);
        const [{ after, total, queueAfter }] = await sql<
          { after: number; total: number; queueAfter: number }[]
        >`
          select count(*) filter (where worker_id = ${p.workerId}::uuid
                                    and completed_at > ${restartedAt})::int as after,
                 count(*) filter (where worker_id = ${p.workerId}::uuid)::int as total,
                 count(*) filter (where completed_at > ${restartedAt})::int as "queueAfter"
            from switchyard.step_tasks
           where queue_name = ${p.queue} and status = 'completed'`;
        assert.ok(
          after > 0,
          `survivor ${p.name} completed no task after the restart (${total} in all; ` +
            `${queueAfter} tasks of ${p.queue} were completed after the restart)`,
        );
      }
      console.log(
        `chaos: ${RUNS} runs, ${kills} kills, ${procs.length} worker processes, ` +
          `${
            ex.executions - RUNS * 3
          } repeated executions, ${ex.repeated} tasks needed > 1 attempt`,
      );
    } finally {
      await Promise.all(procs.map((p) => terminate(p, 'SIGKILL')));
      await sql?.end({ timeout: 2 }).catch(() => {});
      await cluster?.stop();
    }
  },
});
