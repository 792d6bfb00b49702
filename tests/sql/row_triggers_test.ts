/**
 * Row triggers (issue 43, docs/design/ingestion.md): `switchyard.declare_row_trigger` and its
 * TypeScript form. Writes to an app table start runs in the writer's transaction (a rolled back
 * write starts nothing), the writer needs no privilege on schema switchyard, input columns,
 * expressions, conditions, keys and events do what they say, bad declarations are refused with
 * the rule and create nothing, and 10,000 inserts from 8 connections at once start 10,000 runs,
 * one per row. Real PostgreSQL, real connections.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import {
  declareRowTrigger,
  listRowTriggers,
  removeRowTrigger,
  rowTriggerMigration,
} from '../../lib/ops.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { deno } from '../_helpers/process.ts';

const db = await createTestDatabase();

const flow = new Flow<Record<string, unknown>>({ slug: 'rowStartV1' }).step(
  { slug: 'a' },
  () => 1,
);
const deployed = defineDeployedFlow(flow, { alias: 'row_start' });
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(deployed).shape as never)
}::jsonb)`;
await db.sql`select switchyard.sync_alias('row_start', array['rowStartV1'])`;

/** The inputs of the runs of the alias, oldest first. */
async function inputs(): Promise<unknown[]> {
  const rows = await db.sql<{ input: unknown }[]>`
    select input from switchyard.runs where flow_slug = 'rowStartV1'
     order by started_at, run_id`;
  return rows.map((r) => r.input);
}

async function clearRuns() {
  await db.sql`delete from switchyard.runs where flow_slug = 'rowStartV1'`;
  await db.sql`delete from switchyard.start_keys where started_as = 'row_start'`;
}

/** What a declaration creates: its rows, triggers on public tables and generated functions. */
async function footprint() {
  const [f] = await db.sql<{ declarations: number; triggers: number; functions: number }[]>`
    select (select count(*)::int from switchyard.row_triggers) as declarations,
           (select count(*)::int from pg_trigger where tgname like 'switchyard\_%') as triggers,
           (select count(*)::int from pg_proc where pronamespace = 'switchyard'::regnamespace
               and (proname like '\_row\_start\_%' or proname like '\_row\_trigger\_%')
               and proname not in ('_row_trigger_start', '_row_trigger_key', '_row_trigger_json'))
             as functions`;
  return { ...f };
}

Deno.test('an insert starts its run in the writer transaction; a rolled back insert starts nothing', async () => {
  await db.sql`create table public.signups (id bigint primary key, email text not null,
                                            plan text not null default 'free')`;
  const declared = await declareRowTrigger(db.sql, {
    name: 'new_signup',
    table: 'signups',
    alias: 'row_start',
    inputColumns: ['id', 'email'],
  });
  assert.equal(declared.table, 'public.signups');
  assert.deepEqual(declared.events, ['insert']);
  assert.equal(declared.installed, true);

  await db.sql`insert into public.signups (id, email) values (1, 'ada@example.com')`;
  assert.deepEqual(await inputs(), [{ id: 1, email: 'ada@example.com' }]);

  // The run exists inside the writer's transaction, and goes with its rollback.
  await db.sql.begin(async (tx) => {
    await tx`insert into public.signups (id, email) values (2, 'bob@example.com')`;
    const [{ n }] = await tx<{ n: number }[]>`
      select count(*)::int as n from switchyard.runs where input ->> 'email' = 'bob@example.com'`;
    assert.equal(n, 1, 'the run is started in the same transaction');
    throw new Error('roll back');
  }).catch((e) => assert.match(String(e), /roll back/));
  assert.deepEqual(await inputs(), [{ id: 1, email: 'ada@example.com' }]);
  const [{ messages }] = await db.sql<{ messages: number }[]>`
    select count(*)::int as messages from switchyard.step_tasks t
      join switchyard.runs r using (run_id) where r.flow_slug = 'rowStartV1'`;
  assert.equal(messages, 1, 'one task: the rolled back start left none');

  // An update is not declared: it starts nothing.
  await db.sql`update public.signups set plan = 'pro' where id = 1`;
  assert.equal((await inputs()).length, 1);

  const [listed] = await listRowTriggers(db.sql);
  assert.equal(listed.name, 'new_signup');
  assert.deepEqual(listed.inputColumns, ['id', 'email']);
  assert.equal(listed.backfill, null);

  assert.equal(await removeRowTrigger(db.sql, 'new_signup'), true);
  assert.equal(await removeRowTrigger(db.sql, 'new_signup'), false, 'removing twice is a no-op');
  assert.deepEqual(await footprint(), { declarations: 0, triggers: 0, functions: 0 });
  await db.sql`insert into public.signups (id, email) values (3, 'cy@example.com')`;
  assert.equal((await inputs()).length, 1, 'a removed declaration starts nothing');
  await db.sql`drop table public.signups`;
  await clearRuns();
});

Deno.test('a writer with no privilege on schema switchyard starts runs through the trigger', async () => {
  await db.sql`create table public.orders (id bigint primary key, total numeric not null)`;
  await declareRowTrigger(db.sql, {
    name: 'new_order',
    table: 'public.orders',
    alias: 'row_start',
  });
  const role = `sy_app_writer_${crypto.randomUUID().slice(0, 8)}`;
  await db.sql.unsafe(`create role ${role} login password 'writer'`);
  await db.sql.unsafe(`grant usage on schema public to ${role}`);
  await db.sql.unsafe(`grant insert, select on public.orders to ${role}`);
  const url = new URL(db.url);
  url.username = role;
  url.password = 'writer';
  const writer = postgres(url.toString(), { max: 1, onnotice: () => {}, prepare: false });
  try {
    const [{ usage }] = await writer<{ usage: boolean }[]>`
      select has_schema_privilege('switchyard', 'USAGE') as usage`;
    assert.equal(usage, false, 'the writer has no usage on schema switchyard');
    await assert.rejects(
      writer`select switchyard.start_flow('row_start', '{}'::jsonb)`,
      /permission denied for schema switchyard/,
    );
    await writer`insert into public.orders values (7, 12.5)`;
    assert.deepEqual(await inputs(), [{ id: 7, total: 12.5 }], 'the whole row is the input');
    // Nor may the writer declare or remove a trigger.
    await assert.rejects(
      writer`select switchyard.declare_row_trigger('x', 'public.orders', 'row_start')`,
      /permission denied for schema switchyard/,
    );
  } finally {
    await writer.end({ timeout: 5 });
  }
  // A role that may call the function but not create in schema switchyard (service_role on
  // Supabase may execute the API) is refused, creating nothing: with EXECUTE on the declaration
  // alone by PostgreSQL on the first helper; with EXECUTE on every function, by the rule.
  await db.sql.unsafe(`grant usage on schema switchyard to ${role}`);
  await db.sql.unsafe(
    `grant execute on function switchyard.declare_row_trigger(text, text, text, text[], text[], ` +
      `text, text, text, text, int, int, int, boolean, text) to ${role}`,
  );
  const user = postgres(url.toString(), { max: 1, onnotice: () => {}, prepare: false });
  try {
    const attempt = () =>
      user`select switchyard.declare_row_trigger('x', 'public.orders', 'row_start')`
        .then(() => assert.fail('accepted'), (e) => e);
    assert.equal((await attempt()).code, '42501');
    await db.sql.unsafe(`grant execute on all functions in schema switchyard to ${role}`);
    const e = await attempt();
    assert.equal(e.code, '42501');
    assert.equal(JSON.parse(e.detail).rule, 'declare_needs_create');
    assert.match(e.message, /needs the CREATE privilege on schema switchyard/);
  } finally {
    await user.end({ timeout: 5 });
  }
  assert.equal((await listRowTriggers(db.sql)).length, 1, 'only new_order');
  await removeRowTrigger(db.sql, 'new_order');
  await db.sql`drop table public.orders`;
  await db.sql.unsafe(`drop owned by ${role}`);
  await db.sql.unsafe(`drop role ${role}`);
  await clearRuns();
});

Deno.test('expressions, conditions, events and keys shape the starts', async () => {
  await db.sql`create schema app`;
  await db.sql`create table app.tickets (id int primary key, customer text, priority int,
                                         subject text)`;
  await declareRowTrigger(db.sql, {
    name: 'urgent_ticket',
    table: 'app.tickets',
    alias: 'row_start',
    events: ['update', 'insert', 'delete'],
    inputExpression: "jsonb_build_object('ticket', id, 'subject', upper(subject))",
    condition: 'priority >= 5',
    keyBy: 'customer',
    mode: 'singleton',
  });
  const [t] = await listRowTriggers(db.sql);
  assert.deepEqual(t.events, ['insert', 'update', 'delete'], 'events in their canonical order');
  assert.equal(t.mode, 'singleton');

  await db.sql`insert into app.tickets values (1, 'acme', 1, 'low')`;
  assert.deepEqual(await inputs(), [], 'the condition holds the low priority back');
  await db.sql`insert into app.tickets values (2, 'acme', 9, 'down')`;
  await db.sql`insert into app.tickets values (3, 'acme', 7, 'again')`;
  assert.deepEqual(await inputs(), [{ ticket: 2, subject: 'DOWN' }], 'one open run per customer');
  const [key] = await db.sql<{ key: string; mode: string }[]>`
    select key, mode from switchyard.start_keys where started_as = 'row_start'`;
  assert.deepEqual({ ...key }, { key: 'urgent_ticket:acme', mode: 'singleton' });
  await db.sql`insert into app.tickets values (4, 'globex', 5, 'slow')`;
  assert.equal((await inputs()).length, 2, 'another customer, another run');
  // The open runs end: an update, then a delete (the old row), each start again.
  await db.sql`update switchyard.runs set status = 'cancelled', cancelled_at = now()
                 where flow_slug = 'rowStartV1'`;
  await db.sql`update app.tickets set subject = 'still down' where id = 2`;
  await db.sql`update switchyard.runs set status = 'cancelled', cancelled_at = now()
                 where flow_slug = 'rowStartV1' and status = 'started'`;
  await db.sql`delete from app.tickets where id = 4`;
  assert.deepEqual((await inputs()).slice(2), [
    { ticket: 2, subject: 'STILL DOWN' },
    { ticket: 4, subject: 'SLOW' },
  ]);
  // A null key value starts without a key; a long one is cut to its md5.
  await db.sql`insert into app.tickets values (5, null, 9, 'anonymous')`;
  await db.sql`insert into app.tickets values (6, ${'x'.repeat(300)}, 9, 'long')`;
  const keys = await db.sql<{ key: string }[]>`
    select key from switchyard.start_keys where key like 'urgent_ticket:md5:%'`;
  assert.equal(keys.length, 1);
  assert.equal((await inputs()).length, 6);
  await removeRowTrigger(db.sql, 'urgent_ticket');
  await db.sql`drop schema app cascade`;
  await clearRuns();
});

Deno.test('the same declaration again changes nothing; another under the name is refused', async () => {
  await db.sql`create table public.notes (id int primary key, body text)`;
  const d = {
    name: 'new_note',
    table: 'notes',
    alias: 'row_start',
    keyBy: 'row',
    mode: 'dedupe' as const,
  };
  const first = await declareRowTrigger(db.sql, d);
  const again = await declareRowTrigger(db.sql, d);
  assert.deepEqual(again, first);
  const e = await declareRowTrigger(db.sql, { ...d, mode: 'singleton' })
    .then(() => assert.fail('accepted'), (e) => e);
  assert.ok(e instanceof OperationError);
  assert.equal(e.code, '23505');
  assert.equal(e.detail?.rule, 'row_trigger_exists');
  await db.sql`insert into public.notes values (1, 'a')`;
  await db.sql`update public.notes set body = 'b' where id = 1`;
  assert.equal((await inputs()).length, 1, 'one trigger, one start');
  // The migration text declares the same thing, applied twice.
  await removeRowTrigger(db.sql, 'new_note');
  const migration = rowTriggerMigration({
    ...d,
    inputExpression: "jsonb_build_object('it''s', id)",
  });
  await db.sql.unsafe(migration);
  await db.sql.unsafe(migration);
  await db.sql`insert into public.notes values (2, 'c')`;
  assert.deepEqual((await inputs()).at(-1), { "it's": 2 });
  await removeRowTrigger(db.sql, 'new_note');
  await db.sql`drop table public.notes`;
  await clearRuns();
});

Deno.test('bad declarations are refused with the value and the rule, creating nothing', async () => {
  await db.sql`create table public.items (id int primary key, name text, qty int)`;
  await db.sql`create table public.loose (name text)`;
  await db.sql`create view public.items_view as select * from public.items`;
  const before = await footprint();
  const base = { name: 'items_new', table: 'items', alias: 'row_start' };
  const cases: [string, Record<string, unknown>, string, string, RegExp][] = [
    [
      'bad name',
      { name: 'Items-New' },
      '22023',
      'row_trigger_name_format',
      /name "Items-New" is invalid/,
    ],
    [
      'switchyard table',
      { table: 'switchyard.runs' },
      '22023',
      'table_schema_reserved',
      /schema "switchyard" is not the app's own/,
    ],
    ['pgmq table', { table: 'pgmq.meta' }, '22023', 'table_schema_reserved', /pgmq/],
    [
      'system table',
      { table: 'pg_catalog.pg_class' },
      '22023',
      'table_schema_reserved',
      /pg_catalog/,
    ],
    ['auth table', { table: 'auth.users' }, '22023', 'table_schema_reserved', /schema "auth"/],
    [
      'unknown table',
      { table: 'public.nope' },
      '22023',
      'table_unknown',
      /table "public\.nope" does not exist/,
    ],
    [
      'bad table name',
      { table: 'a.b.c' },
      '22023',
      'table_name_format',
      /table "a\.b\.c" is invalid/,
    ],
    ['a view', { table: 'items_view' }, '22023', 'table_kind', /is not a table/],
    [
      'unknown alias',
      { alias: 'nothing_here' },
      '22023',
      'alias_unknown',
      /alias "nothing_here" is unknown/,
    ],
    [
      'bad event',
      { events: ['insert', 'truncate'] },
      '22023',
      'events_invalid',
      /events .*truncate.* are invalid/,
    ],
    ['no events', { events: [] }, '22023', 'events_invalid', /events/],
    [
      'unknown column',
      { inputColumns: ['id', 'price'] },
      '22023',
      'column_unknown',
      /column "price" is not a column of public\.items/,
    ],
    [
      'both inputs',
      { inputColumns: ['id'], inputExpression: 'id' },
      '22023',
      'input_both',
      /not both/,
    ],
    [
      'bad expression',
      { inputExpression: 'price * 2' },
      '22023',
      'input_expression_invalid',
      /column "price" does not exist/,
    ],
    [
      'statements',
      { inputExpression: '1); drop table public.items; select (1' },
      '22023',
      'input_expression_invalid',
      /";"/,
    ],
    [
      'unqualified function',
      { inputExpression: 'my_fn(id)' },
      '22023',
      'input_expression_invalid',
      /my_fn/,
    ],
    [
      'condition not boolean',
      { condition: 'qty + 1' },
      '22023',
      'condition_invalid',
      /of type integer, not boolean/,
    ],
    ['condition syntax', { condition: 'qty >' }, '22023', 'condition_invalid', /syntax error/],
    [
      'unknown key column',
      { keyBy: 'sku', mode: 'dedupe' },
      '22023',
      'column_unknown',
      /key_by "sku" is invalid/,
    ],
    ['key without mode', { keyBy: 'name' }, '22023', 'mode_unknown', /mode null is invalid/],
    ['mode without key', { mode: 'dedupe' }, '22023', 'key_required', /mode "dedupe" is invalid/],
    [
      'ttl with singleton',
      { keyBy: 'row', mode: 'singleton', ttl: 60 },
      '22023',
      'ttl_dedupe_only',
      /ttl/,
    ],
    [
      'row key without primary key',
      { table: 'loose', keyBy: 'row', mode: 'dedupe' },
      '22023',
      'primary_key_missing',
      /needs a primary key on public\.loose/,
    ],
    [
      'backfill without primary key',
      { table: 'loose', backfill: true },
      '22023',
      'primary_key_missing',
      /a backfill needs a primary key/,
    ],
  ];
  for (const [what, change, code, rule, message] of cases) {
    const e = await declareRowTrigger(db.sql, { ...base, ...change } as never)
      .then(() => assert.fail(`${what}: accepted`), (e) => e);
    assert.ok(e instanceof OperationError, `${what}: ${e}`);
    assert.equal(e.code, code, what);
    assert.equal(e.detail?.rule, rule, `${what}: ${e.message}`);
    assert.match(e.message, message, what);
    assert.deepEqual(await footprint(), before, `${what} created nothing`);
  }
  await db.sql`select count(*) from public.items`; // the "statements" case dropped nothing
  await db.sql`drop view public.items_view`;
  await db.sql`drop table public.items, public.loose`;
});

Deno.test('a partitioned table: a write to any partition starts its run once', async () => {
  await db.sql`create table public.readings (id int, region text, value int,
                                             primary key (region, id)) partition by list (region)`;
  await db.sql`create table public.readings_eu partition of public.readings for values in ('eu')`;
  await declareRowTrigger(db.sql, {
    name: 'new_reading',
    table: 'readings',
    alias: 'row_start',
    inputColumns: ['id', 'region'],
    events: ['insert', 'delete'],
  });
  // A partition made after the declaration gets the trigger too.
  await db.sql`create table public.readings_us partition of public.readings for values in ('us')`;
  await db.sql`insert into public.readings values (1, 'eu', 5), (2, 'us', 6)`;
  await db.sql`insert into public.readings_us values (3, 'us', 7)`;
  await db.sql`delete from public.readings where id = 1`;
  // Runs started in one transaction share their start time: compare them sorted.
  const sorted = (xs: unknown[]) => xs.map((x) => JSON.stringify(x)).sort();
  assert.deepEqual(
    sorted(await inputs()),
    sorted([
      { id: 1, region: 'eu' },
      { id: 2, region: 'us' },
      { id: 3, region: 'us' },
      { id: 1, region: 'eu' },
    ]),
    'three inserts and a delete, through the parent and a partition',
  );
  await removeRowTrigger(db.sql, 'new_reading');
  await db.sql`insert into public.readings values (4, 'eu', 8)`;
  assert.equal((await inputs()).length, 4, 'removed from every partition');
  await db.sql`drop table public.readings`;
  await clearRuns();
});

Deno.test('10,000 inserts from 8 connections start 10,000 runs, one per row; rolled back ones none', async () => {
  await db.sql`create table public.events (id int primary key, payload text)`;
  await declareRowTrigger(db.sql, {
    name: 'new_event',
    table: 'events',
    alias: 'row_start',
    inputColumns: ['id'],
  });
  const writers = Array.from(
    { length: 8 },
    () => postgres(db.url, { max: 1, onnotice: () => {}, prepare: false }),
  );
  const total = 10_000;
  const perStatement = 125;
  try {
    await Promise.all(writers.map(async (w, k) => {
      // Writer k takes every 8th block of ids; each of its third transactions rolls back.
      let turn = 0;
      for (let start = k * perStatement; start < total; start += 8 * perStatement) {
        const ids = Array.from({ length: perStatement }, (_, i) => start + i);
        const rollback = turn++ % 3 === 2;
        await w.begin(async (tx) => {
          await tx`insert into public.events (id, payload)
                   select i, 'p' from unnest(${ids}::int[]) as i`;
          // Also rolled back rows: ids past the total, which never commit.
          if (rollback) {
            await tx`insert into public.events (id, payload)
                     select i + ${total}, 'gone' from unnest(${ids}::int[]) as i`;
            throw new Error('roll back');
          }
        }).catch((e) => {
          if (!rollback || !/roll back/.test(String(e))) throw e;
        });
        if (rollback) {
          await w`insert into public.events (id, payload)
                  select i, 'p' from unnest(${ids}::int[]) as i`;
        }
      }
    }));
  } finally {
    await Promise.all(writers.map((w) => w.end({ timeout: 5 })));
  }
  const [counts] = await db.sql<
    { rows: number; runs: number; distinct_ids: number; past: number }[]
  >`
    select (select count(*)::int from public.events) as rows,
           count(*)::int as runs,
           count(distinct (input ->> 'id')::int)::int as distinct_ids,
           count(*) filter (where (input ->> 'id')::int >= ${total})::int as past
      from switchyard.runs where flow_slug = 'rowStartV1'`;
  assert.deepEqual({ ...counts }, { rows: total, runs: total, distinct_ids: total, past: 0 });
  const [{ missing }] = await db.sql<{ missing: number }[]>`
    select count(*)::int as missing from public.events e
     where not exists (select 1 from switchyard.runs r
                        where r.flow_slug = 'rowStartV1' and (r.input ->> 'id')::int = e.id)`;
  assert.equal(missing, 0, 'every committed row has its run');
  await removeRowTrigger(db.sql, 'new_event');
  await db.sql`drop table public.events`;
  await clearRuns();
});

Deno.test('switchyard trigger add and remove write migrations; list shows the declaration', async () => {
  const cli = join(KIT_ROOT, 'cli', 'cli.ts');
  const project = await Deno.makeTempDir({ prefix: 'sy-trigger-' });
  const migrations = join(project, 'supabase', 'migrations');
  await Deno.mkdir(migrations, { recursive: true });
  await Deno.writeTextFile(join(project, 'supabase', 'config.toml'), '');
  const env = { SWITCHYARD_DB_URL: db.url, DATABASE_URL: db.url };
  const written = async (pattern: RegExp) => {
    const names = [...Deno.readDirSync(migrations)].map((e) => e.name).filter((n) =>
      pattern.test(n)
    );
    assert.equal(names.length, 1, `one migration like ${pattern}: ${names}`);
    return await Deno.readTextFile(join(migrations, names[0]));
  };
  try {
    await db.sql`create table public.invoices (id int primary key, amount int, status text)`;
    const add = await deno([
      'run',
      '-A',
      cli,
      'trigger',
      'add',
      'paid_invoice',
      '--table',
      'public.invoices',
      '--alias',
      'row_start',
      '--events',
      'update',
      '--columns',
      'id,amount',
      '--when',
      "status = 'paid'",
      '--key',
      'row',
      '--mode',
      'dedupe',
      '--project',
      project,
    ], { cwd: KIT_ROOT, env });
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /wrote supabase\/migrations\/\d{14}_row_trigger_paid_invoice\.sql/);
    await db.sql.unsafe(await written(/^\d{14}_row_trigger_paid_invoice\.sql$/));

    await db.sql`insert into public.invoices values (1, 40, 'open')`;
    await db.sql`update public.invoices set status = 'paid' where id = 1`;
    await db.sql`update public.invoices set amount = 41 where id = 1`;
    assert.deepEqual(await inputs(), [{ id: 1, amount: 40 }], 'one run per paid invoice');

    const list = await deno(['run', '-A', cli, 'trigger', 'list'], { cwd: KIT_ROOT, env });
    assert.equal(list.code, 0, list.stderr);
    assert.match(
      list.stdout,
      /^paid_invoice {2}update on public\.invoices -> row_start {2}input id,amount {2}when status = 'paid' {2}key row dedupe$/m,
    );

    const remove = await deno(
      ['run', '-A', cli, 'trigger', 'remove', 'paid_invoice', '--project', project],
      { cwd: KIT_ROOT, env },
    );
    assert.equal(remove.code, 0, remove.stderr);
    await db.sql.unsafe(await written(/^\d{14}_remove_row_trigger_paid_invoice\.sql$/));
    assert.deepEqual(await footprint(), { declarations: 0, triggers: 0, functions: 0 });
    const names = [...Deno.readDirSync(migrations)].map((e) => e.name).sort();
    assert.match(names[1], /remove_row_trigger/, 'the removal sorts after the declaration');

    const bad = await deno(
      ['run', '-A', cli, 'trigger', 'add', 'x', '--table', 'public.invoices', '--project', project],
      { cwd: KIT_ROOT, env },
    );
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /add needs --table and --alias/);
    assert.equal([...Deno.readDirSync(migrations)].length, 2, 'a refused add writes nothing');
  } finally {
    await Deno.remove(project, { recursive: true });
  }
  await db.sql`drop table public.invoices`;
  await clearRuns();
});

Deno.test('what a trigger adds to the app insert, side by side with a bare insert (printed)', async () => {
  await db.sql`create table public.bare (id int primary key, email text)`;
  await db.sql`create table public.triggered (id int primary key, email text)`;
  await declareRowTrigger(db.sql, {
    name: 'triggered_insert',
    table: 'triggered',
    alias: 'row_start',
    inputColumns: ['id', 'email'],
  });
  const conn = postgres(db.url, { max: 1, onnotice: () => {}, prepare: true });
  const rounds = 20;
  const perRound = 50;
  type Side = 'bare' | 'triggered' | 'insert then start_flow';
  const times: Record<Side, number[]> = {
    bare: [],
    triggered: [],
    'insert then start_flow': [],
  };
  try {
    // Alternating rounds of single-row autocommit inserts on one connection, so every side sees
    // the same load; the figure is the median per insert. The third side is the same work by
    // hand: a bare insert and a start_flow in one transaction (what an app writes without it).
    for (let r = 0; r < rounds; r++) {
      for (const side of Object.keys(times) as Side[]) {
        const t0 = performance.now();
        for (let i = 0; i < perRound; i++) {
          const id = r * perRound + i;
          const email = `u${id}@example.com`;
          if (side === 'insert then start_flow') {
            await conn.begin(async (tx) => {
              await tx`insert into public.bare (id, email) values (${id + 1_000_000}, ${email})`;
              await tx`select switchyard.start_flow('row_start',
                              jsonb_build_object('id', ${
                id + 1_000_000
              }::int, 'email', ${email}::text))`;
            });
          } else {
            await conn`insert into ${conn(side)} (id, email) values (${id}, ${email})`;
          }
        }
        times[side].push((performance.now() - t0) / perRound);
      }
    }
  } finally {
    await conn.end({ timeout: 5 });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const [bare, triggered, byHand] = (Object.keys(times) as Side[]).map((k) => median(times[k]));
  console.log(
    `insert overhead (median ms per single-row insert, ${rounds} rounds of ${perRound}): ` +
      `bare ${bare.toFixed(3)}, with the row trigger ${triggered.toFixed(3)} ` +
      `(+${(triggered - bare).toFixed(3)}), insert + start_flow by hand ${byHand.toFixed(3)}`,
  );
  const [{ runs }] = await db.sql<{ runs: number }[]>`
    select count(distinct (input ->> 'id')::int)::int as runs from switchyard.runs
     where flow_slug = 'rowStartV1' and input ? 'email' and (input ->> 'id')::int < 1000000`;
  assert.equal(runs, rounds * perRound, 'every triggered insert started its run');
  await removeRowTrigger(db.sql, 'triggered_insert');
  await db.sql`drop table public.bare, public.triggered`;
  await clearRuns();
});

Deno.test('cleanup', async () => {
  await db.close();
});
