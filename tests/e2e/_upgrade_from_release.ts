/**
 * Upgrades as a user makes them (docs/design/testing.md#upgrades-with-work-in-flight), from every
 * release so far to this
 * kit, shared by the test files `upgrade_<n>_test.ts` (each runs a shard of the releases, so they
 * run side by side). Each release is taken from its recorded commit (tests/_helpers/releases.ts):
 * its own `install`, `scaffold-queue`, `db:push` and `serve` set up a project, and its own runtime
 * runs the queue function. Runs are left in flight in every state that release has (started,
 * queued, retrying, delayed); then the README's upgrade steps run with this kit while the old
 * runtime keeps serving (migrations first), the old runtime carries on against the new SQL (the
 * rollout window), the functions are restarted with this kit's runtime, and the same registry —
 * no renamed flow — finishes everything: every run completes once, new runs start, and the
 * schema equals a fresh install's.
 *
 * @module
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { pgmqModeFromEnv } from '../../lib/sql/migrate.ts';
import { DEFAULT_PG_BIN } from '../../tools/_cluster.ts';
import { freePort } from '../../cli/_util.ts';
import { KIT_VERSION } from '../../cli/_kit.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { type ReleaseManifest, releases } from '../../tools/release_manifest.ts';
import { adminUrl, createTestDatabase, urlFor } from '../_helpers/db.ts';
import { runCommand, spawnDeno, type Spawned } from '../_helpers/process.ts';
import { extractRelease, kitTask as task } from '../_helpers/releases.ts';
import { FAST_ENV, waitFor } from '../_helpers/wait.ts';

const all = await releases();
const SECRET = 'upgrade-secret-51c0';
const QUEUE = 'upgrade_work';
const FUNCTION = 'upgrade-work-worker';
/**
 * Far longer than any upgrade: the delayed runs stay hidden across it whatever the machine's load,
 * and the test makes them visible itself (`pgmq.set_vt`) once the new runtime serves, instead of
 * waiting for them in real time.
 */
const NAP_SECONDS = 3600;

/**
 * The project's registry, in the API every release has (0.1.0 onwards). Handlers record each
 * call in upgrade_test.calls (with the runtime that made it) and wait on upgrade_test.gates.
 */
const REGISTRY = `import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

let db: ReturnType<typeof postgres> | undefined;
const conn = () => db ??= postgres(Deno.env.get('DATABASE_URL')!, { max: 2, onnotice: () => {} });
const runtime = Deno.env.get('UPGRADE_RUNTIME') ?? 'unknown';
type Ctx = { runId: string; attempt: number; signal: AbortSignal };
const record = async (ctx: Ctx, step: string) => {
  await conn()\`insert into upgrade_test.calls (run_id, step_slug, attempt, runtime)
    values (\${ctx.runId}, \${step}, \${ctx.attempt}, \${runtime})\`;
};
const isOpen = async (gate: string) =>
  (await conn()\`select open from upgrade_test.gates where name = \${gate}\`)[0]?.open === true;
const waitOpen = async (gate: string, signal: AbortSignal) => {
  while (!(await isOpen(gate))) {
    if (signal.aborted) throw signal.reason;
    await new Promise((r) => setTimeout(r, 100));
  }
};

const upgradeV1 = new Flow<{ n: number }>({
  slug: 'upgradeV1',
  maxAttempts: 200,
  baseDelay: 1,
  maxDelay: 1,
})
  .step({ slug: 'hold', timeout: 600 }, async (input, ctx) => {
    await waitOpen('hold', ctx.signal);
    await record(ctx, 'hold');
    return input.n;
  })
  .step({ slug: 'flaky', dependsOn: ['hold'] }, async (input, ctx) => {
    await record(ctx, 'flaky');
    if (!(await isOpen('flaky'))) throw new Error('the flaky gate is closed');
    return input.hold + 1;
  })
  .step({ slug: 'finish', dependsOn: ['flaky'] }, async (input, ctx) => {
    await record(ctx, 'finish');
    return input.flaky * 10;
  });

const sleepyV1 = new Flow<{ n: number }>({ slug: 'sleepyV1' })
  .step({ slug: 'nap', startDelay: ${NAP_SECONDS} }, async (input, ctx) => {
    await record(ctx, 'nap');
    return input.n * 2;
  });

export const registry = [
  defineDeployedFlow(
    routeFlow(upgradeV1, { queues: { hold: '${QUEUE}', flaky: '${QUEUE}', finish: '${QUEUE}' } }),
    { alias: 'upgrade' },
  ),
  defineDeployedFlow(routeFlow(sleepyV1, { queues: { nap: '${QUEUE}' } }), { alias: 'sleepy' }),
] as const;
`;

/** Where a kit keeps its serve command: `cli/` from 0.5.0, `scripts/` in the releases before. */
function serveScript(kit: string): string {
  try {
    Deno.statSync(join(kit, 'cli', 'serve.ts'));
    return 'cli/serve.ts';
  } catch {
    return 'scripts/serve.ts';
  }
}

/** `deno task serve` of one kit over the project: that kit's runtime serves the functions. */
class Served {
  #process: Spawned;
  readonly url: string;
  constructor(kit: string, project: string, env: Record<string, string>) {
    const port = freePort();
    this.url = `http://127.0.0.1:${port}/functions/v1/${FUNCTION}`;
    this.#process = spawnDeno(
      ['run', '-A', serveScript(kit), '--project', project, '--port', String(port)],
      { cwd: kit, env: { NO_COLOR: '1', ...env } },
    );
  }
  get log(): string {
    return this.#process.lines.join('\n');
  }
  /** POSTs to the function until its worker answers (the gateway takes a moment to listen). */
  async startWorker(): Promise<{ state: string }> {
    const deadline = Date.now() + 90_000;
    let last = '';
    while (Date.now() < deadline) {
      let res: Response | undefined;
      try {
        res = await fetch(this.url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${SECRET}` },
        });
      } catch (e) {
        last = String(e); // not listening yet
      }
      if (res) {
        const text = await res.text();
        if (res.ok) return JSON.parse(text);
        last = `${res.status} ${text}`;
        // A refusal by the worker itself is final; a gateway still starting is not.
        if (/start_failed|worker_config/.test(text)) break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the worker of ${this.url} did not start: ${last}\nserve log:\n${this.log}`);
  }
  /** SIGTERM, as a redeploy ends the old instances: workers stop, running tasks are released. */
  async stop(): Promise<void> {
    this.#process.signal('SIGTERM');
    await this.#process.status;
  }
}

/** `pg_dump --schema-only` of the kit's schemas, without comments, settings and queue tables. */
async function schemaOf(url: string): Promise<string[]> {
  const bin = Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN;
  const out = await runCommand(`${bin}/pg_dump`, [
    '--schema-only',
    '--schema=switchyard',
    '--schema=pgmq',
    '--exclude-table=pgmq.q_*',
    '--exclude-table=pgmq.a_*',
    '-d',
    url,
  ]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.split('\n').filter((line) =>
    line.trim() !== '' && !line.startsWith('--') && !/^SET /.test(line) &&
    !line.startsWith('SELECT pg_catalog.set_config') && !/^\\(un)?restrict /.test(line)
  );
}

function firstDifference(a: string[], b: string[]): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const show = (lines: string[]) => lines.slice(Math.max(0, i - 3), i + 4).join('\n');
  return `first difference at line ${i + 1}:\n--- upgraded\n${show(a)}\n--- fresh install\n${
    show(b)
  }`;
}

/**
 * Registers the upgrade test of every release whose position in the recorded releases is `shard`
 * modulo `shards`: the test files `upgrade_<n>_test.ts` each take one shard, so the releases are
 * upgraded side by side and a new release lands in one of them without a new file.
 */
export function defineUpgradeTests(shard: number, shards: number): void {
  const mine = all.filter((_, i) => i % shards === shard);
  if (mine.length === 0) {
    throw new Error(`upgrade shard ${shard + 1} of ${shards} has no release: use fewer shards`);
  }
  for (const release of mine) defineUpgradeTest(release);
}

function defineUpgradeTest(release: ReleaseManifest): void {
  Deno.test(`${release.version} → this kit: its own runtime, runs in flight in every state, the README's upgrade steps`, async () => {
    const root = await Deno.makeTempDir({ prefix: `switchyard-upgrade-${release.version}-` });
    const kit = join(root, 'kit');
    const project = join(root, 'app');
    const name = `sy_upgrade_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const url = urlFor(name);
    const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    const sql = postgres(url, { max: 3, onnotice: () => {} });
    const fresh = await createTestDatabase();
    const served: Served[] = [];
    const env = {
      DATABASE_URL: url,
      SWITCHYARD_WORKER_SECRET: SECRET,
      SWITCHYARD_LOG: 'warn',
      ...FAST_ENV,
      PGMQ_MODE: pgmqModeFromEnv(),
    };
    const setGate = (gate: string, open: boolean) =>
      sql`update upgrade_test.gates set open = ${open} where name = ${gate}`;
    const start = async (alias: string, from: number, count: number) => {
      const ids: string[] = [];
      for (let n = from; n < from + count; n++) {
        const [{ id }] = await sql<{ id: string }[]>`
          select switchyard.start_flow(${alias}, ${sql.json({ n })}) as id`;
        ids.push(id);
      }
      return ids;
    };
    const tasks = (ids: string[], step: string) =>
      sql<{ status: string; attempts_count: number; message_id: string; queue_name: string }[]>`
        select status, attempts_count, message_id::text, queue_name from switchyard.step_tasks
         where run_id = any(${ids}::uuid[]) and step_slug = ${step}`;
    const calls = (ids: string[], step: string, runtime?: string) =>
      sql<{ run_id: string; n: number }[]>`
        select run_id::text, count(*)::int as n from upgrade_test.calls
         where run_id = any(${ids}::uuid[]) and step_slug = ${step}
           and (${runtime ?? null}::text is null or runtime = ${runtime ?? null}::text)
         group by run_id`;
    try {
      // 1. The release's kit, from its commit; a project made with it, as its README says.
      await extractRelease(release, kit);
      await Deno.mkdir(join(project, 'supabase'), { recursive: true });
      await Deno.copyFile(
        join(kit, 'supabase/config.toml'),
        join(project, 'supabase/config.toml'),
      );
      await admin.unsafe(`create database "${name}"`);
      await task(kit, ['install', '--project', project], env);
      await Deno.writeTextFile(join(project, 'supabase/functions/_shared/registry.ts'), REGISTRY);
      await task(
        kit,
        ['scaffold-queue', QUEUE, '--max-concurrent', '2', '--project', project],
        env,
      );
      await task(kit, ['db:push', '--project', project], env);
      const migrationsDir = join(project, 'supabase/migrations');
      const registration = [...Deno.readDirSync(migrationsDir)].map((e) => e.name)
        .find((f) => f.endsWith(`_register_${QUEUE}_worker.sql`))!;
      const registrationText = await Deno.readTextFile(join(migrationsDir, registration));
      await sql.unsafe(`
        create schema upgrade_test;
        create table upgrade_test.calls (
          run_id uuid not null, step_slug text not null, attempt int not null,
          runtime text not null, at timestamptz not null default clock_timestamp());
        create table upgrade_test.gates (name text primary key, open boolean not null);
        insert into upgrade_test.gates values ('hold', true), ('flaky', true);`);

      // 2. The release's runtime serves the queue function.
      const old = new Served(kit, project, { ...env, UPGRADE_RUNTIME: 'old' });
      served.push(old);
      assert.equal((await old.startWorker()).state, 'started');

      // 3. Work in every state the release has.
      const finished = await start('upgrade', 0, 2);
      await waitFor('the first runs to complete on the release', async () => {
        const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from switchyard.runs
          where run_id = any(${finished}::uuid[]) and status = 'completed'`;
        return n === finished.length;
      });
      await setGate('flaky', false);
      const retrying = await start('upgrade', 10, 2);
      await waitFor(
        'the flaky steps to fail and wait for their retries',
        async () =>
          (await tasks(retrying, 'flaky')).filter((t) => t.attempts_count >= 2).length === 2,
      );
      await setGate('hold', false);
      const held = await start('upgrade', 20, 3);
      await waitFor(
        'two held tasks running (the function runs two at a time)',
        async () => (await tasks(held, 'hold')).filter((t) => t.status === 'started').length === 2,
      );
      const delayed = await start('sleepy', 30, 2);
      await waitFor(
        'the delayed steps to be queued',
        async () => (await tasks(delayed, 'nap')).length === 2,
      );

      // The states, at the moment of the upgrade.
      const holdTasks = await tasks(held, 'hold');
      assert.equal(holdTasks.filter((t) => t.status === 'started').length, 2, 'started');
      assert.ok(
        holdTasks.some((t) => t.status === 'queued' && t.attempts_count === 0),
        `a queued task that never ran: ${JSON.stringify(holdTasks)}`,
      );
      const flaky = await tasks(retrying, 'flaky');
      assert.ok(
        flaky.every((t) => t.attempts_count >= 1 && t.status !== 'completed'),
        `retrying tasks: ${JSON.stringify(flaky)}`,
      );
      const [{ hidden }] = await sql<{ hidden: number }[]>`
        select count(*)::int as hidden from pgmq.q_upgrade_work q
         where q.msg_id = any(${(await tasks(delayed, 'nap')).map((t) => t.message_id)}::bigint[])
           and q.vt > now() + interval '5 seconds'`;
      assert.equal(hidden, 2, 'the delayed tasks are not visible yet');

      // 4. The README's upgrade steps with this kit, while the release's runtime still serves:
      //    install (new migrations only), scaffold-queue (the function's files; the applied
      //    registration is kept), db:push (the migrations first).
      const installed = await task(KIT_ROOT, ['install', '--project', project], env);
      if (/^nothing to do/.test(installed.stdout)) {
        // Only the current release itself is already up to date.
        assert.equal(release.version, KIT_VERSION, installed.stdout);
      } else {
        assert.match(
          installed.stdout,
          new RegExp(`upgraded from ${release.version.replace(/\./g, '\\.')}`),
        );
        assert.match(installed.stdout, new RegExp(`scaffold-queue ${QUEUE} --project`));
      }
      const scaffolded = await task(
        KIT_ROOT,
        ['scaffold-queue', QUEUE, '--max-concurrent', '2', '--project', project, '--force'],
        env,
      );
      assert.equal(
        await Deno.readTextFile(join(migrationsDir, registration)),
        registrationText,
        `the applied registration is never rewritten:\n${scaffolded.stdout}`,
      );
      await task(KIT_ROOT, ['db:push', '--project', project], env);

      // 5. The rollout window: the release's runtime carries on against the new SQL. The held
      //    tasks it is running complete, and a run started now goes through its first step.
      await setGate('hold', true);
      const window = await start('upgrade', 40, 1);
      await waitFor(
        'the release runtime to run steps on the new SQL',
        async () => (await calls([...held, ...window], 'hold', 'old')).length === held.length + 1,
      );

      // 6. The functions are redeployed with this kit's runtime (same registry, same slugs).
      await old.stop();
      const current = new Served(KIT_ROOT, project, { ...env, UPGRADE_RUNTIME: 'new' });
      served.push(current);
      assert.equal((await current.startWorker()).state, 'started');
      // The delayed runs crossed the upgrade untouched: still hidden, never claimed. Their delay
      // is PGMQ's visibility alone, so ending it early is what the passing hour would do.
      const naps = await tasks(delayed, 'nap');
      assert.ok(
        naps.every((t) => t.status === 'queued' && t.attempts_count === 0),
        `the delayed tasks waited across the upgrade: ${JSON.stringify(naps)}`,
      );
      for (const t of naps) {
        const [{ shown }] = await sql<{ shown: number }[]>`
          select count(*)::int as shown from pgmq.set_vt(${t.queue_name}, ${t.message_id}::bigint, 0)`;
        assert.equal(shown, 1, `message ${t.message_id} of ${t.queue_name} is still queued`);
      }
      await setGate('flaky', true);
      const after = await start('upgrade', 50, 2);
      const everything = [...finished, ...retrying, ...held, ...window, ...after];
      const all = [...everything, ...delayed];
      await waitFor('every run to complete after the upgrade', async () => {
        const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from switchyard.runs
          where run_id = any(${all}::uuid[]) and status = 'completed'`;
        return n === all.length;
      }, { timeoutMs: 120_000 });

      // 7. Each run completed once with the right output; no step ran again after it succeeded.
      const outputs = await sql<{ flow_slug: string; n: number; output: Record<string, number> }[]>`
        select flow_slug, (input->>'n')::int as n, output from switchyard.runs
         where run_id = any(${all}::uuid[]) order by 2`;
      for (const r of outputs) {
        assert.deepEqual(
          r.output,
          r.flow_slug === 'sleepyV1' ? { nap: r.n * 2 } : { finish: (r.n + 1) * 10 },
          `run ${r.n} of ${r.flow_slug}`,
        );
      }
      for (
        const [ids, step] of [[everything, 'hold'], [everything, 'finish'], [
          delayed,
          'nap',
        ]] as const
      ) {
        const counts = await calls([...ids], step);
        assert.equal(counts.length, ids.length, `every run ran ${step}`);
        assert.ok(
          counts.every((c) => c.n === 1),
          `${step} ran once per run: ${JSON.stringify(counts)}`,
        );
      }
      assert.equal(
        (await calls(after, 'finish', 'new')).length,
        after.length,
        'the new runtime ran',
      );
      const [{ changes }] = await sql<{ changes: number }[]>`
        select count(*)::int as changes from switchyard.flow_option_changes`;
      assert.equal(changes, 0, 'the registry did not change: no option change was recorded');

      // 8. The upgraded schema is exactly a fresh install's.
      for (const s of served.splice(0)) await s.stop();
      const upgraded = await schemaOf(url);
      const installedSchema = await schemaOf(fresh.url);
      assert.ok(
        installedSchema.some((l) => l.includes('switchyard.start_tasks')),
        'the core is dumped',
      );
      assert.ok(
        upgraded.length === installedSchema.length &&
          upgraded.every((l, i) => l === installedSchema[i]),
        firstDifference(upgraded, installedSchema),
      );
    } finally {
      for (const s of served) await s.stop();
      await sql.end();
      await fresh.close();
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
      await Deno.remove(root, { recursive: true });
    }
  });
}
