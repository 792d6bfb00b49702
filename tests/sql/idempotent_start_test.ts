/**
 * Idempotent starts (issue 12): `switchyard.start_flow(flow_or_alias, input, run_id)` and
 * `untypedClient().startFlow(alias, input, { runId })`. Real PostgreSQL; the race uses several
 * connections that really wait on each other.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError, SwitchyardError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);

const flowV1 = new Flow<{ n: number }>({ slug: 'onceV1' })
  .step({ slug: 'a' }, (i) => i.n)
  .step({ slug: 'b', dependsOn: ['a'] }, (i) => i.a);
const flowV2 = new Flow<{ n: number }>({ slug: 'onceV2' }).step({ slug: 'a' }, (i) => i.n);
for (const f of [flowV1, flowV2]) {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(defineDeployedFlow(f, { alias: 'once' })).shape as never)
  }::jsonb)`;
}
await db.sql`select switchyard.sync_alias('once', array['onceV1'])`;

async function footprint(runId: string) {
  const [row] = await db.sql<{ runs: number; states: number; tasks: number; messages: number }[]>`
    select (select count(*)::int from switchyard.runs where run_id = ${runId}) as runs,
           (select count(*)::int from switchyard.step_states where run_id = ${runId}) as states,
           (select count(*)::int from switchyard.step_tasks where run_id = ${runId}) as tasks,
           (select count(*)::int from pgmq.q_oncev1
             where message ->> 'run_id' = ${runId}) as messages`;
  return { ...row };
}

Deno.test('a second start with the same run id returns the existing run and starts nothing', async () => {
  const id = crypto.randomUUID();
  assert.equal(await client.startFlow('once', { n: 1 }, { runId: id }), id);
  const before = await footprint(id);
  assert.deepEqual(before, { runs: 1, states: 2, tasks: 1, messages: 1 });
  assert.equal(await client.startFlow('once', { n: 1 }, { runId: id }), id);
  // The same JSON value, spelled differently in SQL, is the same input.
  const [{ again }] = await db.sql<{ again: string }[]>`
    select switchyard.start_flow('once', '{ "n" : 1.0 }'::jsonb, ${id}::uuid)::text as again`;
  assert.equal(again, id);
  assert.deepEqual(
    await footprint(id),
    before,
    'nothing new: no run, no step, no task, no message',
  );
  // The concrete slug of the same run is the same start too.
  assert.equal(await client.startFlow('onceV1', { n: 1 }, { runId: id }), id);
  // Without a run id every start is a new run.
  assert.notEqual(
    await client.startFlow('once', { n: 1 }),
    await client.startFlow('once', { n: 1 }),
  );
});

Deno.test('the same run id with another input or another flow is refused with a code and a detail', async () => {
  const id = crypto.randomUUID();
  await client.startFlow('once', { n: 2 }, { runId: id });
  const otherInput = await client.startFlow('once', { n: 3 }, { runId: id }).then(
    () => assert.fail('accepted another input'),
    (e) => e,
  );
  assert.ok(otherInput instanceof OperationError);
  assert.equal(otherInput.code, '23505');
  assert.match(otherInput.message, new RegExp(`run id ${id} was started with another input`));
  assert.deepEqual(otherInput.detail, {
    rule: 'run_id_other_input',
    argument: 'input',
    value: '{"n": 3}',
    run_id: id,
    existing_input: '{"n": 2}',
  });
  const otherFlow = await client.startFlow('onceV2', { n: 2 }, { runId: id }).then(
    () => assert.fail('accepted another flow'),
    (e) => e,
  );
  assert.ok(otherFlow instanceof OperationError);
  assert.equal(otherFlow.code, '23505');
  assert.match(
    otherFlow.message,
    /already belongs to a run of flow "onceV1" \(started as "once"\)/,
  );
  assert.deepEqual(otherFlow.detail, {
    rule: 'run_id_other_flow',
    argument: 'run_id',
    value: id,
    flow_or_alias: 'onceV2',
    existing_flow_slug: 'onceV1',
    existing_started_as: 'once',
  });
  assert.deepEqual(await footprint(id), { runs: 1, states: 2, tasks: 1, messages: 1 });
  // A run id that is not a UUID is refused before any SQL runs.
  await assert.rejects(
    client.startFlow('once', { n: 2 }, { runId: 'not-a-uuid' }),
    (e) =>
      e instanceof SwitchyardError && /runId "not-a-uuid" is invalid: use a UUID/.test(e.message),
  );
});

Deno.test('a retry after the alias moved returns the run of the version it started', async () => {
  const id = crypto.randomUUID();
  await client.startFlow('once', { n: 4 }, { runId: id });
  await client.activateAlias('once', 'onceV2');
  try {
    assert.equal(await client.startFlow('once', { n: 4 }, { runId: id }), id);
    const [run] = await db.sql`select flow_slug from switchyard.runs where run_id = ${id}`;
    assert.equal(run.flow_slug, 'onceV1');
  } finally {
    await client.activateAlias('once', 'onceV1');
  }
});

/** Opens `n` separate connections (one each), so the starts really run side by side. */
function connections(n: number) {
  return Array.from(
    { length: n },
    () => postgres(db.url, { max: 1, prepare: false, onnotice: () => {} }),
  );
}

Deno.test('racing starts with one run id on several connections create one run', async () => {
  const racers = connections(8);
  try {
    // 1. Rounds of simultaneous starts: every caller gets the id, one run exists.
    for (let round = 0; round < 10; round++) {
      const id = crypto.randomUUID();
      const ids = await Promise.all(
        racers.map((c) =>
          c<{
            id: string;
          }[]>`select switchyard.start_flow('once', '{"n": 5}'::jsonb, ${id}::uuid)::text as id`
            .then((rows) => rows[0].id)
        ),
      );
      assert.deepEqual(new Set(ids), new Set([id]));
      assert.deepEqual(await footprint(id), { runs: 1, states: 2, tasks: 1, messages: 1 });
    }

    // 2. A forced overlap: the first start holds its transaction open; the others wait on the
    // run id, then, once it commits, return it without starting anything.
    const holder = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
    const id = crypto.randomUUID();
    let release!: () => void;
    const released = new Promise<void>((r) => release = r);
    const held = holder.begin(async (tx) => {
      await tx`select switchyard.start_flow('once', '{"n": 6}'::jsonb, ${id}::uuid)`;
      await released;
    });
    try {
      await waitFor('the first start to hold the run id', async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and state = 'idle in transaction'
             and query like '%start_flow%'`;
        return n === 1;
      });
      const waiting = racers.map((c) =>
        c<{
          id: string;
        }[]>`select switchyard.start_flow('once', '{"n": 6}'::jsonb, ${id}::uuid)::text as id`
          .then((rows) => rows[0].id)
      );
      await waitFor('every other start to wait on the run id', async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%start_flow%'`;
        return n === racers.length;
      });
      release();
      await held;
      assert.deepEqual(new Set(await Promise.all(waiting)), new Set([id]));
      assert.deepEqual(await footprint(id), { runs: 1, states: 2, tasks: 1, messages: 1 });

      // 3. The first start rolls back: exactly one waiting start creates the run.
      const id2 = crypto.randomUUID();
      let abort!: () => void;
      const aborted = new Promise<void>((r) => abort = r);
      const rolledBack = holder.begin(async (tx) => {
        await tx`select switchyard.start_flow('once', '{"n": 7}'::jsonb, ${id2}::uuid)`;
        await aborted;
        throw new Error('roll back');
      }).catch((e) => e);
      await waitFor('the first start to hold the second run id', async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and state = 'idle in transaction'
             and query like '%start_flow%'`;
        return n === 1;
      });
      const waiting2 = racers.map((c) =>
        c<{
          id: string;
        }[]>`select switchyard.start_flow('once', '{"n": 7}'::jsonb, ${id2}::uuid)::text as id`
          .then((rows) => rows[0].id)
      );
      await waitFor('every other start to wait on the second run id', async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%start_flow%'`;
        return n === racers.length;
      });
      abort();
      assert.match(String(await rolledBack), /roll back/);
      assert.deepEqual(new Set(await Promise.all(waiting2)), new Set([id2]));
      assert.deepEqual(await footprint(id2), { runs: 1, states: 2, tasks: 1, messages: 1 });
    } finally {
      release();
      await holder.end();
    }
  } finally {
    await Promise.all(racers.map((c) => c.end()));
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
