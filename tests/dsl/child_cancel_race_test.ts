/**
 * A child run ending while its parent is being cancelled (issue 22,
 * docs/design/waits.md): two connections race, round after round, with no sleeps: one ends the
 * child (a
 * signal completes it, its timeout fails it, or it is cancelled itself), the other cancels the
 * parent. The child's end takes the child's row and then the parent's (the trigger
 * runs_child_ended); a cancel takes the run family bottom-up too, so no deadlock (40P01) ever
 * reaches a caller, and every round leaves both runs ended, none stranded `started`.
 *
 * CHILD_RACE_ITERATIONS sets the rounds (default 100).
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const ROUNDS = Number(Deno.env.get('CHILD_RACE_ITERATIONS') ?? 100);

// A child that waits (a signal completes it, its timeout fails it); the parent waits for it and
// then for a second signal, so a completed child leaves the parent started for the cancel.
const waitingChild = defineDeployedFlow(
  new Flow({ slug: 'raceChildV1' }).wait({ slug: 'w', timeout: 3600 }),
  { alias: 'raceChild' },
);
const middle = defineDeployedFlow(
  new Flow({ slug: 'raceMiddleV1' }).childFlow({ slug: 'inner', flow: waitingChild }),
  { alias: 'raceMiddle' },
);
const parent = defineDeployedFlow(
  new Flow({ slug: 'raceParentV1' })
    .childFlow({ slug: 'held', flow: waitingChild })
    .childFlow({ slug: 'deep', flow: middle })
    .wait({ slug: 'after', dependsOn: ['held'] }),
  { alias: 'raceParent' },
);
for (const target of [waitingChild, middle, parent]) {
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(target).shape as never)
  }::jsonb)`;
  await client.activateAlias(target.alias, toPlacement(target).flow.slug);
}

type Ending = 'signal' | 'timeout' | 'cancel';

/** What one side of a round did: its result, or the SQLSTATE and rule of its refusal. */
async function attempt(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (e) {
    const err = e as { code?: string; detail?: string; message?: string };
    const rule = err.detail?.startsWith('{') ? JSON.parse(err.detail).rule : undefined;
    return `${err.code}:${rule ?? err.message}`;
  }
}

Deno.test('a child ending while its parent is cancelled: no deadlock reaches a caller, no run is stranded', async () => {
  const a = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  const b = postgres(db.url, { max: 1, onnotice: () => {}, prepare: false });
  const outcomes = new Map<string, number>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const ending: Ending = (['signal', 'timeout', 'cancel'] as const)[round % 3];
      // Half the rounds race the deeper child (a grandchild ending under a cancelled root).
      const deep = round % 2 === 1;
      const root = await client.startFlow('raceParent', {});
      const [{ id: childId }] = await db.sql<{ id: string }[]>`
        select c.run_id as id from switchyard.child_runs c
         where c.parent_run_id = ${root} and c.parent_step = 'held'`;
      const [{ id: grandchildId }] = await db.sql<{ id: string }[]>`
        select g.run_id as id from switchyard.child_runs m
          join switchyard.child_runs g on g.parent_run_id = m.run_id
         where m.parent_run_id = ${root} and m.parent_step = 'deep'`;
      const target = deep ? grandchildId : childId;
      if (ending === 'timeout') {
        await db.sql`update switchyard.step_states
          set wait_deadline = now() - interval '1 second', wait_due = now() - interval '1 second'
          where run_id = ${target} and step_slug = 'w'`;
      }
      const end = () =>
        ending === 'signal'
          ? a`select switchyard.signal_run(${target}::uuid, 'w', '{"ok": true}'::jsonb)`
          : ending === 'timeout'
          ? a`select switchyard.expire_waits()`
          : a`select switchyard.cancel_run(${target}::uuid, 'withdrawn')`;
      const [ended, cancelled] = await Promise.all([
        attempt(end),
        attempt(() => b`select switchyard.cancel_run(${root}::uuid, 'no longer needed')`),
      ]);
      for (const result of [ended, cancelled]) {
        // Losing the race is a refusal with its rule (the run had ended), never a deadlock.
        assert.ok(
          result === 'ok' || /^55000:(run_not_started|wait_not_open)$/.test(result),
          `round ${round} (${ending}${deep ? ', deep' : ''}): ${result}`,
        );
      }
      // The timeout's tick may have lost the run's row to the cancel (skip locked): tick again.
      if (ending === 'timeout') await db.sql`select switchyard.expire_waits()`;
      const [{ middleId }] = await db.sql<{ middleId: string }[]>`
        select run_id as "middleId" from switchyard.child_runs
         where parent_run_id = ${root} and parent_step = 'deep'`;
      const family = [root, childId, middleId, grandchildId];
      const runs = await db.sql<{ run_id: string; status: string }[]>`
        select r.run_id, r.status from switchyard.runs r where r.run_id = any (${family}::uuid[])`;
      const rootStatus = runs.find((r) => r.run_id === root)?.status;
      assert.ok(
        rootStatus === 'cancelled' || (ending === 'timeout' && rootStatus === 'failed'),
        `round ${round}: root ${rootStatus}`,
      );
      // A cancelled root cancels its whole family; a root its child failed keeps its other
      // child open for a retry (docs/design/waits.md), so then the raced chain alone must have
      // ended.
      const raced = rootStatus === 'cancelled'
        ? family
        : deep
        ? [root, middleId, grandchildId]
        : [root, childId];
      assert.deepEqual(
        runs.filter((r) => raced.includes(r.run_id) && r.status === 'started'),
        [],
        `round ${round} (${ending}${deep ? ', deep' : ''}): no run stranded started`,
      );
      const open = await db.sql`select ss.run_id, ss.step_slug, ss.status
        from switchyard.step_states ss
        join switchyard.runs r on r.run_id = ss.run_id and r.status = 'cancelled'
       where ss.run_id = any (${family}::uuid[]) and ss.status in ('created', 'started')`;
      // (A failed run keeps its other steps as they were, for a retry, docs/design/client.md.)
      assert.deepEqual([...open], [], `round ${round}: no open step in a cancelled run`);
      const key = `${ending}${deep ? '/deep' : ''} root ${rootStatus}, end ${ended}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
  } finally {
    await a.end();
    await b.end();
  }
  console.log([...outcomes].map(([k, n]) => `${k}: ${n}`).join('\n'));
});

Deno.test({
  name: 'teardown',
  async fn() {
    await client.close();
    await db.close();
  },
});
