/**
 * The SQL core's refusals (docs/design/errors.md): every error carries its SQLSTATE and
 * a DETAIL that is a JSON object, so callers map by code and read fields, never the message.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, routeFlow } from '../../lib/mod.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

type Detail = Record<string, unknown>;

/** Runs a statement that must be refused; returns its code, parsed detail and message. */
async function refusal(
  query: PromiseLike<unknown>,
): Promise<{ code: string; detail: Detail; message: string; hint?: string }> {
  try {
    await query;
  } catch (e) {
    const err = e as { code?: string; detail?: string; message: string; hint?: string };
    assert.equal(typeof err.detail, 'string', `${err.code} ${err.message}: no detail`);
    const detail: unknown = JSON.parse(err.detail!);
    assert.ok(
      detail !== null && typeof detail === 'object' && !Array.isArray(detail),
      `${err.code} ${err.message}: detail ${err.detail} is not a JSON object`,
    );
    return {
      code: String(err.code),
      detail: detail as Detail,
      message: err.message,
      hint: err.hint,
    };
  }
  return assert.fail('the statement was expected to be refused');
}

const flow = new Flow<{ n: number }>({ slug: 'errs' }).step({ slug: 'a' }, (i) => i.n);
const shape = toPlacement(routeFlow(flow, { queues: { a: 'errs_q' } })).shape;
await sql`select switchyard.ensure_flow(${sql.json(shape as never)}::jsonb)`;

async function registerWorker(functionName: string, id = crypto.randomUUID()) {
  await sql`select switchyard.register_worker(${id}::uuid, 'errs_q', ${functionName},
    array['errs/a'])`;
  return id;
}

Deno.test('SY001: a paused function refuses to register a worker, with the reason in the detail', async () => {
  await sql`select switchyard.register_function('errs-paused', 'errs_q')`;
  await sql`select switchyard.pause_function('errs-paused', 'bad deploy: "quoted"; and more')`;
  const r = await refusal(registerWorker('errs-paused'));
  assert.equal(r.code, 'SY001');
  assert.deepEqual(r.detail, {
    function_name: 'errs-paused',
    reason: 'bad deploy: "quoted"; and more',
  });
  assert.equal(r.message, 'function "errs-paused" is paused: bad deploy: "quoted"; and more');
});

Deno.test('SY002: a disabled function refuses to register a worker', async () => {
  await sql`select switchyard.register_function('errs-disabled', 'errs_q')`;
  await sql`select switchyard.set_function_enabled('errs-disabled', false)`;
  const r = await refusal(registerWorker('errs-disabled'));
  assert.equal(r.code, 'SY002');
  assert.deepEqual(r.detail, { function_name: 'errs-disabled' });
});

Deno.test('SY003: every unknown-function refusal lists the names in detail.function_names', async () => {
  for (
    const query of [
      sql`select switchyard.pause_function('errs-ghost', 'why')`,
      sql`select switchyard.resume_function('errs-ghost')`,
      sql`select switchyard.set_function_enabled('errs-ghost', true)`,
    ]
  ) {
    const r = await refusal(query);
    assert.equal(r.code, 'SY003', r.message);
    assert.deepEqual(r.detail, { function_names: ['errs-ghost'] });
  }
  await sql`select switchyard.register_function('errs-known', 'errs_q')`;
  const r = await refusal(
    sql`select * from switchyard.fence_begin(array['errs-known', 'errs-ghost-b', 'errs-ghost-a'])`,
  );
  assert.equal(r.code, 'SY003');
  assert.deepEqual(r.detail, { function_names: ['errs-ghost-a', 'errs-ghost-b'] });
  const [{ open }] = await sql`select count(*)::int as open from switchyard.fences
    where closed_at is null`;
  assert.equal(open, 0, 'nothing changed');
});

Deno.test('SY004: a changed shape lists the flow and its differences', async () => {
  const changed = toPlacement(
    routeFlow(
      new Flow<{ n: number }>({ slug: 'errs', maxAttempts: 7 }).step({ slug: 'a' }, (i) => i.n),
      { queues: { a: 'errs_other_q' } },
    ),
  ).shape;
  const r = await refusal(sql`select switchyard.ensure_flow(${sql.json(changed as never)}::jsonb)`);
  assert.equal(r.code, 'SY004');
  assert.equal(r.detail.flow_slug, 'errs');
  // Runtime options are not shape (docs/design/testing.md#upgrades-with-work-in-flight): only the
  // queue is named.
  assert.deepEqual(r.detail.differences, ['step "a" queue "errs_q" -> "errs_other_q"']);
});

Deno.test('SY010 / SY011: a second fence names the open one; fence_end without one has {}', async () => {
  await sql`select switchyard.register_function('errs-fenced', 'errs_q')`;
  const [{ fence_id }] = await sql`select distinct fence_id::int
    from switchyard.fence_begin(array['errs-fenced'])`;
  const open = await refusal(sql`select * from switchyard.fence_begin(array['errs-fenced'])`);
  assert.equal(open.code, 'SY010');
  assert.deepEqual(open.detail, { fence_id });
  await sql`select * from switchyard.fence_end()`;
  const none = await refusal(sql`select * from switchyard.fence_end()`);
  assert.equal(none.code, 'SY011');
  assert.deepEqual(none.detail, {});
});

Deno.test('SY020: schedule_keep_alive without pg_cron names the database', async () => {
  const [{ db: name, cron }] = await sql`select current_database() as db,
    exists (select 1 from pg_extension where extname = 'pg_cron') as cron`;
  assert.equal(
    cron,
    false,
    'test databases are clones of a template made from template1, and pg_cron can only be created in cron.database_name',
  );
  const r = await refusal(sql`select switchyard.schedule_keep_alive()`);
  assert.equal(r.code, 'SY020');
  assert.deepEqual(r.detail, { database: name });
});

Deno.test('22023: the rule, the argument and its value (at most 200 characters)', async () => {
  const bad = await refusal(sql`select switchyard.ensure_shared_queue('Bad_Name')`);
  assert.equal(bad.code, '22023');
  assert.deepEqual(bad.detail, {
    rule: 'queue_name_format',
    argument: 'queue_name',
    value: 'Bad_Name',
    explicit: true,
  });
  const reserved = await refusal(sql`select switchyard.ensure_shared_queue('a__b')`);
  assert.equal(reserved.detail.rule, 'queue_name_reserved_separator');

  const long = 'é'.repeat(1000);
  const truncated = await refusal(sql`select switchyard.ensure_shared_queue(${long})`);
  assert.equal(truncated.detail.value, 'é'.repeat(200));
  // The message names the value clipped, with its length (issue 21: no refusal echoes a
  // megabyte).
  assert.ok(
    truncated.message.includes(`"${'é'.repeat(80)}"... (1000 characters)`),
    truncated.message,
  );
  assert.ok(truncated.message.length < 400, 'the message does not echo the whole value');

  const debounce = await refusal(sql`select * from switchyard.keep_alive(debounce_seconds => -1)`);
  assert.deepEqual(debounce.detail, {
    rule: 'integer_min',
    argument: 'debounce_seconds',
    value: '-1',
    min: 0,
  });
  const unknown = await refusal(sql`select switchyard.start_flow('errsNope', '{}'::jsonb)`);
  assert.deepEqual(unknown.detail, {
    rule: 'flow_or_alias_unknown',
    argument: 'flow_or_alias',
    value: 'errsNope',
  });
  const reason = await refusal(sql`select switchyard.pause_function('errs-known', '  ')`);
  assert.deepEqual(reason.detail, { rule: 'reason_missing', argument: 'reason', value: '  ' });
  const slug = await refusal(sql`select switchyard.sync_alias('bad-alias', array['errs'])`);
  assert.deepEqual(slug.detail, {
    rule: 'slug_format',
    argument: 'alias_name',
    value: 'bad-alias',
    kind: 'alias',
  });
});

Deno.test('23505 and 55000: conflicts and object state name the rule and the argument', async () => {
  const plain = toPlacement(new Flow({ slug: 'errsPlain' }).step({ slug: 'a' }, () => 1)).shape;
  await sql`select switchyard.ensure_flow(${sql.json(plain as never)}::jsonb)`;
  const shared = await refusal(sql`select switchyard.ensure_shared_queue('errsplain')`);
  assert.equal(shared.code, '23505');
  assert.deepEqual(shared.detail, {
    rule: 'queue_is_private',
    argument: 'queue_name',
    value: 'errsplain',
    owner_flow: 'errsPlain',
  });

  // An alias target cannot be deleted (55000).
  await sql`select switchyard.sync_alias('errsAlias', array['errs'])`;
  const target = await refusal(sql`select switchyard.delete_flow('errs')`);
  assert.equal(target.code, '55000');
  assert.deepEqual(target.detail, {
    rule: 'flow_is_alias_target',
    argument: 'flow_slug',
    value: 'errs',
    alias: 'errsAlias',
  });

  // Adoption refuses a queue holding messages of no tracked task (55000), listing their ids.
  await sql`select pgmq.create('errs_foreign')`;
  const [{ id }] = await sql`select pgmq.send('errs_foreign', '{}'::jsonb)::int as id`;
  const adopt = await refusal(sql`select switchyard.adopt_queue('errs_foreign')`);
  assert.equal(adopt.code, '55000');
  assert.deepEqual(adopt.detail, {
    rule: 'queue_has_untracked_messages',
    argument: 'pgmq_queue_name',
    value: 'errs_foreign',
    untracked_count: 1,
    message_ids: [id],
  });
});

Deno.test('every refusal goes through switchyard._refuse; every other raise sets a SY code and a detail', async () => {
  const rows = await sql<{ proname: string; src: string }[]>`
    select p.proname, p.prosrc as src from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'switchyard' and p.prosrc ~* 'raise\\s+exception|switchyard\\._refuse\\('`;
  assert.ok(rows.length > 50, `${rows.length} SQL functions refuse`);
  const missing: string[] = [];
  let refusals = 0;
  for (const { proname, src } of rows) {
    if (proname === '_refuse') continue;
    // A raise statement ends at the first `;` that ends a line (messages never do).
    const raises = src.split(/raise\s+exception/i).slice(1).map((rest) =>
      rest.slice(0, rest.search(/;[ \t]*(?:\n|$)/) + 1)
    );
    for (const statement of raises) {
      // The refusals of 22023, 23505, 42501, 55000 and PT429 have one shape, built in one place.
      if (!/^\s*using\s+errcode\s*=\s*'SY\d{3}'/i.test(statement)) {
        missing.push(
          `${proname}: a raise without a SY code (use switchyard._refuse) in ${
            statement.slice(0, 120)
          }`,
        );
      }
      if (!/detail\s*=\s*jsonb_build_object\(/i.test(statement)) {
        missing.push(`${proname}: no detail in ${statement.slice(0, 120)}`);
      }
    }
    for (const call of src.matchAll(/switchyard\._refuse\(\s*([^,]*),/gi)) {
      refusals++;
      if (!/^'(22023|23505|42501|55000|PT429)'$/.test(call[1].trim())) {
        missing.push(
          `${proname}: switchyard._refuse with ${call[1].trim()}: a kit SQLSTATE literal`,
        );
      }
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(refusals > 150, `${refusals} refusals through switchyard._refuse`);
});

Deno.test('switchyard._refuse: the code, the message, rule, argument, value cut to 200, context and hint', async () => {
  const r = await refusal(sql`select switchyard._refuse('55000', 'a_rule', 'an_argument',
    ${'é'.repeat(300)}, 'the message', jsonb_build_object('limit', 7), 'the hint')`);
  assert.equal(r.code, '55000');
  assert.equal(r.message, 'the message');
  assert.deepEqual(r.detail, {
    rule: 'a_rule',
    argument: 'an_argument',
    value: 'é'.repeat(200),
    limit: 7,
  });
  assert.equal(r.hint, 'the hint');
  const plain = await refusal(sql`select switchyard._refuse('22023', 'r', 'a', null, 'm')`);
  assert.equal(plain.code, '22023');
  assert.deepEqual(plain.detail, { rule: 'r', argument: 'a', value: null });
  assert.equal(plain.hint, undefined, 'no hint given, none sent');
  const [{ execute }] = await sql`select has_function_privilege('service_role',
    'switchyard._refuse(text, text, text, text, text, jsonb, text)', 'execute') as execute`;
  assert.equal(execute, false, 'a private helper: no role but the owner runs it');
});

Deno.test('42501: start_user_run starts an alias on the allow-list only, for the signed-in user', async () => {
  // auth.uid() as on Supabase, from the request's JWT claim (test databases have no auth).
  await sql.unsafe(`create schema auth;
    create function auth.uid() returns uuid language sql stable as $$
      select nullif(current_setting('request.jwt.claim.sub', true), '')::uuid $$`);
  const user = crypto.randomUUID();
  const asUser = <T>(query: (tx: typeof sql) => PromiseLike<T>) =>
    sql.begin(async (tx) => {
      await tx`select set_config('request.jwt.claim.sub', ${user}, true)`;
      return await query(tx as unknown as typeof sql);
    });
  const runs = async () =>
    (await sql<{ n: number }[]>`select count(*)::int as n from switchyard.runs`)[0].n;
  const start = (n: number) => (tx: typeof sql) =>
    tx<{ id: string }[]>`select switchyard.start_user_run('errs', ${sql.json({ n })}::jsonb) as id`;
  try {
    const before = await runs();
    const notListed = await refusal(asUser(start(1)));
    assert.equal(notListed.code, '42501');
    assert.deepEqual(notListed.detail, {
      rule: 'alias_not_allowed',
      argument: 'alias',
      value: 'errs',
    });
    assert.equal(await runs(), before, 'nothing started');
    // Listed: started, owned by the user.
    await sql`insert into switchyard.user_start_aliases (alias) values ('errs')`;
    const [{ id }] = await asUser(start(2));
    const [run] = await sql`select owner::text, flow_slug from switchyard.runs
                             where run_id = ${id}::uuid`;
    assert.deepEqual({ ...run }, { owner: user, flow_slug: 'errs' });
    // Taken off the list: refused again.
    await sql`delete from switchyard.user_start_aliases where alias = 'errs'`;
    assert.equal((await refusal(asUser(start(3)))).detail.rule, 'alias_not_allowed');
    assert.equal(await runs(), before + 1);
  } finally {
    await sql.unsafe('drop schema auth cascade');
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
