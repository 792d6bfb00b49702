/**
 * Run events on Supabase (issue 14, docs/design/client.md): in a database laid out as a
 * Supabase project (the roles, an `auth` schema whose `auth.uid()` reads
 * `request.jwt.claim.sub`, the `supabase_realtime` publication) before the migrations run,
 * the events table joins the publication and a policy on `auth.uid()`; nothing is exposed
 * by default; after the README's opt-in grants a signed-in user starts an allowed alias and
 * reads their own run's events and not another user's, and (the signal opt-in) signals the
 * allowed wait steps of their own runs and no one else's (signal_user_run, issue 22).
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow, signalPayload, startWorker } from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { migrate } from '../../lib/sql/migrate.ts';
import { registry } from '../../supabase/functions/_shared/registry.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { allDocBlocks } from '../_helpers/docs.ts';

const name = `sy_rls_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
const admin = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
await admin.unsafe(`create database "${name}"`);
const url = urlFor(name);
const sql = postgres(url, { max: 2, onnotice: () => {}, prepare: false });

/** What a Supabase project has before any migration of ours. */
async function supabaseLayout() {
  // Roles are per cluster: the harness made them already (nologin, as on Supabase).
  for (const role of ['anon', 'authenticated', 'service_role']) {
    await admin.unsafe(
      `do $$ begin create role ${role} nologin noinherit; exception when duplicate_object then null; end $$`,
    );
  }
  await sql.unsafe(`
    create schema auth;
    grant usage on schema auth to anon, authenticated, service_role;
    create function auth.uid() returns uuid language sql stable as $$
      select coalesce(
        nullif(current_setting('request.jwt.claim.sub', true), ''),
        (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
      )::uuid
    $$;
    grant execute on function auth.uid() to anon, authenticated, service_role;
    create publication supabase_realtime;
  `);
}

/** Runs `fn` in a transaction as `role`, signed in as `sub` (what PostgREST does per request). */
function as<T>(
  role: 'anon' | 'authenticated',
  sub: string | null,
  fn: (tx: postgres.TransactionSql) => Promise<T>,
) {
  return sql.begin(async (tx) => {
    await tx.unsafe(`set local role ${role}`);
    await tx`select set_config('request.jwt.claim.sub', ${sub ?? ''}, true)`;
    return await fn(tx);
  }) as Promise<T>;
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; rule?: string }> {
  try {
    await promise;
  } catch (e) {
    const err = e as { code: string; detail?: string };
    const detail = err.detail?.startsWith('{') ? JSON.parse(err.detail) : {};
    return { code: err.code, rule: detail.rule };
  }
  return assert.fail('expected a refusal');
}

Deno.test('migrations on a Supabase layout: publication membership and the owner policy', async () => {
  await supabaseLayout();
  await migrate(url);
  const published = await sql`select schemaname, tablename from pg_publication_tables
    where pubname = 'supabase_realtime'`;
  assert.deepEqual(published.map((r) => `${r.schemaname}.${r.tablename}`), [
    'switchyard.run_events',
  ]);
  const [policy] = await sql`select roles::text[] as roles, cmd, qual from pg_policies
    where schemaname = 'switchyard' and tablename = 'run_events'`;
  assert.deepEqual(policy.roles, ['authenticated']);
  assert.equal(policy.cmd, 'SELECT');
  assert.match(policy.qual, /owner = \( SELECT auth\.uid\(\)/);
  const [{ rls }] = await sql`select relrowsecurity as rls from pg_class
    where oid = 'switchyard.run_events'::regclass`;
  assert.equal(rls, true);
  // Running it again changes nothing.
  const [{ done }] = await sql`select switchyard.expose_run_events() as done`;
  assert.deepEqual(done, []);
});

Deno.test("a published DELETE (prune) carries an event id alone, never another user's run id", async () => {
  // Realtime sends every subscriber of the table a DELETE, row-level security or not, with the
  // old row's replica identity: the primary key (run_id, event_id) by default, so pruning
  // showed every signed-in subscriber other users' run ids (issue 36). The identity is the
  // unique index on event_id instead.
  const [row] = await sql<{ replident: string; columns: string[] }[]>`
    select c.relreplident as replident,
           (select array_agg(a.attname::text order by a.attnum)
              from pg_index i
              join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey)
             where i.indrelid = c.oid and i.indisreplident) as columns
      from pg_class c where c.oid = 'switchyard.run_events'::regclass`;
  assert.deepEqual([row.replident, row.columns], ['i', ['event_id']]);
});

Deno.test('expose_run_events skips with a notice what its role may not do, and never fails', async () => {
  // As a role that owns neither the table nor the publication: both steps are refused to it.
  await sql`drop policy run_events_owner_read on switchyard.run_events`;
  await sql`alter publication supabase_realtime drop table switchyard.run_events`;
  await sql.unsafe(`drop role if exists sy_not_owner; create role sy_not_owner;
    grant usage on schema switchyard to sy_not_owner;
    grant execute on function switchyard.expose_run_events() to sy_not_owner`);
  let exposed: string[] = [];
  const notices: string[] = [];
  const limited = postgres(url, {
    max: 1,
    onnotice: (n) => notices.push(String(n.message)),
  });
  try {
    const done = await limited.begin(async (tx) => {
      await tx`set local role sy_not_owner`;
      const [row] = await tx`select switchyard.expose_run_events() as done`;
      return row.done;
    });
    assert.deepEqual(done, []);
    assert.equal(notices.length, 2, notices.join('\n'));
    assert.match(notices[0], /sy_not_owner may not create the policy run_events_owner_read/);
    assert.match(notices[0], /as the owner of switchyard\.run_events/);
    assert.match(
      notices[1],
      /may not add switchyard\.run_events to the publication supabase_realtime/,
    );
  } finally {
    await limited.end();
    // The owner then exposes it (also when an assertion above failed).
    exposed = (await sql`select switchyard.expose_run_events() as done`)[0].done;
  }
  assert.deepEqual(exposed, ['policy run_events_owner_read', 'publication supabase_realtime']);
  await sql.unsafe(`revoke all on schema switchyard from sy_not_owner;
    revoke execute on function switchyard.expose_run_events() from sy_not_owner;
    drop role sy_not_owner`);
});

const alice = crypto.randomUUID();
const bob = crypto.randomUUID();
const thread = { id: 't1', title: 'Checkout is down', body: 'since 9:00' };

Deno.test('nothing is exposed by default: no reads, no starts for anon or authenticated', async () => {
  // Compile the shipped flows and their aliases (a worker start does), then stop.
  const worker = await startWorker(registry, {
    connectionString: url,
    queueName: 'classify_threads',
  });
  await worker.stop();
  for (const role of ['anon', 'authenticated'] as const) {
    assert.equal(
      (await refusal(as(role, alice, (tx) => tx`select * from switchyard.run_events`))).code,
      '42501',
    );
    assert.equal(
      (await refusal(
        as(
          role,
          alice,
          (tx) =>
            tx`select switchyard.start_user_run('communityThreads', ${tx.json(thread)}::jsonb)`,
        ),
      )).code,
      '42501',
    );
    assert.equal(
      (await refusal(
        as(
          role,
          alice,
          (tx) => tx`select switchyard.start_flow('communityThreads', ${tx.json(thread)}::jsonb)`,
        ),
      )).code,
      '42501',
    );
  }
});

/** The `sql` blocks of the user docs (README.md, docs/guide/*.md), in order. */
const docsSql = (): string[] =>
  allDocBlocks().filter((b) => b.lang === 'sql').map((b) => b.body + '\n');

Deno.test("after the client guide's opt-in a user starts an allowed alias and sees only their own run's events", async () => {
  const optIn = docsSql()
    .find((block) => block.includes('user_start_aliases'));
  assert.ok(optIn, 'the client guide has the opt-in block');
  await sql.unsafe(optIn);

  const aliceRun = await as('authenticated', alice, async (tx) =>
    (await tx<{ id: string }[]>`
      select switchyard.start_user_run('communityThreads', ${tx.json(thread)}::jsonb) as id`)[0]
      .id);
  const bobRun = await as('authenticated', bob, async (tx) =>
    (await tx<{ id: string }[]>`
      select switchyard.start_user_run('communityThreads', ${tx.json(thread)}::jsonb) as id`)[0]
      .id);
  // A trusted server starts a run for alice with the client.
  const client = createClient(registry, { connectionString: url });
  const serverRun = await client.start('communityThreads', thread, { owner: alice });
  await client.close();

  const visible = (sub: string | null) =>
    as(
      'authenticated',
      sub,
      (tx) =>
        tx<{ run_id: string; step_slug: string | null; event: string }[]>`
        select run_id, step_slug, event from switchyard.run_events order by event_id`,
    );
  const aliceSees = await visible(alice);
  assert.deepEqual(
    [...new Set(aliceSees.map((e) => e.run_id))].sort(),
    [aliceRun, serverRun.runId].sort(),
  );
  assert.deepEqual(
    aliceSees.filter((e) => e.run_id === aliceRun).map((e) => `${e.step_slug ?? 'run'} ${e.event}`),
    ['run started', 'classify started'],
  );
  const bobSees = await visible(bob);
  assert.deepEqual([...new Set(bobSees.map((e) => e.run_id))], [bobRun]);
  assert.equal((await visible(crypto.randomUUID())).length, 0);
  assert.equal((await visible(null)).length, 0);
  // The run rows themselves stay private.
  assert.equal(
    (await refusal(as('authenticated', alice, (tx) => tx`select * from switchyard.runs`))).code,
    '42501',
  );
  const [owner] = await sql`select owner from switchyard.runs where run_id = ${aliceRun}`;
  assert.equal(owner.owner, alice);

  // Refusals: no signed-in user; an alias that is not allowed; alice's run id in bob's start
  // (with another input: the refusal names the owner, so nothing of alice's input shows).
  const noUser = await refusal(
    as(
      'authenticated',
      null,
      (tx) => tx`select switchyard.start_user_run('communityThreads', ${tx.json(thread)}::jsonb)`,
    ),
  );
  assert.deepEqual(noUser, { code: '42501', rule: 'not_signed_in' });
  const notAllowed = await refusal(
    as(
      'authenticated',
      alice,
      (tx) => tx`select switchyard.start_user_run('supportTickets', '{}'::jsonb)`,
    ),
  );
  assert.deepEqual(notAllowed, { code: '42501', rule: 'alias_not_allowed' });
  const stolen = await refusal(
    as(
      'authenticated',
      bob,
      (tx) =>
        tx`select switchyard.start_user_run('communityThreads', ${
          tx.json({ ...thread, id: 'b' })
        }::jsonb,
          ${aliceRun}::uuid)`,
    ),
  );
  assert.deepEqual(stolen, { code: '23505', rule: 'run_id_other_owner' });
  // Still no direct start_flow, and nothing for anon.
  assert.equal(
    (await refusal(
      as(
        'authenticated',
        alice,
        (tx) => tx`select switchyard.start_flow('communityThreads', ${tx.json(thread)}::jsonb)`,
      ),
    )).code,
    '42501',
  );
  assert.equal(
    (await refusal(as('anon', alice, (tx) => tx`select * from switchyard.run_events`))).code,
    '42501',
  );
});

Deno.test("after the waits guide's signal opt-in a user signals an allowed wait step of their own run only", async () => {
  const flow = new Flow<{ title: string }>({ slug: 'approveUserV1' })
    .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean }>() })
    .wait({ slug: 'legal' });
  await sql`select switchyard.ensure_flow(${
    sql.json(toPlacement(defineDeployedFlow(flow, { alias: 'approveUser' })).shape as never)
  }::jsonb)`;
  await sql`select switchyard.activate_alias('approveUser', 'approveUserV1')`;
  const start = async (owner: string) =>
    (await sql<{ id: string }[]>`select switchyard.start_flow('approveUser',
      '{"title": "t"}'::jsonb, null, ${owner}::uuid) as id`)[0].id;
  const aliceRun = await start(alice);
  const bobRun = await start(bob);
  const signal = (
    role: 'anon' | 'authenticated',
    sub: string | null,
    runId: string,
    step: string,
    key: string | null = null,
  ) =>
    as(
      role,
      sub,
      async (tx) =>
        (await tx<{ r: string }[]>`select switchyard.signal_user_run(${runId}::uuid, ${step},
        '{"approved": true}'::jsonb, ${key}) as r`)[0].r,
    );
  const signals = async () =>
    (await sql<{ n: number }[]>`select count(*)::int as n from switchyard.run_signals`)[0].n;

  // Before the opt-in: not callable by anon or authenticated.
  for (const role of ['anon', 'authenticated'] as const) {
    assert.equal((await refusal(signal(role, alice, aliceRun, 'approval'))).code, '42501');
  }
  const optIn = docsSql()
    .find((block) => block.includes('user_signal_steps'));
  assert.ok(optIn, 'the waits guide has the signal opt-in block');
  await sql.unsafe(optIn.replaceAll("'myFlow'", "'approveUser'"));

  // Refused with the rule, changing nothing: no user; another user's run; an unknown run
  // (alike, so ids of other users' runs are not revealed); a step not listed; anon.
  assert.deepEqual(await refusal(signal('authenticated', null, aliceRun, 'approval')), {
    code: '42501',
    rule: 'not_signed_in',
  });
  assert.deepEqual(await refusal(signal('authenticated', bob, aliceRun, 'approval')), {
    code: '42501',
    rule: 'run_not_owned',
  });
  assert.deepEqual(await refusal(signal('authenticated', bob, crypto.randomUUID(), 'approval')), {
    code: '42501',
    rule: 'run_not_owned',
  });
  assert.deepEqual(await refusal(signal('authenticated', alice, aliceRun, 'legal')), {
    code: '42501',
    rule: 'step_not_allowed',
  });
  assert.equal((await refusal(signal('anon', alice, aliceRun, 'approval'))).code, '42501');
  assert.equal(await signals(), 0);
  // Still no direct signal_run for a user.
  assert.equal(
    (await refusal(
      as(
        'authenticated',
        alice,
        (tx) => tx`select switchyard.signal_run(${aliceRun}::uuid, 'approval', '{}'::jsonb)`,
      ),
    )).code,
    '42501',
  );

  // The owner signals: delivered, the payload is the step's output; the same key is a no-op;
  // signal_run's own rules still hold (a second signal under another key).
  assert.equal(await signal('authenticated', alice, aliceRun, 'approval', 'k1'), 'delivered');
  assert.equal(await signal('authenticated', alice, aliceRun, 'approval', 'k1'), 'duplicate');
  assert.deepEqual(await refusal(signal('authenticated', alice, aliceRun, 'approval', 'k2')), {
    code: '55000',
    rule: 'step_already_signalled',
  });
  const states = await sql`select run_id, step_slug, status, output from switchyard.step_states
    where run_id in (${aliceRun}, ${bobRun}) order by run_id = ${aliceRun} desc, step_slug`;
  assert.deepEqual(states.map((r) => [r.run_id === aliceRun, r.step_slug, r.status, r.output]), [
    [true, 'approval', 'completed', { approved: true }],
    [true, 'legal', 'started', null],
    [false, 'approval', 'started', null],
    [false, 'legal', 'started', null],
  ]);
  // Bob's own run is his to signal.
  assert.equal(await signal('authenticated', bob, bobRun, 'approval'), 'delivered');
});

Deno.test("a browser's signal payload is checked against the step's declared payload_schema", async () => {
  const flow = new Flow<{ title: string }>({ slug: 'approveSchemaV1' })
    .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean; by: string }>() });
  await sql`select switchyard.ensure_flow(${
    sql.json(toPlacement(defineDeployedFlow(flow, { alias: 'approveSchema' })).shape as never)
  }::jsonb)`;
  await sql`select switchyard.activate_alias('approveSchema', 'approveSchemaV1')`;
  // The declared type, for the signals of signed-in users (the README's form).
  const schema = {
    type: 'object',
    required: ['approved', 'by'],
    properties: {
      approved: { type: 'boolean' },
      by: { type: 'string', maxLength: 40 },
      tags: { type: 'array', items: { enum: ['urgent', 'legal'] }, maxItems: 2 },
    },
    additionalProperties: false,
  };
  await sql`insert into switchyard.user_signal_steps (alias, step_slug, payload_schema)
            values ('approveSchema', 'approval', ${sql.json(schema)}::jsonb)`;
  // A schema with a keyword the check does not know is refused (it would check nothing).
  const typo = await refusal(
    sql`insert into switchyard.user_signal_steps (alias, step_slug, payload_schema)
        values ('approveSchema', 'other', '{"type": "object", "require": ["x"]}'::jsonb)`,
  );
  assert.deepEqual(typo, { code: '22023', rule: 'payload_schema_invalid' });
  const runId = (await sql<{ id: string }[]>`select switchyard.start_flow('approveSchema',
    '{"title": "t"}'::jsonb, null, ${alice}::uuid) as id`)[0].id;
  const signal = (payload: unknown) =>
    as(
      'authenticated',
      alice,
      async (tx) =>
        (await tx<{ r: string }[]>`select switchyard.signal_user_run(${runId}::uuid, 'approval',
        ${tx.json(payload as never)}::jsonb) as r`)[0].r,
    );
  const bad: [unknown, string][] = [
    ['yes', 'payload is a string, not object'],
    [{ approved: 'yes', by: 'ann' }, 'payload.approved is a string, not boolean'],
    [{ approved: true }, 'payload lacks the required property "by"'],
    [{ approved: true, by: 'ann', admin: true }, 'payload has the property "admin"'],
    [{ approved: true, by: 'x'.repeat(41) }, 'payload.by is 41 characters long'],
    [{ approved: true, by: 'ann', tags: ['urgent', 'other'] }, 'payload.tags[1] is not one of'],
    [{ approved: true, by: 'ann', tags: ['urgent', 'legal', 'urgent'] }, 'payload.tags has 3'],
    [null, 'payload is a null, not object'],
  ];
  for (const [payload, message] of bad) {
    const e = await signal(payload).then(
      () => null,
      (e) => e as { code: string; message: string; detail: string },
    );
    assert.ok(e, `refused: ${JSON.stringify(payload)}`);
    assert.equal(e.code, '22023');
    assert.equal(JSON.parse(e.detail).rule, 'payload_invalid');
    assert.ok(e.message.includes(message), `"${e.message}" lacks "${message}"`);
  }
  // None used up the step's one signal: the declared shape is delivered.
  assert.equal(await signal({ approved: true, by: 'ann', tags: ['legal'] }), 'delivered');
});

Deno.test("after the rerun guide's opt-in a user reruns their own ended runs of an allowed alias only", async () => {
  const rerunFlow = new Flow<{ n: number }>({ slug: 'rerunUserV1' })
    .step({ slug: 'a' }, (input) => input.n)
    .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a + 1);
  const otherFlow = new Flow<{ n: number }>({ slug: 'rerunOtherV1' })
    .step({ slug: 'a' }, (input) => input.n);
  for (const [flow, alias] of [[rerunFlow, 'rerunUser'], [otherFlow, 'rerunOther']] as const) {
    await sql`select switchyard.ensure_flow(${
      sql.json(toPlacement(defineDeployedFlow(flow, { alias })).shape as never)
    }::jsonb)`;
    await sql`select switchyard.activate_alias(${alias}, ${flow.slug})`;
  }
  // No worker: each run is cancelled (ended) so that it may be rerun.
  const ended = async (alias: string, owner: string) => {
    const [{ id }] = await sql<{ id: string }[]>`select switchyard.start_flow(${alias},
      '{"n": 1}'::jsonb, null, ${owner}::uuid) as id`;
    await sql`select switchyard.cancel_run(${id}::uuid, 'ended for the test')`;
    return id;
  };
  const aliceRun = await ended('rerunUser', alice);
  const bobRun = await ended('rerunUser', bob);
  const aliceOther = await ended('rerunOther', alice);
  const rerun = (
    sub: string | null,
    runId: string,
    step = 'a',
    role: 'anon' | 'authenticated' = 'authenticated',
  ) =>
    as(
      role,
      sub,
      async (tx) =>
        (await tx<{ n: number }[]>`select switchyard.rerun_user_run(${runId}::uuid, ${step},
        '{"n": 5}'::jsonb) as n`)[0].n,
    );
  const state = async () =>
    await sql`select run_id, status, input, (select count(*)::int from switchyard.run_events e
                where e.run_id = r.run_id) as events
                from switchyard.runs r where run_id in (${aliceRun}, ${bobRun}, ${aliceOther})
               order by run_id`;

  // Before the opt-in: not callable.
  assert.equal((await refusal(rerun(alice, aliceRun))).code, '42501');
  const optIn = docsSql()
    .find((block) => block.includes('user_rerun_aliases'));
  assert.ok(optIn, 'the rerun guide has the rerun opt-in block');
  await sql.unsafe(optIn.replaceAll("'myFlow'", "'rerunUser'"));

  // Refused with the rule, changing nothing: no user; another user's run and an unknown run,
  // alike; a run of an alias not listed; anon; a step the flow lacks; rerun_run itself.
  const before = await state();
  assert.deepEqual(await refusal(rerun(null, aliceRun)), { code: '42501', rule: 'not_signed_in' });
  assert.deepEqual(await refusal(rerun(bob, aliceRun)), { code: '42501', rule: 'run_not_owned' });
  assert.deepEqual(await refusal(rerun(bob, crypto.randomUUID())), {
    code: '42501',
    rule: 'run_not_owned',
  });
  assert.deepEqual(await refusal(rerun(alice, aliceOther)), {
    code: '42501',
    rule: 'alias_not_allowed',
  });
  assert.equal((await refusal(rerun(alice, aliceRun, 'a', 'anon'))).code, '42501');
  assert.deepEqual(await refusal(rerun(alice, aliceRun, 'nope')), {
    code: '22023',
    rule: 'step_unknown',
  });
  assert.equal(
    (await refusal(
      as('authenticated', alice, (tx) => tx`select switchyard.rerun_run(${aliceRun}::uuid, 'a')`),
    )).code,
    '42501',
  );
  assert.deepEqual(await state(), before, 'no refusal changed anything');

  // The owner reruns: both steps run again with the patched input; the event names the user.
  assert.equal(await rerun(alice, aliceRun), 2);
  const [run] = await sql`select status, input from switchyard.runs where run_id = ${aliceRun}`;
  assert.deepEqual({ ...run }, { status: 'started', input: { n: 5 } });
  const [note] = await sql`select data from switchyard.run_events
                            where run_id = ${aliceRun} and event = 'rerun'`;
  assert.equal(note.data.by, `user ${alice}`);
  // Started again, it is rerun_run's to refuse until it ends.
  assert.deepEqual(await refusal(rerun(alice, aliceRun)), { code: '55000', rule: 'run_not_ended' });
  // Bob's own run is his to rerun; Alice's other alias stays closed.
  assert.equal(await rerun(bob, bobRun, 'b'), 2, 'a never ran: it runs too');
  const [other] = await sql`select status from switchyard.runs where run_id = ${aliceOther}`;
  assert.equal(other.status, 'cancelled');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await sql.end();
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.end();
});
