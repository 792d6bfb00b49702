/**
 * Local development (docs/design/worker.md#compiling-at-deploy-and-in-local-development): a worker
 * asked for it (`development`, or
 * `SWITCHYARD_DEVELOPMENT=true`) against a local database recompiles a changed shape of a
 * concrete flow, with a log line, instead of refusing with SY004; the flow's runs go, its alias
 * keeps pointing at it. Without the request, on the hosted runtime or against a remote database
 * the change is refused as always.
 */
import assert from 'node:assert/strict';
import { OperationError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { isLocalDatabaseHost, localDevelopment } from '../../lib/worker/development.ts';
import { startWorkerImpl } from '../../lib/worker/worker.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const { sql } = db;

Deno.test.afterAll(async () => {
  await db.close();
});

function lines() {
  const logged: string[] = [];
  return {
    logged,
    logger: { info: () => {}, warn: (m: string) => logged.push(m), error: () => {} },
  };
}

const v1 = new Flow<{ n: number }>({ slug: 'devShape' })
  .step({ slug: 'a' }, (input) => input.n + 1);
const v1Changed = new Flow<{ n: number }>({ slug: 'devShape' })
  .step({ slug: 'a' }, (input) => input.n + 1)
  .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a * 2);
const deploy = (flow: typeof v1 | typeof v1Changed) =>
  defineDeployedFlow(
    routeFlow(flow, {
      queues: flow.steps.length === 1
        ? { a: 'dev_q' } as never
        : { a: 'dev_q', b: 'dev_q' } as never,
    }),
    { alias: 'dev' },
  );

Deno.test('a changed shape is refused in production and recompiled, with a log line, in local development', async () => {
  const base = { connectionString: db.url, queueName: 'dev_q', ...FAST };
  const first = await startWorker([deploy(v1)], base);
  await first.stop();
  const [{ id }] = await sql<{ id: string }[]>`
    select switchyard.start_flow('dev', '{"n": 1}'::jsonb) as id`;

  // Not asked, and asked on the hosted runtime: SY004, nothing changed.
  for (
    const extra of [{}, {
      development: true,
      env: (n: string) => n === 'SB_REGION' ? 'eu' : undefined,
    }]
  ) {
    const refused = await startWorkerImpl([deploy(v1Changed)], { ...base, ...extra }).then(
      () => assert.fail('a changed shape was accepted'),
      (e) => e,
    );
    assert.ok(refused instanceof OperationError, String(refused));
    assert.equal(refused.code, 'SY004');
  }
  const [kept] =
    await sql`select count(*)::int as n from switchyard.runs where run_id = ${id}::uuid`;
  assert.equal(kept.n, 1, 'a refused recompile deletes nothing');

  // Asked (the variable deno task serve sets), against this local database: recompiled.
  const { logged, logger } = lines();
  const dev = await startWorkerImpl([deploy(v1Changed)], {
    ...base,
    logger,
    env: (n) => n === 'SWITCHYARD_DEVELOPMENT' ? 'true' : undefined,
  });
  await dev.stop();
  assert.equal(logged.length, 1, logged.join('\n'));
  assert.match(
    logged[0],
    /^flow "devShape": its shape changed, recompiled because this is local development/,
  );
  assert.match(logged[0], /earlier runs were deleted/);
  const steps = await sql`select step_slug from switchyard.steps where flow_slug = 'devShape'
    order by step_index`;
  assert.deepEqual(steps.map((s) => s.step_slug), ['a', 'b']);
  const [gone] =
    await sql`select count(*)::int as n from switchyard.runs where flow_slug = 'devShape'`;
  assert.equal(gone.n, 0, "the flow's earlier runs were deleted");
  const [alias] = await sql`select flow_slug from switchyard.aliases where alias = 'dev'`;
  assert.equal(alias.flow_slug, 'devShape', 'the alias still points at the flow');
  const [member] =
    await sql`select alias from switchyard.alias_members where flow_slug = 'devShape'`;
  assert.equal(member.alias, 'dev');
  // A second start verifies: no log line, no deletion.
  const [{ id: again }] = await sql<{ id: string }[]>`
    select switchyard.start_flow('dev', '{"n": 2}'::jsonb) as id`;
  const quiet = lines();
  await (await startWorker([deploy(v1Changed)], {
    ...base,
    development: true,
    logger: quiet.logger,
  }))
    .stop();
  assert.deepEqual(quiet.logged, []);
  const [still] =
    await sql`select count(*)::int as n from switchyard.runs where run_id = ${again}::uuid`;
  assert.equal(still.n, 1);
});

Deno.test('local development needs a request, a local database and no hosted runtime', () => {
  const asked = (n: string) => n === 'SWITCHYARD_DEVELOPMENT' ? 'true' : undefined;
  const local = 'postgresql://postgres:postgres@127.0.0.1:54322/postgres';
  assert.equal(localDevelopment({ env: asked, url: local }), true);
  assert.equal(localDevelopment({ env: () => undefined, url: local }), false);
  assert.equal(localDevelopment({ env: asked, url: local, option: false }), false);
  assert.equal(
    localDevelopment({
      env: asked,
      url: 'postgresql://postgres:x@db.abcdefghijkl.supabase.co:5432/postgres',
    }),
    false,
  );
  assert.equal(
    localDevelopment({ env: (n) => n === 'DENO_DEPLOYMENT_ID' ? 'x' : asked(n), url: local }),
    false,
  );
  assert.equal(localDevelopment({ env: asked, url: 'not a url' }), false);
  for (
    const host of ['localhost', '127.0.0.1', '::1', 'supabase_db_app', 'db', 'host.docker.internal']
  ) {
    assert.equal(isLocalDatabaseHost(host), true, host);
  }
  for (const host of ['10.0.0.5', 'aws-0-eu-central-1.pooler.supabase.com', 'example.com']) {
    assert.equal(isLocalDatabaseHost(host), false, host);
  }
});
