/**
 * The flow option `events: false` (issue 27, docs/design/client.md): a throughput-only flow
 * writes no run_events rows, its transitions still notify, and the client's waits still work.
 */
import assert from 'node:assert/strict';
import type postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { FlowDefinitionError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, signalPayload, startWorker } from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const sql = db.sql;

const chain = (slug: string, events?: boolean) =>
  new Flow<{ n: number }>({ slug, ...(events === undefined ? {} : { events }) })
    .step({ slug: 'a' }, (i) => i.n + 1)
    .step({ slug: 'b', dependsOn: ['a'] }, (i) => i.a * 2);
const quiet = chain('quietChain', false);
const loud = chain('loudChain');
const registry = [
  defineDeployedFlow(routeFlow(quiet, { queues: { a: 'events_q', b: 'events_q' } }), {
    alias: 'quiet',
  }),
  defineDeployedFlow(routeFlow(loud, { queues: { a: 'events_q', b: 'events_q' } }), {
    alias: 'loud',
  }),
] as const;

Deno.test('a flow with events: false writes no run events; its runs notify and the client waits for them', async () => {
  const heard: string[] = [];
  const listener = await sql.listen('switchyard_run_events', (id) => heard.push(id));
  const worker = await startWorker(registry, {
    connectionString: db.url,
    queueName: 'events_q',
    ...FAST,
  });
  const client = createClient(registry, { connectionString: db.url });
  try {
    const quietRun = await client.start('quiet', { n: 1 });
    const loudRun = await client.start('loud', { n: 1 });
    assert.deepEqual(await quietRun.output({ timeoutMs: 30_000 }), { b: 4 });
    assert.deepEqual(await loudRun.output({ timeoutMs: 30_000 }), { b: 4 });
    assert.equal((await quietRun.status())?.status, 'completed');
    const count = async (id: string) =>
      (await sql<{ n: number }[]>`select count(*)::int as n from switchyard.run_events
        where run_id = ${id}`)[0].n;
    assert.equal(await count(quietRun.runId), 0, 'no rows for the quiet run');
    // The loud run: started, two steps started and completed, completed.
    assert.equal(await count(loudRun.runId), 6, 'every transition of the loud run');
    await waitFor('the quiet run notified', () => Promise.resolve(heard.includes(quietRun.runId)));
  } finally {
    await client.close();
    await worker.stop();
    await listener.unlisten();
  }
});

Deno.test('a wait step of a flow with events: false writes none of its own events either', async () => {
  const waiting = new Flow<{ n: number }>({ slug: 'quietWait', events: false })
    .wait({ slug: 'approval', payload: signalPayload<{ ok: boolean }>() });
  await sql`select switchyard.ensure_flow(${sql.json(toPlacement(waiting).shape as never)}::jsonb)`;
  const [{ id }] = await sql`select switchyard.start_flow('quietWait', '{"n": 1}'::jsonb) as id`;
  const [{ r }] = await sql`select switchyard.signal_run(${id}::uuid, 'approval',
    '{"ok": true}'::jsonb) as r`;
  assert.equal(typeof r, 'string');
  const [run] = await sql`select status from switchyard.runs where run_id = ${id}`;
  assert.equal(run.status, 'completed', 'the signal ended the wait and the run');
  const [{ n }] = await sql`select count(*)::int as n from switchyard.run_events
    where run_id = ${id}`;
  assert.equal(n, 0, 'no waiting, signalled or status rows');
});

Deno.test('events is a runtime option: turning it on or off updates the flow, it is no new version', async () => {
  const shape = (events?: boolean) => toPlacement(chain('toggledChain', events)).shape;
  const ensure = async (s: unknown) =>
    (await sql`select switchyard.ensure_flow(${sql.json(s as never)}::jsonb) as r`)[0].r;
  assert.equal(await ensure(shape()), 'created');
  const flag = async () =>
    (await sql`select events from switchyard.flows where flow_slug = 'toggledChain'`)[0].events;
  assert.equal(await flag(), true);
  assert.equal(await ensure(shape(false)), 'updated');
  assert.equal(await flag(), false);
  const [change] = await sql`select old_options, new_options from switchyard.flow_option_changes
    where flow_slug = 'toggledChain' order by change_id desc limit 1`;
  assert.equal(change.old_options.flow.events, undefined);
  assert.equal(change.new_options.flow.events, false);
  // true is the default: the same shape as one that never named it.
  assert.equal(await ensure(shape(true)), 'updated');
  assert.equal(await flag(), true);
  assert.equal(await ensure(shape()), 'verified');
});

Deno.test('events must be a boolean, in the DSL and in SQL, naming the value and the rule', async () => {
  assert.throws(
    () => new Flow({ slug: 'badEvents', events: 'no' as never }),
    (e: Error) =>
      e instanceof FlowDefinitionError &&
      e.message === 'flow "badEvents" option events "no" is invalid: use true or false',
  );
  const s = toPlacement(chain('badEventsSql')).shape;
  const bad = { ...s, options: { ...s.options, events: 'no' } };
  await assert.rejects(
    sql`select switchyard.ensure_flow(${sql.json(bad as never)}::jsonb)`,
    (e: postgres.PostgresError) => {
      assert.equal(e.code, '22023');
      assert.equal(
        e.message,
        'flow "badEventsSql" option events "no" is invalid: use true or false',
      );
      return true;
    },
  );
  const [{ n }] = await sql`select count(*)::int as n from switchyard.flows
    where flow_slug = 'badEventsSql'`;
  assert.equal(n, 0, 'nothing compiled');
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
