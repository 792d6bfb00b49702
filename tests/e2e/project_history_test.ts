/**
 * A project's history on every database (issue 37; docs/design/versions.md, Declared aliases):
 * `ordersV1` → `ordersV2` under the same alias → V1 retired once drained → `ordersV3` with a
 * wait step, each step compiled by `deno task compile` in a project made by the real
 * `supabase init` and `deno task install`, and pushed with the real `supabase db push`:
 *
 * - (a) step by step to one database, with runs in flight at every push (one held by a live
 *   worker of the old registry, which the push must not hand the new version);
 * - (b) all at once to an empty database;
 * - (c) to a database that holds only the migrations up to V2 — a backup taken while the V1
 *   function still ran, so its alias still points at V1 — with V1 runs open. V1 was retired
 *   from the registry, so nothing in it can finish them: the push keeps the alias on V1 and
 *   the worker refuses to start, saying to list V1 again until drained. The user does that,
 *   compiles and pushes: then every database converges.
 *
 * Each ends with the alias where the registry puts it (ordersV3), a worker that starts, every
 * open run finished on its own version, and a new start of the alias running ordersV3. Then V1
 * is retired again, drained everywhere, and that push is safe on all three.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { CoverageError } from '../../lib/errors.ts';
import { startWorker, type Worker, type WorkerTarget } from '../../lib/mod.ts';
import {
  ensurePgmq,
  pgmqModeFromEnv,
  SUPABASE_CLI,
  withLocalSslMode,
} from '../../lib/sql/migrate.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';
import { ok, run, supabaseInit } from '../_helpers/project.ts';

const QUEUE = 'order_work';

// A test's hook to keep a V1 run in flight at its last step while a worker runs it; a deployed
// function never sets it.
const FLOW_V1 = `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const held = () => (globalThis as { ordersHold?: Promise<void> }).ordersHold;

const ordersV1 = new Flow<{ id: number }>({ slug: 'ordersV1' })
  .step({ slug: 'charge' }, (input) => ({ charged: input.id }))
  .step({ slug: 'ship', dependsOn: ['charge'] }, async (input) => {
    await held();
    return \`V1 shipped \${input.charge.charged}\`;
  });

export const orders1 = defineDeployedFlow(
  routeFlow(ordersV1, { queues: { charge: '${QUEUE}', ship: '${QUEUE}' } }),
  { alias: 'orders' },
);
`;

const FLOW_V2 = `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const ordersV2 = new Flow<{ id: number }>({ slug: 'ordersV2' })
  .step({ slug: 'charge' }, (input) => ({ charged: input.id }))
  .step({ slug: 'pack', dependsOn: ['charge'] }, (input) => ({ box: input.charge.charged }))
  .step({ slug: 'ship', dependsOn: ['pack'] }, (input) => \`V2 shipped \${input.pack.box}\`);

export const orders2 = defineDeployedFlow(
  routeFlow(ordersV2, { queues: { charge: '${QUEUE}', pack: '${QUEUE}', ship: '${QUEUE}' } }),
  { alias: 'orders' },
);
`;

const FLOW_V3 = `import { defineDeployedFlow, Flow, routeFlow, signalPayload } from 'switchyard';

const ordersV3 = new Flow<{ id: number }>({ slug: 'ordersV3' })
  .step({ slug: 'charge' }, (input) => ({ charged: input.id }))
  .wait({ slug: 'approval', dependsOn: ['charge'], payload: signalPayload<{ by: string }>() })
  .step(
    { slug: 'ship', dependsOn: ['charge', 'approval'] },
    (input) => \`V3 shipped \${input.charge.charged} (approved by \${input.approval.by})\`,
  );

export const orders3 = defineDeployedFlow(
  routeFlow(ordersV3, { queues: { charge: '${QUEUE}', ship: '${QUEUE}' } }),
  { alias: 'orders' },
);
`;

type Version = 1 | 2 | 3;
const registrySource = (versions: Version[]) =>
  versions.map((v) => `import { orders${v} } from './flows/orders_v${v}.ts';\n`).join('') +
  `\nexport const registry = [${versions.map((v) => `orders${v}`).join(', ')}] as const;\n`;

const project = await supabaseInit('switchyard-history-');
const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
const databases: string[] = [];
const workers: Worker[] = [];
const clients: postgres.Sql[] = [];

/** The deployments of the project's flow files, as its queue function imports them. */
const deployments = new Map<Version, WorkerTarget>();
async function registryOf(versions: Version[]): Promise<WorkerTarget[]> {
  for (const v of versions) {
    if (deployments.has(v)) continue;
    const file = join(project, `supabase/functions/_shared/flows/orders_v${v}.ts`);
    const mod = await import(pathToFileURL(file).href);
    deployments.set(v, mod[`orders${v}`]);
  }
  return versions.map((v) => deployments.get(v)!);
}

/** Lists `versions` in the project's registry and runs `deno task compile`. */
async function compile(versions: Version[]): Promise<string> {
  await Deno.writeTextFile(
    join(project, 'supabase/functions/_shared/registry.ts'),
    registrySource(versions),
  );
  const out = await run(['task', '-q', 'compile', '--project', project], KIT_ROOT);
  ok(out, `compile of [${versions}]`);
  assert.match(out.stdout, /^created\s+supabase\/migrations\/\d{14}_switchyard_flows\.sql$/m);
  return out.stdout;
}

/** A new empty database with PGMQ (the extension or the compatible layer). */
async function database(label: string): Promise<{ url: string; sql: postgres.Sql }> {
  const name = `sy_history_${label}_${crypto.randomUUID().replaceAll('-', '').slice(0, 8)}`;
  await admin.unsafe(`create database "${name}"`);
  databases.push(name);
  const url = urlFor(name);
  await ensurePgmq(url, pgmqModeFromEnv());
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  clients.push(sql);
  return { url, sql };
}

/** `supabase db push` of every migration of the project the database lacks. */
async function push(url: string): Promise<string> {
  const out = await run(
    ['run', '-A', SUPABASE_CLI, 'db', 'push', '--db-url', withLocalSslMode(url), '--yes'],
    project,
  );
  ok(out, 'supabase db push');
  return out.stdout + out.stderr;
}

async function worker(url: string, versions: Version[]): Promise<Worker> {
  const w = await startWorker(await registryOf(versions), {
    queueName: QUEUE,
    connectionString: url,
    ...FAST,
  });
  workers.push(w);
  return w;
}

async function stop(w: Worker): Promise<void> {
  await w.stop();
  workers.splice(workers.indexOf(w), 1);
}

async function target(sql: postgres.Sql): Promise<string> {
  const [row] = await sql<{ flow_slug: string }[]>`
    select flow_slug from switchyard.aliases where alias = 'orders'`;
  return row.flow_slug;
}

async function start(sql: postgres.Sql, id: number): Promise<string> {
  const [row] = await sql<{ run_id: string }[]>`
    select switchyard.start_flow('orders', ${sql.json({ id })}) as run_id`;
  return row.run_id;
}

/** Waits for a run to complete; returns its concrete version and output. */
async function finished(sql: postgres.Sql, runId: string) {
  return await waitFor(`run ${runId} to complete`, async () => {
    const [row] = await sql<{ flow_slug: string; status: string; output: { ship: string } }[]>`
      select flow_slug, status, output from switchyard.runs where run_id = ${runId}`;
    assert.notEqual(row.status, 'failed', JSON.stringify(row));
    return row.status === 'completed' ? { flow: row.flow_slug, ship: row.output.ship } : null;
  }, { timeoutMs: 30_000 });
}

/** A new start of the alias: it runs ordersV3 (the wait step signalled) to completion. */
async function newStartRunsV3(sql: postgres.Sql, id: number): Promise<void> {
  await approved(sql, await start(sql, id), id);
}

/** Signals the wait step of an ordersV3 run once it waits; it completes on ordersV3. */
async function approved(sql: postgres.Sql, runId: string, id: number): Promise<void> {
  await waitFor('the approval step to wait', async () => {
    const [row] = await sql`select status from switchyard.step_states
      where run_id = ${runId} and step_slug = 'approval'`;
    return row?.status === 'started' || null;
  }, { timeoutMs: 30_000 });
  await sql`select switchyard.signal_run(${runId}, 'approval', ${sql.json({ by: 'ada' })})`;
  assert.deepEqual(await finished(sql, runId), {
    flow: 'ordersV3',
    ship: `V3 shipped ${id} (approved by ada)`,
  });
}

async function aliasStatus(sql: postgres.Sql) {
  const [row] = await sql<{ flow_slug: string; state: string; reason: string | null }[]>`
    select flow_slug, state, reason from switchyard.alias_status() where alias = 'orders'`;
  return { ...row };
}

Deno.test('a project history converges on every database: step by step with runs in flight, all at once, and from a backup with V1 runs open', async () => {
  try {
    ok(await run(['task', '-q', 'install', '--project', project], KIT_ROOT), 'install');
    await Deno.mkdir(join(project, 'supabase/functions/_shared/flows'));
    for (const [v, source] of [[1, FLOW_V1], [2, FLOW_V2], [3, FLOW_V3]] as const) {
      await Deno.writeTextFile(
        join(project, `supabase/functions/_shared/flows/orders_v${v}.ts`),
        source,
      );
    }
    const a = await database('a');
    const c = await database('c');

    // 1. ordersV1. Pushed to (a) and to (c), the database the backup comes from.
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/registry.ts'),
      registrySource([1]),
    );
    ok(
      await run(['task', '-q', 'scaffold-queue', QUEUE, '--project', project], KIT_ROOT),
      'scaffold-queue',
    );
    await compile([1]);
    await push(a.url);
    await push(c.url);
    assert.equal(await target(a.sql), 'ordersV1', 'a new alias is activated at push');
    const a1 = await start(a.sql, 1); // in flight: no worker yet

    // 2. ordersV2 under the same alias, pushed while a V1 function runs and holds a V1 run.
    const aV1 = await worker(a.url, [1]);
    assert.deepEqual(await finished(a.sql, a1), { flow: 'ordersV1', ship: 'V1 shipped 1' });
    let release!: () => void;
    (globalThis as { ordersHold?: Promise<void> }).ordersHold = new Promise((r) => release = r);
    const a2 = await start(a.sql, 2);
    await waitFor('the V1 worker to hold a run at ship', async () => {
      const [row] = await a.sql`select status from switchyard.step_tasks
        where run_id = ${a2} and step_slug = 'ship'`;
      return row?.status === 'started' || null;
    });
    const cV1 = await worker(c.url, [1]);
    await compile([1, 2]);
    await push(a.url);
    await push(c.url);
    // The live V1 workers lack ordersV2: handed a V2 task they would pause their function.
    assert.equal(await target(a.sql), 'ordersV1');
    assert.deepEqual(await aliasStatus(a.sql), {
      flow_slug: 'ordersV1',
      state: 'pending',
      reason: 'live workers lack ordersV2: order-work-worker (queue order_work)',
    });
    release();
    delete (globalThis as { ordersHold?: Promise<void> }).ordersHold;
    assert.deepEqual(await finished(a.sql, a2), { flow: 'ordersV1', ship: 'V1 shipped 2' });
    // The fenced rollout: the old workers stop, runs wait in the queue, the new ones start.
    await stop(aV1);
    await stop(cV1);
    const a3 = await start(a.sql, 3); // still ordersV1: in flight across the rollout
    // (c)'s backup is taken here: the migrations up to V2, its alias on V1, V1 runs open.
    const c1 = await start(c.sql, 101);
    const c2 = await start(c.sql, 102);
    assert.equal(await target(c.sql), 'ordersV1');
    const aV12 = await worker(a.url, [1, 2]);
    assert.equal(await target(a.sql), 'ordersV2', 'the first worker with V2 moves the alias');
    assert.deepEqual(await finished(a.sql, a3), { flow: 'ordersV1', ship: 'V1 shipped 3' });
    assert.deepEqual(await finished(a.sql, await start(a.sql, 4)), {
      flow: 'ordersV2',
      ship: 'V2 shipped 4',
    });

    // 3. V1 retired once drained, as the README says; a V2 run in flight at the push.
    const [drain] = await a.sql`select state from switchyard.drain_status(${QUEUE})
      where flow_slug = 'ordersV1'`;
    assert.equal(drain.state, 'drained');
    await stop(aV12);
    const a5 = await start(a.sql, 5);
    const retired = await compile([2]);
    assert.match(
      retired,
      /^ {2}alias orders: ordersV1 leave\(s\) the registry\. Retire a version only once `npx -y deno@2 task drain` shows it drained on every database: where it still has started runs nothing in this registry can finish them/m,
    );
    await push(a.url);
    assert.equal(await target(a.sql), 'ordersV2');
    const aV2 = await worker(a.url, [2]);
    assert.deepEqual(await finished(a.sql, a5), { flow: 'ordersV2', ship: 'V2 shipped 5' });
    await stop(aV2);

    // 4. ordersV3 with a wait step; a V2 run in flight. No live worker: the push moves the
    // alias itself, before any worker with V3 ran.
    const a6 = await start(a.sql, 6);
    const v3 = await compile([2, 3]);
    assert.match(v3, /^ {2}flow ordersV3$/m);
    assert.match(v3, /^ {2}alias orders -> ordersV3 \(keeps ordersV2 for drain\)$/m);
    await push(a.url);
    assert.equal(await target(a.sql), 'ordersV3', 'moved at push, with no worker');
    const a7 = await start(a.sql, 7); // a start before the worker: ordersV3
    const [a7run] = await a.sql`select flow_slug from switchyard.runs where run_id = ${a7}`;
    assert.equal(a7run.flow_slug, 'ordersV3');
    const aV23 = await worker(a.url, [2, 3]);
    assert.deepEqual(await finished(a.sql, a6), { flow: 'ordersV2', ship: 'V2 shipped 6' });
    await approved(a.sql, a7, 7);
    await newStartRunsV3(a.sql, 8);
    await stop(aV23);

    // (b) every migration at once on an empty database: the alias ends on ordersV3 at push.
    const b = await database('b');
    await push(b.url);
    assert.equal(await target(b.sql), 'ordersV3');
    const bV23 = await worker(b.url, [2, 3]);
    await newStartRunsV3(b.sql, 9);
    await stop(bV23);

    // (c) the backup, given the migrations of V1's retirement and of V3. V1 has started runs
    // and the registry no longer lists it: the alias stays on V1 (moving it would not finish
    // them), and the worker refuses to start, saying what to do.
    await push(c.url);
    assert.deepEqual(await aliasStatus(c.sql), {
      flow_slug: 'ordersV1',
      state: 'pending',
      reason: 'ordersV1, which the registry no longer lists, has 2 started run(s)',
    });
    const refused = await worker(c.url, [2, 3]).then(
      () => assert.fail('the worker started without ordersV1'),
      (e) => e,
    );
    assert.ok(refused instanceof CoverageError, String(refused));
    assert.deepEqual(refused.missingPairs, ['ordersV1/charge', 'ordersV1/ship']);
    assert.match(
      refused.message,
      /ordersV1 has 2 started run\(s\) and this registry lacks it: list it in supabase\/functions\/_shared\/registry\.ts again \(before the newer versions of alias orders\), run npx switchyard compile and deploy/,
    );
    // The user lists V1 again, compiles and pushes (to every database: one project).
    const back = await compile([1, 2, 3]);
    assert.match(back, /^ {2}alias orders -> ordersV3 \(keeps ordersV1, ordersV2 for drain\)$/m);
    assert.doesNotMatch(back, /flow ordersV1/, 'ordersV1 is compiled already');
    for (const db of [a, b, c]) await push(db.url);
    for (const db of [a, b, c]) assert.equal(await target(db.sql), 'ordersV3');
    const cV123 = await worker(c.url, [1, 2, 3]);
    assert.deepEqual(await finished(c.sql, c1), { flow: 'ordersV1', ship: 'V1 shipped 101' });
    assert.deepEqual(await finished(c.sql, c2), { flow: 'ordersV1', ship: 'V1 shipped 102' });
    await newStartRunsV3(c.sql, 103);
    await stop(cV123);

    // V1 drained everywhere: retiring it again is safe on every database.
    await compile([2, 3]);
    for (const db of [a, b, c]) {
      await push(db.url);
      assert.deepEqual(await aliasStatus(db.sql), {
        flow_slug: 'ordersV3',
        state: 'current',
        reason: null,
      });
      const [open] = await db.sql`select count(*)::int as n from switchyard.runs
        where status <> 'completed'`;
      assert.equal(open.n, 0, 'every run finished');
      const w = await worker(db.url, [2, 3]);
      await newStartRunsV3(db.sql, 200);
      await stop(w);
    }
  } finally {
    for (const w of workers) await w.stop().catch(() => {});
    for (const sql of clients) await sql.end({ timeout: 1 });
    for (const name of databases) {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
    }
    await admin.end();
    await Deno.remove(project, { recursive: true });
  }
});
