/**
 * The Supabase kit end to end, in a temporary copy of the project: scaffold two queue
 * functions, apply their migrations with the Supabase CLI, serve them over real HTTP as
 * subprocesses, invoke them with supabase-js, run flows by alias, then pause a function with
 * an unsupported v2 task and recover it. Real PostgreSQL throughout.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createClient } from '@supabase/supabase-js';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { migrate } from '../../lib/sql/migrate.ts';
import { copyProject, KIT_ROOT } from '../../cli/_project.ts';
import { type ServedFunctions, serveFunctions } from '../../cli/serve.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST_ENV, waitFor } from '../_helpers/wait.ts';
import { deno, type Output } from '../_helpers/process.ts';

const SECRET = 'kit-e2e-secret-9f2c4d';
const CLASSIFY = 'classify-threads-worker';
const DELIVER = 'deliver-slack-alerts-worker';
const db = await createTestDatabase();
const client = untypedClient(db.url);
const project = await copyProject('switchyard-e2e-');
const registryPath = join(project, 'supabase/functions/_shared/registry.ts');
const fullRegistry = await Deno.readTextFile(registryPath);
/** The shipped registry without v2: what a function deployed before v2 existed runs. */
const registryWithoutV2 = fullRegistry
  .replace(
    "import { communityThreadsV1, communityThreadsV2 } from './flows/community_threads.ts';",
    "import { communityThreadsV1 } from './flows/community_threads.ts';",
  )
  .replace(
    '[communityThreadsV1, communityThreadsV2, supportTicketsV1]',
    '[communityThreadsV1, supportTicketsV1]',
  );
assert.notEqual(registryWithoutV2, fullRegistry, 'the shipped registry lists v1, v2 and tickets');
await Deno.writeTextFile(registryPath, registryWithoutV2);

const logs: string[] = [];
let served: ServedFunctions | undefined;
const serveEnv = {
  DATABASE_URL: db.url,
  SWITCHYARD_WORKER_SECRET: SECRET,
  SWITCHYARD_LOG: 'warn',
  ...FAST_ENV,
};

function run(cmd: string[], cwd = KIT_ROOT): Promise<Output> {
  return deno(cmd, { cwd, env: { NO_COLOR: '1' } });
}

const scaffold = (...args: string[]) =>
  run(['task', '-q', 'scaffold-queue', ...args, '--project', project]);

/** Every file under supabase/, path → content: proves a run changed nothing. */
async function snapshot(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const p = join(dir, e.name);
      if (e.isDirectory) await walk(p);
      else files.set(p, await Deno.readTextFile(p));
    }
  };
  await walk(join(project, 'supabase'));
  return files;
}

async function count(query: Promise<{ n: number }[]>): Promise<number> {
  return (await query)[0].n;
}

function supabase(key: string) {
  return createClient(served!.url, key, {
    auth: { persistSession: false, autoRefreshToken: false },
  });
}

Deno.test('scaffold-queue writes each queue function once and refuses bad, unknown and edited input', async () => {
  const first = await scaffold('classify_threads', '--max-concurrent', '4');
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(
    first.stdout.split('\n').filter((l) => /^(created|updated)/.test(l)).map((l) =>
      l.split(/\s+/)[0]
    ),
    ['created', 'created', 'updated', 'created'],
  );
  const index = await Deno.readTextFile(join(project, `supabase/functions/${CLASSIFY}/index.ts`));
  assert.match(index, /import \{ registry \} from '\.\.\/_shared\/registry\.ts';/);
  assert.match(
    index,
    /EdgeWorker\.start\(registry, \{ queueName: 'classify_threads', maxConcurrent: 4 \}\);/,
  );
  const importMap = JSON.parse(
    await Deno.readTextFile(join(project, `supabase/functions/${CLASSIFY}/deno.json`)),
  );
  assert.equal(importMap.imports.switchyard, '../../../lib/mod.ts');
  assert.equal(importMap.imports.postgres, 'npm:postgres@3');
  const config = await Deno.readTextFile(join(project, 'supabase/config.toml'));
  assert.match(config, /^\[functions\.classify-threads-worker\]$/m);
  assert.match(config, /import_map = "\.\/functions\/classify-threads-worker\/deno\.json"/);
  assert.match(config, /entrypoint = "\.\/functions\/classify-threads-worker\/index\.ts"/);
  assert.match(config, /verify_jwt = false/);
  const migrations = [...Deno.readDirSync(join(project, 'supabase/migrations'))].map((e) => e.name)
    .sort();
  const mine = migrations.filter((n) => n.endsWith('_register_classify_threads_worker.sql'));
  assert.equal(mine.length, 1);
  assert.equal(migrations[migrations.length - 1], mine[0], 'it sorts after every other migration');
  assert.match(
    await Deno.readTextFile(join(project, 'supabase/migrations', mine[0])),
    /select switchyard\.register_function\('classify-threads-worker', 'classify_threads'\);/,
  );

  const before = await snapshot();
  const again = await scaffold('classify_threads', '--max-concurrent', '4');
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /nothing to do: classify-threads-worker is up to date/);
  assert.deepEqual(await snapshot(), before, 'a second run changes nothing');

  for (
    const [name, rule] of [
      ['Classify-Threads', /queue name "Classify-Threads" is invalid: use lower-case letters/],
      ['classify__threads', /must not contain "__"/],
      ['x'.repeat(48), /at most 47 characters/],
      [
        'nope_queue',
        /queue "nope_queue" is unknown: no deployment in .*registry\.ts routes a step to it/,
      ],
      ['communitythreadsv1', /unknown/],
    ] as const
  ) {
    const refused = await scaffold(name);
    assert.equal(refused.code, 1, `${name} must be refused`);
    assert.match(refused.stderr, rule);
  }
  // A hand-edited function is never overwritten without --force (and nothing else is written).
  const indexPath = join(project, `supabase/functions/${CLASSIFY}/index.ts`);
  await Deno.writeTextFile(indexPath, `${index}// my note\n`);
  const edited = await scaffold('classify_threads', '--max-concurrent', '4');
  assert.equal(edited.code, 1);
  assert.match(
    edited.stderr,
    /refusing to overwrite supabase\/functions\/classify-threads-worker\/index\.ts/,
  );
  assert.match(await Deno.readTextFile(indexPath), /my note/);
  const forced = await scaffold('classify_threads', '--max-concurrent', '4', '--force');
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(await Deno.readTextFile(indexPath), index);
  assert.deepEqual(await snapshot(), before);

  const second = await scaffold('deliver_slack_alerts', '--max-concurrent', '2');
  assert.equal(second.code, 0, second.stderr);
  assert.match(
    await Deno.readTextFile(join(project, 'supabase/config.toml')),
    /\[functions\.deliver-slack-alerts-worker\]/,
  );
});

Deno.test('every generated function passes deno check with its own import map', async () => {
  const results = await Promise.all([CLASSIFY, DELIVER].map((fn) =>
    run([
      'check',
      '--no-lock',
      '--config',
      `supabase/functions/${fn}/deno.json`,
      `supabase/functions/${fn}/index.ts`,
    ], project)
  ));
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  // Each function directory has its own deno.json, which Deno uses for paths inside it.
  for (const fn of [CLASSIFY, DELIVER]) {
    const fmt = await run(['fmt', '--check', `supabase/functions/${fn}`], project);
    assert.equal(fmt.code, 0, `generated files are deno fmt clean: ${fmt.stdout}${fmt.stderr}`);
  }
});

Deno.test('supabase db push applies the scaffolded migrations: both functions enabled, unpaused', async () => {
  await migrate(db.url, { workdir: project, pgmqMode: 'auto' });
  const rows = await db.sql<
    { function_name: string; queue_name: string; enabled: boolean; paused: boolean }[]
  >`
    select function_name, queue_name, enabled, paused_at is not null as paused
      from switchyard.worker_functions order by function_name`;
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { function_name: CLASSIFY, queue_name: 'classify_threads', enabled: true, paused: false },
    { function_name: DELIVER, queue_name: 'deliver_slack_alerts', enabled: true, paused: false },
  ]);
});

Deno.test('HTTP without or with a wrong bearer starts no worker', async () => {
  served = await serveFunctions({ projectDir: project, env: serveEnv, log: (l) => logs.push(l) });
  assert.deepEqual(served.functions, [CLASSIFY, DELIVER]);
  const url = `${served.url}/functions/v1/${CLASSIFY}`;
  const none = await fetch(url, { method: 'POST' });
  assert.equal(none.status, 401);
  assert.equal((await none.json()).error, 'unauthorized');
  const wrong = await fetch(url, { method: 'POST', headers: { Authorization: 'Bearer nope' } });
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();
  const { data, error } = await supabase('not-the-secret').functions.invoke(DELIVER);
  assert.equal(data, null);
  assert.equal((error as { context: Response }).context.status, 401);
  await (error as { context: Response }).context.body?.cancel();
  const missing = await fetch(`${served.url}/functions/v1/no-such-function`);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  assert.equal(await count(db.sql`select count(*)::int as n from switchyard.workers`), 0);
});

Deno.test('functions.invoke starts both workers; runs started by alias complete', async () => {
  const sb = supabase(SECRET);
  for (const [fn, queue] of [[CLASSIFY, 'classify_threads'], [DELIVER, 'deliver_slack_alerts']]) {
    const { data, error } = await sb.functions.invoke(fn);
    assert.equal(error, null, String(error));
    assert.deepEqual({ ...data, workerId: undefined }, {
      workerId: undefined,
      queueName: queue,
      functionName: fn,
      state: 'started',
    });
    const again = await sb.functions.invoke(fn);
    assert.equal(again.data.state, 'running');
    assert.equal(again.data.workerId, data.workerId);
  }
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    ids.push(
      await client.startFlow('communityThreads', {
        id: `t${i}`,
        title: i % 2 ? 'Login outage in EU' : 'How do I export?',
        body: 'details',
      }),
    );
    ids.push(
      await client.startFlow('supportTickets', {
        id: `k${i}`,
        customer: 'acme',
        plan: 'enterprise',
        subject: 'Invoice question',
      }),
    );
  }
  for (const id of ids) assert.equal((await client.waitForRun(id)).status, 'completed');
  const byFlow = await db.sql<{ flow_slug: string; n: number }[]>`
    select flow_slug, count(*)::int as n from switchyard.runs where status = 'completed'
     group by flow_slug order by flow_slug`;
  assert.deepEqual(byFlow.map((r) => ({ ...r })), [
    { flow_slug: 'communityThreadsV1', n: 6 },
    { flow_slug: 'supportTicketsV1', n: 6 },
  ]);
  const urgent = await client.runStatus(ids[2]);
  assert.deepEqual((urgent!.output as { deliverSlack: unknown }).deliverSlack, {
    posted: false,
    text: 'Urgent thread t1: Login outage in EU',
  });
});

Deno.test('an unsupported v2 task pauses the old function once; its start is refused; resume + fixed registry recovers every run', async () => {
  const sb = supabase(SECRET);
  // Deploy the full registry (v1 + v2) to the delivery function only: its first worker
  // moves the alias to v2 while the classify function still runs a registry without v2.
  await Deno.writeTextFile(registryPath, fullRegistry);
  await served!.restart([DELIVER]);
  const started = await sb.functions.invoke(DELIVER);
  assert.equal(started.data?.state, 'started', String(started.error));
  const [alias] = await db
    .sql`select flow_slug from switchyard.aliases where alias = 'communityThreads'`;
  assert.equal(alias.flow_slug, 'communityThreadsV2');

  const marker = 'BODY-MARKER-must-not-leak';
  const v2Runs: string[] = [];
  for (let i = 0; i < 3; i++) {
    v2Runs.push(
      await client.startFlow('communityThreads', { id: `v2-${i}`, title: 'Outage', body: marker }),
    );
  }
  const paused = await waitFor('the classify function to pause', async () => {
    const [row] = await db.sql<{ paused_at: Date | null; pause_reason: string | null }[]>`
      select paused_at, pause_reason from switchyard.worker_functions where function_name = ${CLASSIFY}`;
    return row.paused_at ? row : null;
  });
  assert.match(paused.pause_reason!, /classify_threads/);
  assert.match(paused.pause_reason!, /communityThreadsV2\/classify/);
  assert.match(paused.pause_reason!, /\d+/, 'names the message ids');
  assert.doesNotMatch(paused.pause_reason!, new RegExp(marker), 'never message bodies');
  await waitFor('the classify worker to stop', async () =>
    (await count(db.sql`
      select count(*)::int as n from switchyard.workers
       where function_name = ${CLASSIFY} and stopped_at is null`)) === 0);
  const [stoppedRow] = await db.sql`
    select stop_reason from switchyard.workers where function_name = ${CLASSIFY}`;
  assert.match(stoppedRow.stop_reason, /unsupported work on queue "?classify_threads"?/);
  // Nothing was claimed, failed or archived: the v2 tasks wait with no attempt used.
  const tasks = await db.sql<{ status: string; attempts_count: number }[]>`
    select status, attempts_count from switchyard.step_tasks
     where flow_slug = 'communityThreadsV2' and step_slug = 'classify'`;
  assert.equal(tasks.length, 3);
  for (const t of tasks) assert.deepEqual({ ...t }, { status: 'queued', attempts_count: 0 });

  // The next HTTP start is refused with the persisted reason, and starts nothing.
  const workersBefore = await count(db.sql`select count(*)::int as n from switchyard.workers`);
  // A request may still see the stopping worker as running until its shutdown completes; the
  // first request after that tries to start one and is refused.
  const refused = await waitFor('a start attempt on the paused function', async () => {
    const response = await fetch(`${served!.url}/functions/v1/${CLASSIFY}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${SECRET}` },
    });
    if (response.status === 200) {
      assert.equal((await response.json()).state, 'running', 'nothing new starts');
      return null;
    }
    return response;
  });
  assert.equal(refused.status, 409);
  const body = await refused.json();
  assert.equal(body.error, 'function_paused');
  assert.equal(body.reason, paused.pause_reason);
  assert.equal(
    await count(db.sql`select count(*)::int as n from switchyard.workers`),
    workersBefore,
  );
  const [still] = await db.sql<{ paused_at: Date }[]>`
    select paused_at from switchyard.worker_functions where function_name = ${CLASSIFY}`;
  assert.equal(still.paused_at.getTime(), paused.paused_at!.getTime(), 'paused once');

  // Recover: resume, redeploy classify with the full registry, start it.
  const [resumed] = await db.sql`select switchyard.resume_function(${CLASSIFY}) as ok`;
  assert.equal(resumed.ok, true);
  await served!.restart([CLASSIFY]);
  const restarted = await sb.functions.invoke(CLASSIFY);
  assert.equal(restarted.data?.state, 'started', String(restarted.error));
  for (const id of v2Runs) {
    const status = await client.waitForRun(id);
    assert.equal(status.status, 'completed');
    assert.equal(status.flowSlug, 'communityThreadsV2');
  }
  assert.equal(
    await count(db.sql`select count(*)::int as n from switchyard.runs where status <> 'completed'`),
    0,
    'no run was lost or failed',
  );
  assert.equal(await count(db.sql`select count(*)::int as n from switchyard.runs`), 15);
});

Deno.test('teardown', async () => {
  try {
    await served?.close();
  } finally {
    await client.close();
    await db.close();
    await Deno.remove(project, { recursive: true });
  }
  const errors = logs.filter((l) => /error/i.test(l) && !/unsupported work/.test(l));
  assert.deepEqual(errors, [], 'functions logged no unexpected errors');
});
