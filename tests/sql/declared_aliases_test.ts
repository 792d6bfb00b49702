/**
 * Declared aliases (docs/design/versions.md): `switchyard.declare_alias`, what a compiled
 * migration calls, records what the registry declares and moves the alias unless that strands a
 * retired version's started runs or hands a live worker a version it lacks; the first worker with
 * the declared registry makes a held-back move; `alias_status` says where each alias stands and
 * why; never backwards, and an operator's later activation stands.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { CoverageError } from '../../lib/errors.ts';
import {
  defineDeployedFlow,
  Flow,
  routeFlow,
  startWorker,
  type Worker,
  type WorkerTarget,
} from '../../lib/mod.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const { sql } = db;

/** Version `n` of alias `alias`, one step on `queue`. */
function version(alias: string, n: number, queue: string) {
  const flow = new Flow<{ id: number }>({ slug: `${alias}V${n}` })
    .step({ slug: 'work' }, (input) => `${alias}V${n}:${input.id}`);
  return defineDeployedFlow(routeFlow(flow, { queues: { work: queue } }), { alias });
}

async function compile(...targets: WorkerTarget[]) {
  for (const t of targets) {
    await sql`select switchyard.ensure_flow(${sql.json(toPlacement(t).shape as never)}::jsonb)`;
  }
}

const declare = async (alias: string, versions: string[]) =>
  (await sql<{ r: string }[]>`select switchyard.declare_alias(${alias}, ${versions}) as r`)[0].r;
const target = async (alias: string) =>
  (await sql<{ flow_slug: string }[]>`select flow_slug from switchyard.aliases
    where alias = ${alias}`)[0]?.flow_slug;
const status = async (alias: string) => {
  const [row] = await sql`select flow_slug, state, reason from switchyard.alias_status()
    where alias = ${alias}`;
  return { ...row };
};

Deno.test('declarations replayed on an empty database leave the alias on the registry target', async () => {
  const [v1, v2, v3] = [1, 2, 3].map((n) => version('replay', n, 'replay_q'));
  await compile(v1);
  assert.equal(await declare('replay', ['replayV1']), 'activated');
  await compile(v2);
  assert.equal(await declare('replay', ['replayV1', 'replayV2']), 'activated');
  assert.equal(await declare('replay', ['replayV2']), 'current', 'V1 retired');
  await compile(v3);
  assert.equal(await declare('replay', ['replayV2', 'replayV3']), 'activated');
  assert.equal(await target('replay'), 'replayV3');
  const moves = await sql`select flow_slug, previous_flow_slug, source
    from switchyard.alias_activations where alias = 'replay' order by activation_id`;
  assert.deepEqual(moves.map((m) => [m.flow_slug, m.previous_flow_slug, m.source]), [
    ['replayV1', null, 'migration'],
    ['replayV2', 'replayV1', 'migration'],
    ['replayV3', 'replayV2', 'migration'],
  ]);
  assert.deepEqual(await status('replay'), {
    flow_slug: 'replayV3',
    state: 'current',
    reason: null,
  });
});

Deno.test('a retired version that is drained is left at push; one with started runs keeps its alias until listed again', async () => {
  const [v1, v2, v3] = [1, 2, 3].map((n) => version('retire', n, 'retire_q'));
  await compile(v1, v2, v3);
  // An old database: the alias still on V1 (a where-not-exists migration, or a backup).
  assert.equal(await declare('retire', ['retireV1']), 'activated');
  const [{ run_id: open }] =
    await sql`select switchyard.start_flow('retire', '{"id": 1}') as run_id`;
  assert.equal(
    await declare('retire', ['retireV2', 'retireV3']),
    'deferred: retireV1, which the registry no longer lists, has 1 started run(s)',
  );
  assert.equal(await target('retire'), 'retireV1');
  assert.deepEqual(await status('retire'), {
    flow_slug: 'retireV1',
    state: 'pending',
    reason: 'retireV1, which the registry no longer lists, has 1 started run(s)',
  });
  // The worker of the declared registry refuses, naming the fix.
  const refusal = await startWorker([v2, v3], {
    queueName: 'retire_q',
    connectionString: db.url,
    ...FAST,
  }).then(() => assert.fail('started'), (e) => e);
  assert.ok(refusal instanceof CoverageError);
  assert.deepEqual(refusal.advice, [
    'retireV1 has 1 started run(s) and this registry lacks it: list it in ' +
    'supabase/functions/_shared/registry.ts again (before the newer versions of alias retire), ' +
    'run npx switchyard compile and deploy, and retire it only once `npx switchyard drain` ' +
    'shows it drained; or cancel those runs (npx switchyard cancel <run>)',
  ]);
  assert.equal(await target('retire'), 'retireV1', 'the refused worker moved nothing');
  // Listed again: the alias moves to the target; its runs finish on V1.
  assert.equal(await declare('retire', ['retireV1', 'retireV2', 'retireV3']), 'activated');
  const w = await startWorker([v1, v2, v3], {
    queueName: 'retire_q',
    connectionString: db.url,
    ...FAST,
  });
  try {
    const [{ run_id: fresh }] =
      await sql`select switchyard.start_flow('retire', '{"id": 2}') as run_id`;
    for (const [run, output] of [[open, 'retireV1:1'], [fresh, 'retireV3:2']]) {
      for (let i = 0; i < 200; i++) {
        const [r] = await sql`select status from switchyard.runs where run_id = ${run}`;
        if (r.status === 'completed') break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const [r] = await sql`select status, output from switchyard.runs where run_id = ${run}`;
      assert.deepEqual({ ...r }, { status: 'completed', output: { work: output } });
    }
  } finally {
    await w.stop();
  }
  // Drained: retiring it again moves nothing and is current.
  assert.equal(await declare('retire', ['retireV2', 'retireV3']), 'current');

  // A drained retired target (no started run) is left at push.
  const [d1, d2] = [1, 2].map((n) => version('drained', n, 'retire_q'));
  await compile(d1, d2);
  assert.equal(await declare('drained', ['drainedV1']), 'activated');
  assert.equal(await declare('drained', ['drainedV2']), 'activated');
  assert.equal(await target('drained'), 'drainedV2');
});

Deno.test('a live worker lacking the target holds the move back; the first worker with the declared registry makes it', async () => {
  const [v1, v2] = [1, 2].map((n) => version('live', n, 'live_q'));
  await compile(v1, v2);
  assert.equal(await declare('live', ['liveV1']), 'activated');
  let old: Worker | null = await startWorker([v1], {
    queueName: 'live_q',
    connectionString: db.url,
    ...FAST,
  });
  try {
    // Even V1 retired and drained: the live V1 worker must not be handed V2's tasks.
    assert.equal(
      await declare('live', ['liveV2']),
      'deferred: live workers lack liveV2: live-q-worker (queue live_q)',
    );
    assert.equal(await target('live'), 'liveV1');
    // A live worker that has the target holds nothing back.
    const [o1, o2] = [1, 2].map((n) => version('other', n, 'live_q'));
    await compile(o1, o2);
    assert.equal(await declare('other', ['otherV1']), 'activated');
    await old.stop();
    old = await startWorker([v1, o1, o2], {
      queueName: 'live_q',
      connectionString: db.url,
      ...FAST,
    });
    await sql`select switchyard.activate_alias('other', 'otherV1')`;
    assert.equal(await declare('other', ['otherV1', 'otherV2']), 'activated');
    assert.equal(await target('other'), 'otherV2');
    await old.stop();
    old = null;
    assert.match((await status('live')).reason, /^nothing holds it back any more: the first/);
    // The new registry's worker starts (V1 drained) and moves it.
    const w = await startWorker([v2, o1, o2], {
      queueName: 'live_q',
      connectionString: db.url,
      ...FAST,
    });
    await w.stop();
    assert.equal(await target('live'), 'liveV2');
    const [last] = await sql`select source, previous_flow_slug from switchyard.alias_activations
      where alias = 'live' order by activation_id desc limit 1`;
    assert.deepEqual({ ...last }, { source: 'worker', previous_flow_slug: 'liveV1' });
  } finally {
    await old?.stop();
  }
});

Deno.test('never backwards: an older registry leaves a declared alias alone, and an operator activation after the declaration stands', async () => {
  const [v1, v2, v3] = [1, 2, 3].map((n) => version('back', n, 'back_q'));
  await compile(v1, v2, v3);
  assert.equal(await declare('back', ['backV1', 'backV2', 'backV3']), 'activated');
  // A worker of an older registry: the alias stays, coverage refuses it.
  const old = await startWorker([v1, v2], {
    queueName: 'back_q',
    connectionString: db.url,
    ...FAST,
  }).then(() => assert.fail('started'), (e) => e);
  assert.ok(old instanceof CoverageError);
  assert.deepEqual(old.advice, [
    "alias back points at backV3, the version the project's compiled registry declares, which " +
    'this registry lacks: this function runs an older registry; deploy it with the current one ' +
    '(supabase functions deploy)',
  ]);
  assert.equal(await target('back'), 'backV3');
  // An operator rolls back to V1; the declared registry's worker [V2, V3] does not undo it.
  await sql`select switchyard.activate_alias('back', 'backV1')`;
  const refused = await startWorker([v2, v3], {
    queueName: 'back_q',
    connectionString: db.url,
    ...FAST,
  }).then(() => assert.fail('started'), (e) => e);
  assert.ok(refused instanceof CoverageError);
  // The refusal names the exact command that moves the alias to the registry's version.
  assert.deepEqual(refused.advice, [
    'alias back points at backV1, which this registry lacks and which has no started run: ' +
    "move the alias to the registry's version with select switchyard.activate_alias('back', " +
    "'backV3') (or list backV1 in the registry again)",
  ]);
  assert.match(refused.message, /select switchyard\.activate_alias\('back', 'backV3'\)/);
  assert.equal(await target('back'), 'backV1');
  const st = await status('back');
  assert.equal(st.state, 'pending');
  assert.equal(
    st.reason,
    'activated on backV1 by operator after the declaration: it stays until the next ' +
      "declaration, or select switchyard.activate_alias('back', 'backV3')",
  );
  // The operator's command from the refusal, then the worker starts.
  await sql`select switchyard.activate_alias('back', 'backV3')`;
  const w = await startWorker([v2, v3], { queueName: 'back_q', connectionString: db.url, ...FAST });
  await w.stop();
  assert.equal((await status('back')).state, 'current');
});

Deno.test('declare_alias refuses hostile input with the rule and changes nothing', async () => {
  const [h1] = [1].map((n) => version('hostile', n, 'hostile_q'));
  const [x1] = [1].map((n) => version('xalias', n, 'hostile_q'));
  await compile(h1, x1);
  await declare('xalias', ['xaliasV1']);
  const cases: [string, unknown, string[] | null, string, string][] = [
    ['null versions', 'hostile', null, '22023', 'versions_missing'],
    ['no versions', 'hostile', [], '22023', 'versions_missing'],
    [
      'a null version',
      'hostile',
      ['hostileV1', null as unknown as string],
      '22023',
      'version_null',
    ],
    ['an uncompiled version', 'hostile', ['hostileV9'], '22023', 'flow_not_compiled'],
    ["another alias's version", 'hostile', ['xaliasV1'], '23505', 'flow_in_other_alias'],
    ['a case collision', 'XALIAS', ['hostileV1'], '23505', 'alias_case_collision'],
    ['an invalid alias', "hostile'; drop table x; --", ['hostileV1'], '22023', 'slug_format'],
    ['a null alias', null, ['hostileV1'], '22023', 'slug_format'],
    ['an alias over 47 characters', 'h'.repeat(48), ['hostileV1'], '22023', 'slug_format'],
    ['a version with a quote', 'hostile', ["hostileV1'); --"], '22023', 'flow_not_compiled'],
  ];
  let hostile = 0;
  for (const [what, alias, versions, code, rule] of cases) {
    hostile++;
    const e = await sql`select switchyard.declare_alias(${alias as string}, ${versions}::text[])`
      .then(() => assert.fail(`${what} was accepted`), (e) => e);
    assert.equal(e.code, code, `${what}: ${e.message}`);
    if (rule !== 'slug_format') assert.equal(JSON.parse(e.detail).rule, rule, what);
  }
  assert.equal(hostile, 10);
  const [n] = await sql`select
    (select count(*)::int from switchyard.aliases where lower(alias) like 'hostile%') as aliases,
    (select count(*)::int from switchyard.alias_declarations where alias ilike 'hostile%') as declared`;
  assert.deepEqual({ ...n }, { aliases: 0, declared: 0 });
});

Deno.test.afterAll(async () => {
  await db.close();
});
