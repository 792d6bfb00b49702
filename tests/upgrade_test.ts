/**
 * Upgrades (docs/ARCHITECTURE.md §8): a database made by the previous release's migrations
 * (the `releases/<version>/migrations/` snapshot, applied with `supabase db push`) runs work,
 * then gets the current migrations the same way. Runs in flight across the upgrade complete,
 * new runs work, and a normalized `pg_dump --schema-only` equals a fresh install's.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow, startWorker, type Worker } from '../lib/mod.ts';
import { ensurePgmq, migrate } from '../lib/ops.ts';
import { DEFAULT_PG_BIN } from '../scripts/_cluster.ts';
import { KIT_VERSION } from '../scripts/_kit.ts';
import { KIT_ROOT } from '../scripts/_project.ts';
import { type ReleaseManifest, releases, RELEASES_DIR } from '../scripts/release_manifest.ts';
import { adminUrl, createTestDatabase, urlFor } from './_helpers/db.ts';
import { FAST, waitFor } from './_helpers/wait.ts';

/** The release an existing database runs: the newest one before this kit's, else the first. */
function previousRelease(all: ReleaseManifest[]): ReleaseManifest {
  const key = (v: string) => v.split('.').map((n) => n.padStart(6, '0')).join('.');
  const before = all.filter((r) => key(r.version) < key(KIT_VERSION));
  const release = before.at(-1) ?? all[0];
  assert.ok(release, 'releases/ holds at least one release');
  return release;
}

/** `pg_dump --schema-only` without comments, settings, dump keys and PGMQ's per-queue tables. */
async function schemaOf(url: string): Promise<string[]> {
  const bin = Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN;
  const out = await new Deno.Command(`${bin}/pg_dump`, {
    args: ['--schema-only', '--exclude-table=pgmq.q_*', '--exclude-table=pgmq.a_*', '-d', url],
    stdout: 'piped',
    stderr: 'piped',
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).split('\n').filter((line) =>
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

const flow = new Flow<{ n: number }>({ slug: 'upgradeV1', maxAttempts: 3 })
  .step({ slug: 'first' }, (input) => input.n + 1)
  .step({ slug: 'second', dependsOn: ['first'] }, (input) => input.first * 10);
const registry = [
  defineDeployedFlow(
    routeFlow(flow, { queues: { first: 'upgrade_first', second: 'upgrade_second' } }),
    { alias: 'upgrade' },
  ),
] as const;

Deno.test('previous release → work in flight → current migrations: runs complete, schema equals a fresh install', async () => {
  const release = previousRelease(await releases());
  const name = `sy_upgrade_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  const workdir = await Deno.makeTempDir({ prefix: 'switchyard-upgrade-' });
  const fresh = await createTestDatabase();
  const workers: Worker[] = [];
  const url = urlFor(name);
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const start = async (queueName: 'upgrade_first' | 'upgrade_second') => {
    const worker = await startWorker(registry, { queueName, connectionString: url, ...FAST });
    workers.push(worker);
    return worker;
  };
  const runStatus = async (ids: string[]) =>
    await sql<{ status: string; output: unknown }[]>`
      select status, output from switchyard.runs where run_id = any(${ids}::uuid[])`;
  const startRuns = async (from: number, count: number) => {
    const ids: string[] = [];
    for (let n = from; n < from + count; n++) {
      const [{ id }] = await sql<{ id: string }[]>`
        select switchyard.start_flow('upgrade', ${sql.json({ n })}) as id`;
      ids.push(id);
    }
    return ids;
  };
  try {
    // 1. The previous release, applied the way users apply it.
    await admin.unsafe(`create database "${name}"`);
    await Deno.mkdir(join(workdir, 'supabase/migrations'), { recursive: true });
    await Deno.copyFile(
      join(KIT_ROOT, 'supabase/config.toml'),
      join(workdir, 'supabase/config.toml'),
    );
    for (const { file } of release.migrations) {
      await Deno.copyFile(
        join(RELEASES_DIR, release.version, 'migrations', file),
        join(workdir, 'supabase/migrations', file),
      );
    }
    await ensurePgmq(url, 'compat');
    const firstPush: string[] = [];
    await migrate(url, { workdir, pgmqMode: 'compat', log: (l) => firstPush.push(l) });
    const applied = (lines: string[]) =>
      lines.flatMap((l) => [...l.matchAll(/Applying migration (\S+)\.\.\./g)].map((m) => m[1]));
    assert.deepEqual(applied(firstPush), release.migrations.map((m) => m.file));

    // 2. Work on the old schema: finished runs, runs halfway (second step queued), runs not begun.
    const a = await start('upgrade_first');
    const b = await start('upgrade_second');
    const done = await startRuns(0, 3);
    await waitFor(
      'the first runs to complete',
      async () => (await runStatus(done)).every((r) => r.status === 'completed'),
    );
    await b.stop();
    const halfway = await startRuns(10, 4);
    await waitFor('the first steps of the halfway runs', async () => {
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.step_tasks
         where run_id = any(${halfway}::uuid[]) and step_slug = 'second' and status = 'queued'`;
      return n === halfway.length;
    });
    await a.stop();
    const waiting = await startRuns(20, 2);
    const inFlight = [...halfway, ...waiting];
    assert.ok((await runStatus(inFlight)).every((r) => r.status === 'started'));

    // 3. The current migrations on top: only the ones the release lacks are applied.
    const secondPush: string[] = [];
    await migrate(url, { pgmqMode: 'compat', log: (l) => secondPush.push(l) });
    const released = new Set(release.migrations.map((m) => m.file));
    const current = [...Deno.readDirSync(join(KIT_ROOT, 'supabase/migrations'))]
      .map((e) => e.name).filter((f) => f.endsWith('.sql')).sort();
    assert.deepEqual(applied(secondPush), current.filter((f) => !released.has(f)));

    // 4. Runs in flight across the upgrade complete; new ones work.
    await start('upgrade_first');
    await start('upgrade_second');
    const after = await startRuns(30, 2);
    await waitFor(
      'every run to complete after the upgrade',
      async () => (await runStatus([...inFlight, ...after])).every((r) => r.status === 'completed'),
    );
    const outputs = await sql<{ n: number; output: { second: number } }[]>`
      select (input->>'n')::int as n, output from switchyard.runs
       where run_id = any(${[...inFlight, ...after]}::uuid[]) order by 1`;
    for (const row of outputs) assert.deepEqual(row.output, { second: (row.n + 1) * 10 });
    for (const worker of workers.splice(0)) await worker.stop();

    // 5. The upgraded schema is exactly a fresh install's.
    const upgraded = await schemaOf(url);
    const installed = await schemaOf(fresh.url);
    assert.ok(installed.some((l) => l.includes('switchyard.start_tasks')), 'the dump has the core');
    assert.ok(
      upgraded.length === installed.length && upgraded.every((l, i) => l === installed[i]),
      firstDifference(upgraded, installed),
    );
  } finally {
    for (const worker of workers) await worker.stop().catch(() => {});
    await sql.end();
    await fresh.close();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
    await Deno.remove(workdir, { recursive: true });
  }
});
