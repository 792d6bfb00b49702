/**
 * A runtime that meets an SQL core older than it needs refuses to start with "apply the
 * migrations" and compiles nothing (docs/design/testing.md#upgrades-with-work-in-flight): the
 * release 0.2.0's core, from
 * its recorded commit, under this kit's worker.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { migrate, pgmqModeFromEnv } from '../../lib/sql/migrate.ts';
import { REQUIRED_CORE_VERSION } from '../../lib/sql/core_version.ts';
import { releases } from '../../tools/release_manifest.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { extractRelease } from '../_helpers/releases.ts';
import { FAST } from '../_helpers/wait.ts';

const all = await releases();

Deno.test('this runtime on an older SQL core refuses to start: apply the migrations', async () => {
  const root = await Deno.makeTempDir({ prefix: 'switchyard-old-core-' });
  const name = `sy_oldcore_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    // The newest release older than this runtime's requirement: 0.2.0 has no core_version().
    const older = all.find((r) => r.version === '0.2.0');
    assert.ok(older, 'releases/0.2.0 is recorded');
    await extractRelease(older, root);
    await admin.unsafe(`create database "${name}"`);
    await migrate(urlFor(name), { workdir: root, pgmqMode: pgmqModeFromEnv() });
    const flow = new Flow<{ n: number }>({ slug: 'oldCoreV1' }).step({ slug: 'a' }, (i) => i.n);
    const registry = [
      defineDeployedFlow(routeFlow(flow, { queues: { a: 'old_core_q' } }), { alias: 'oldcore' }),
    ] as const;
    await assert.rejects(
      () =>
        startWorker(registry, { queueName: 'old_core_q', connectionString: urlFor(name), ...FAST }),
      (e: Error) => {
        assert.equal(e.name, 'WorkerConfigError');
        // The runtime's requirement (0.4.0 since wait steps), whatever it is now.
        assert.ok(
          e.message.includes(`SQL core in this database is older than ${REQUIRED_CORE_VERSION}`),
          e.message,
        );
        assert.match(e.message, /apply the migrations first \(supabase db push/);
        return true;
      },
    );
    const sql = postgres(urlFor(name), { max: 1, onnotice: () => {} });
    try {
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from switchyard.flows`;
      assert.equal(n, 0, 'nothing was compiled against the old core');
    } finally {
      await sql.end();
    }
  } finally {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
    await Deno.remove(root, { recursive: true });
  }
});
