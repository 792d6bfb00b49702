/**
 * Migrations under load (docs/design/testing.md#upgrades-with-work-in-flight): a project on a
 * release (made by that
 * release's installer), its database served by 4 workers of that release's own runtime claiming
 * and completing, gets this kit's migrations as a user does — this kit's `install`, then
 * `supabase db push` of the project — while runs keep starting. The push succeeds the first time (no deadlock,
 * no lock timeout), and nothing is lost or run twice: every run completes, every step's
 * handler ran exactly once.
 *
 * `SWITCHYARD_UPGRADE_ITERATIONS` (default 1) sets the iterations per release; the suite is
 * meant to be run with 100 on demand:
 * `SWITCHYARD_UPGRADE_ITERATIONS=100 deno task test tests/e2e/upgrade_load_test.ts`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { migrate, pgmqModeFromEnv } from '../../lib/sql/migrate.ts';
import { coreMigrations } from '../../cli/_kit.ts';
import { releases } from '../../tools/release_manifest.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { spawnDeno } from '../_helpers/process.ts';
import { extractRelease, kitTask } from '../_helpers/releases.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { waitFor } from '../_helpers/wait.ts';

const ITERATIONS = Number(Deno.env.get('SWITCHYARD_UPGRADE_ITERATIONS') ?? '1');
const WORKERS = 4;
const current = await coreMigrations();
/** Releases this kit has migrations to add to. */
const older = (await releases()).filter((r) =>
  r.migrations.map((m) => m.file).join() !== current.join()
);

/**
 * The release's runtime, 4 workers in one process: `deno run` with the release's import map.
 * Handlers record their calls; stdin closing stops them.
 */
const WORKERS_SCRIPT = `import postgres from 'postgres';
import { Flow, defineDeployedFlow, routeFlow, startWorker } from './lib/mod.ts';

const url = Deno.args[0];
const db = postgres(url, { max: 4, onnotice: () => {} });
type Ctx = { runId: string; stepSlug: string; attempt: number };
const record = (ctx: Ctx) =>
  db\`insert into load_test.calls (run_id, step_slug, attempt)
      values (\${ctx.runId}, \${ctx.stepSlug}, \${ctx.attempt})\`;
const flow = new Flow<{ n: number }>({ slug: 'loadV1', maxAttempts: 5, baseDelay: 0 })
  .step({ slug: 'a' }, async (i, ctx) => (await record(ctx), i.n + 1))
  .step({ slug: 'b', dependsOn: ['a'] }, async (i, ctx) => (await record(ctx), i.a * 2))
  .step({ slug: 'c', dependsOn: ['a'] }, async (i, ctx) => (await record(ctx), i.a * 3))
  .step({ slug: 'd', dependsOn: ['b', 'c'] }, async (i, ctx) => (await record(ctx), i.b + i.c));
const registry = [
  defineDeployedFlow(
    routeFlow(flow, { queues: { a: 'load_q', b: 'load_q', c: 'load_q', d: 'load_q' } }),
    { alias: 'load' },
  ),
] as const;
const workers = [];
for (let i = 0; i < ${WORKERS}; i++) {
  workers.push(await startWorker(registry, {
    queueName: 'load_q',
    connectionString: url,
    functionName: 'load-q-worker',
    maxConcurrent: 4,
    maxPollSeconds: 1,
    pollIntervalMs: 10,
    heartbeatIntervalMs: 200,
    stallCheckIntervalMs: 300,
    logger: { debug() {}, info() {}, warn: (m: string) => console.error(m), error: (m: string) => console.error(m) },
  }));
}
console.log('ready');
for await (const _ of Deno.stdin.readable) { /* until the test closes stdin */ }
for (const w of workers) await w.stop();
await db.end();
console.log('stopped');
`;

for (const release of older) {
  Deno.test(`${release.version} → this kit's migrations with 4 of ${release.version}'s workers running: ${ITERATIONS} pushes, each first time`, async () => {
    const root = await Deno.makeTempDir({ prefix: `switchyard-load-${release.version}-` });
    const kit = join(root, 'kit');
    const project = join(root, 'app');
    const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    const template = `sy_load_tpl_${crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`;
    const mode = pgmqModeFromEnv();
    try {
      await extractRelease(release, kit);
      await Deno.writeTextFile(join(kit, 'load_workers.ts'), WORKERS_SCRIPT);
      // A project on the release, made by its installer; the database pushed from it once (every
      // iteration clones that), then this kit's installer adds its migrations to the project.
      await Deno.mkdir(join(project, 'supabase'), { recursive: true });
      await Deno.copyFile(join(kit, 'supabase/config.toml'), join(project, 'supabase/config.toml'));
      await kitTask(kit, ['install', '--project', project], {});
      await admin.unsafe(`create database "${template}"`);
      await migrate(urlFor(template), { workdir: project, pgmqMode: mode });
      const t = postgres(urlFor(template), { max: 1, onnotice: () => {} });
      try {
        await t.unsafe(`create schema load_test;
          create table load_test.calls (run_id uuid not null, step_slug text not null,
            attempt int not null, at timestamptz not null default clock_timestamp())`);
        // As a scaffolded registration does: the shared queue first, then the function.
        await t`select switchyard.ensure_shared_queue('load_q')`;
        await t`select switchyard.register_function('load-q-worker', 'load_q')`;
      } finally {
        await t.end();
      }
      const upgrade = await kitTask(KIT_ROOT, ['install', '--project', project], {});
      const added = [...upgrade.stdout.matchAll(/^created\s+supabase\/migrations\/(\S+)$/gm)]
        .map((m) => m[1]);
      assert.equal(added.length, current.length - release.migrations.length, upgrade.stdout);

      for (let iteration = 0; iteration < ITERATIONS; iteration++) {
        const name = `sy_load_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
        await admin.unsafe(`create database "${name}" template "${template}"`);
        const url = urlFor(name);
        const sql = postgres(url, { max: 4, onnotice: () => {} });
        const child = spawnDeno(
          ['run', '-A', '--config', join(kit, 'deno.json'), join(kit, 'load_workers.ts'), url],
          { cwd: kit, stdin: 'open' },
        );
        let pushMs = 0;
        const iterationStarted = performance.now();
        let feeding = true;
        const started: string[] = [];
        let feed: Promise<void> = Promise.resolve();
        try {
          await waitFor(
            `the ${release.version} workers to start (iteration ${iteration})`,
            () => child.stdout.includes('ready') || /error/i.test(child.stderr) || child.exited,
            { timeoutMs: 60_000 },
          );
          assert.ok(child.stdout.includes('ready'), `workers did not start:\n${child.output}`);
          // Runs keep starting, before, during and after the push.
          feed = (async () => {
            while (feeding) {
              const [{ id }] = await sql<{ id: string }[]>`
                select switchyard.start_flow('load', ${sql.json({ n: started.length })}) as id`;
              started.push(id);
              await new Promise((r) => setTimeout(r, 15));
            }
          })();
          await waitFor('work in flight', async () => {
            const [{ n }] = await sql<{ n: number }[]>`
              select count(*)::int as n from load_test.calls`;
            return n >= 40;
          });
          // The push, while workers claim and complete and runs keep starting.
          const log: string[] = [];
          const pushStarted = performance.now();
          const [{ from }] = await sql<{ from: Date }[]>`select clock_timestamp() as from`;
          const startedBefore = started.length;
          await migrate(url, { workdir: project, pgmqMode: mode, log: (l) => log.push(l) }).catch(
            (e) => {
              throw new Error(
                `iteration ${iteration}: the push failed the first time: ${
                  (e as Error).message
                }\n` +
                  log.join('\n'),
              );
            },
          );
          const applied = log.flatMap((l) =>
            [...l.matchAll(/Applying migration (\S+)\.\.\./g)].map((m) => m[1])
          );
          assert.deepEqual(applied, added, 'the migrations the installer added');
          pushMs = Math.round(performance.now() - pushStarted);
          // The load was on throughout: the release's workers ran steps and runs kept starting
          // while the push ran.
          const [{ during }] = await sql<{ during: number }[]>`
            select count(*)::int as during from load_test.calls
             where at > ${from} and at < clock_timestamp()`;
          assert.ok(
            during > 0 && started.length > startedBefore,
            `iteration ${iteration}: ${during} steps ran and ${
              started.length - startedBefore
            } runs started during the ${pushMs} ms push`,
          );
          await new Promise((r) => setTimeout(r, 300));
        } finally {
          feeding = false;
          await feed;
        }
        try {
          await waitFor(`every run to complete (iteration ${iteration})`, async () => {
            const [{ open }] = await sql<{ open: number }[]>`
              select count(*)::int as open from switchyard.runs
               where run_id = any(${started}::uuid[]) and status <> 'completed'`;
            return open === 0;
          }, { timeoutMs: 60_000 });
          const bad = await sql<{ run_id: string; step_slug: string; n: number }[]>`
            select run_id::text, step_slug, count(*)::int as n from load_test.calls
             group by 1, 2 having count(*) <> 1`;
          assert.deepEqual([...bad], [], 'every step ran exactly once');
          const [{ calls }] = await sql<{ calls: number }[]>`
            select count(*)::int as calls from load_test.calls`;
          assert.equal(calls, started.length * 4, 'four steps per run');
          const wrong = await sql<{ n: number }[]>`
            select (input->>'n')::int as n from switchyard.runs
             where run_id = any(${started}::uuid[])
               and output is distinct from jsonb_build_object(
                 'd', ((input->>'n')::int + 1) * 5)`;
          assert.deepEqual([...wrong], [], 'outputs');
          if (ITERATIONS > 2) {
            console.error(
              `${release.version} iteration ${
                iteration + 1
              }/${ITERATIONS}: ${started.length} runs, ` +
                `push ${pushMs} ms, ${Math.round(performance.now() - iterationStarted)} ms in all`,
            );
          }
        } finally {
          await child.closeInput();
          const { code } = await child.wait();
          await sql.end();
          await admin.unsafe(`drop database if exists "${name}" with (force)`);
          assert.ok(
            code === 0,
            `the ${release.version} workers exited badly:\n${child.stderr}`,
          );
        }
      }
    } finally {
      await admin.unsafe(`drop database if exists "${template}" with (force)`);
      await admin.end();
      await Deno.remove(root, { recursive: true });
    }
  });
}
