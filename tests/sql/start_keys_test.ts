/**
 * Start keys (issue 23, docs/design/flow-control.md#start-keys):
 * `switchyard.start_flow(..., key, mode,
 * ttl, delay, max_delay)` and the client's `start(alias, input, { key, mode, ... })`:
 * singleton, dedupe (a key after its TTL, kept past prune), debounce (trailing payload,
 * maxDelay), a rolled back start, a trigger starting a run, and 100 concurrent starts with one
 * key on real connections → one run per mode. Real PostgreSQL; times are moved in the rows
 * (a run's end, a key's first start) instead of sleeping.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError, SwitchyardError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow } from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { waitFor } from '../_helpers/wait.ts';

const db = await createTestDatabase();

const keyed = new Flow<{ n: number; k?: string }>({ slug: 'keyedV1' }).step(
  { slug: 'a' },
  (i) => i.n,
);
const deployed = defineDeployedFlow(keyed, { alias: 'keyed' });
await db.sql`select switchyard.ensure_flow(${
  db.sql.json(toPlacement(deployed).shape as never)
}::jsonb)`;
await db.sql`select switchyard.sync_alias('keyed', array['keyedV1'])`;
const client = createClient([deployed], { connectionString: db.url });

async function refusal(promise: Promise<unknown>): Promise<OperationError> {
  const e = await promise.then(() => assert.fail('the start was accepted'), (e) => e);
  assert.ok(e instanceof OperationError, String(e));
  return e;
}

/** The runs of the flow, with their inputs, and the key rows. */
async function runsOf(key: string) {
  const runs = await db.sql<{ run_id: string; input: unknown; status: string }[]>`
    select r.run_id::text, r.input, r.status from switchyard.runs r
     where r.input ->> 'k' = ${key} order by r.started_at, r.run_id`;
  const keys = await db.sql<{ run_id: string; mode: string }[]>`
    select k.run_id::text, k.mode from switchyard.start_keys k
     where k.started_as = 'keyed' and k.key = ${key}`;
  return { runs: runs.map((r) => ({ ...r })), keys: keys.map((k) => ({ ...k })) };
}

async function cancel(runId: string) {
  await db.sql`select switchyard.cancel_run(${runId}::uuid, 'test')`;
}

Deno.test('singleton: the open run of the key is returned; once it ended, the key starts a new run', async () => {
  const first = await client.start('keyed', { n: 1, k: 's1' }, {
    key: 's1',
    mode: 'singleton',
  });
  const again = await client.start('keyed', { n: 2, k: 's1' }, {
    key: 's1',
    mode: 'singleton',
  });
  assert.equal(again.runId, first.runId);
  let state = await runsOf('s1');
  assert.equal(state.runs.length, 1, 'one run');
  assert.deepEqual(state.runs[0].input, { n: 1, k: 's1' }, 'the second input is not used');
  // One task and one message: the second start queued nothing.
  const [{ tasks }] = await db.sql<{ tasks: number }[]>`
    select count(*)::int as tasks from switchyard.step_tasks where run_id = ${first.runId}`;
  assert.equal(tasks, 1);
  // Another key of the same alias is another run.
  const other = await client.start('keyed', { n: 3, k: 's1-other' }, {
    key: 's1-other',
    mode: 'singleton',
  });
  assert.notEqual(other.runId, first.runId);
  // The run ends: the key names the next start's run.
  await cancel(first.runId);
  const next = await client.start('keyed', { n: 4, k: 's1' }, {
    key: 's1',
    mode: 'singleton',
  });
  assert.notEqual(next.runId, first.runId);
  state = await runsOf('s1');
  assert.deepEqual(state.keys, [{ run_id: next.runId, mode: 'singleton' }]);
  // While it is open: another owner is refused (learning nothing of it), another mode too.
  const owner = await refusal(
    client.start('keyed', { n: 5 }, { key: 's1', mode: 'singleton', owner: crypto.randomUUID() }),
  );
  assert.equal(owner.code, '23505');
  assert.equal(owner.detail.rule, 'key_other_owner');
  assert.match(owner.message, /key "s1" names a run of another owner/);
  const mode = await refusal(client.start('keyed', { n: 5 }, { key: 's1', mode: 'dedupe' }));
  assert.equal(mode.code, '23505');
  assert.equal(mode.detail.rule, 'key_other_mode');
  assert.match(mode.message, /key "s1" is held in mode singleton, not "dedupe"/);
  assert.equal((await runsOf('s1')).runs.length, 2, 'the refusals started nothing');
});

Deno.test('dedupe: the key returns its run while open and for ttl seconds after it ended, also after prune', async () => {
  const start = (n: number, ttl?: number) =>
    client.start('keyed', { n, k: 'd1' }, { key: 'd1', mode: 'dedupe', ttl });
  const first = await start(1, 3 * 3600);
  assert.equal((await start(2, 3 * 3600)).runId, first.runId, 'open');
  await cancel(first.runId);
  assert.equal((await start(3, 3 * 3600)).runId, first.runId, 'ended, within its ttl');
  // Two hours pass (the run's end moved back): prune deletes the run, the key stays with its
  // expiry, and still names the pruned run.
  await db.sql`update switchyard.runs set cancelled_at = now() - interval '2 hours'
                 where run_id = ${first.runId}`;
  const [pruned] = await db.sql`select (switchyard.prune(interval '1 hour')).runs::int as runs`;
  assert.ok(pruned.runs >= 1);
  const [kept] = await db.sql<{ left_s: number }[]>`
    select extract(epoch from expires_at - now())::int as left_s from switchyard.start_keys
     where started_as = 'keyed' and key = 'd1'`;
  assert.ok(Math.abs(kept.left_s - 3600) < 60, `about an hour left, got ${kept.left_s} s`);
  assert.equal((await runsOf('d1')).runs.length, 0, 'the run is pruned');
  assert.equal((await start(4)).runId, first.runId, 'the key outlives its pruned run');
  // The TTL passes: prune deletes the key, and the next start is a new run.
  await db.sql`update switchyard.start_keys set expires_at = now() - interval '1 second'
                 where started_as = 'keyed' and key = 'd1'`;
  await db.sql`select switchyard.prune(interval '1 hour')`;
  assert.deepEqual((await runsOf('d1')).keys, [], 'prune deleted the expired key');
  const second = await start(5, 60);
  assert.notEqual(second.runId, first.runId);
  // A key after its TTL without prune: the ended run is over 60 s old, the key moves on.
  await cancel(second.runId);
  assert.equal((await start(6, 60)).runId, second.runId, 'within 60 s');
  await db.sql`update switchyard.runs set cancelled_at = now() - interval '61 seconds'
                 where run_id = ${second.runId}`;
  const third = await start(7, 60);
  assert.notEqual(third.runId, second.runId);
  assert.deepEqual((await runsOf('d1')).keys, [{ run_id: third.runId, mode: 'dedupe' }]);
  // Prune takes a key with its run when the key's TTL is over by then.
  await cancel(third.runId);
  await db.sql`update switchyard.runs set cancelled_at = now() - interval '2 hours'
                 where run_id = ${third.runId}`;
  await db.sql`select switchyard.prune(interval '1 hour')`;
  assert.deepEqual((await runsOf('d1')).keys, [], 'the key went with its run');
  const left = await db.sql`select 1 from switchyard.runs where run_id = ${third.runId}`;
  assert.equal(left.length, 0, 'the run is pruned');
});

Deno.test('debounce: a later start moves the start and gives its input (trailing payload), maxDelay forces it', async () => {
  const start = (n: number, delay = 60, maxDelay: number | undefined = 120) =>
    client.start('keyed', { n, k: 'b1' }, { key: 'b1', mode: 'debounce', delay, maxDelay });
  const startAt = async (runId: string) => {
    const [row] = await db.sql<{ in_s: number }[]>`
      select extract(epoch from start_at - now())::float8 as in_s
        from switchyard.delayed_starts where run_id = ${runId}`;
    return row?.in_s;
  };
  const first = await start(1);
  const inS = await startAt(first.runId);
  assert.ok(inS > 58 && inS <= 60, `starts in 60 s, got ${inS}`);
  const stepStatus = async (runId: string) =>
    (await db.sql`select status from switchyard.step_states where run_id = ${runId}`)[0].status;
  assert.equal(await stepStatus(first.runId), 'created', 'nothing started yet');
  // The key's first start is 100 s old: a start now moves it to min(now + 60, first + 120).
  await db.sql`update switchyard.start_keys set first_at = now() - interval '100 seconds'
                 where started_as = 'keyed' and key = 'b1'`;
  const second = await start(2);
  assert.equal(second.runId, first.runId);
  const forced = await startAt(first.runId);
  assert.ok(forced > 18 && forced <= 20, `maxDelay: starts in 20 s, got ${forced}`);
  // Without the first start being old, the start moves to 60 s from the last one.
  await db.sql`update switchyard.start_keys set first_at = now()
                 where started_as = 'keyed' and key = 'b1'`;
  assert.equal((await start(3)).runId, first.runId);
  assert.ok((await startAt(first.runId)) > 58);
  let state = await runsOf('b1');
  assert.equal(state.runs.length, 1);
  assert.deepEqual(state.runs[0].input, { n: 3, k: 'b1' }, 'the trailing payload wins');
  // Due: the tick begins it with the last input.
  await db.sql`update switchyard.delayed_starts set start_at = now() - interval '1 second'
                 where run_id = ${first.runId}`;
  await db.sql`select switchyard.expire_waits()`;
  assert.equal(await stepStatus(first.runId), 'started', 'the step began');
  const [task] = await db
    .sql`select status from switchyard.step_tasks where run_id = ${first.runId}`;
  assert.equal(task.status, 'queued', 'its task is queued');
  // Begun: the key's next start is a new debounced run.
  const next = await start(4);
  assert.notEqual(next.runId, first.runId);
  assert.ok((await startAt(next.runId)) > 58);
  state = await runsOf('b1');
  assert.deepEqual(state.keys, [{ run_id: next.runId, mode: 'debounce' }]);
});

Deno.test('debounce racing the tick: a start waits for the tick that begins the run, then starts a new run', async () => {
  const first = await client.start('keyed', { n: 1, k: 'b2' }, {
    key: 'b2',
    mode: 'debounce',
    delay: 60,
  });
  await db.sql`update switchyard.delayed_starts set start_at = now() - interval '1 second'
                 where run_id = ${first.runId}`;
  const ticker = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const starter = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  let commit!: () => void;
  const committed = new Promise<void>((r) => commit = r);
  try {
    // The tick begins the run and holds its row until it commits.
    const tick = ticker.begin(async (tx) => {
      await tx`select switchyard.expire_waits()`;
      await committed;
    });
    await waitFor('the tick to hold the run', async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
         where datname = current_database() and state = 'idle in transaction'
           and query like '%expire_waits%'`;
      return n === 1;
    });
    const late = starter<{ id: string }[]>`select switchyard.start_flow('keyed',
        '{"n": 2, "k": "b2"}'::jsonb, key => 'b2', mode => 'debounce', delay => 60)::text as id`
      .then((rows) => rows[0].id); // sent now (a postgres.js query runs once awaited or then'd)
    await waitFor('the start to wait on the run the tick holds', async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock'
           and query like '%start_flow%'`;
      return n === 1;
    });
    commit();
    await tick;
    const id = await late;
    assert.notEqual(id, first.runId, 'the begun run is not moved');
    const runs = (await runsOf('b2')).runs;
    assert.deepEqual(runs.map((r) => [r.run_id, (r.input as { n: number }).n]), [
      [first.runId, 1],
      [id, 2],
    ], 'the begun run kept its input; the late start is a new delayed run');
    const [d] = await db.sql`select count(*)::int as n from switchyard.delayed_starts
                               where run_id = ${id}`;
    assert.equal(d.n, 1);
  } finally {
    commit();
    await ticker.end({ timeout: 5 });
    await starter.end({ timeout: 5 });
  }
});

Deno.test('a rolled back start leaves no key, and a trigger on an application table starts keyed runs', async () => {
  await db.sql.begin(async (tx) => {
    await tx`select switchyard.start_flow('keyed', '{"n": 1, "k": "r1"}'::jsonb,
                                          key => 'r1', mode => 'singleton')`;
    throw new Error('roll back');
  }).catch((e) => assert.match(String(e), /roll back/));
  assert.deepEqual(await runsOf('r1'), { runs: [], keys: [] }, 'nothing is left of it');
  const after = await client.start('keyed', { n: 2, k: 'r1' }, { key: 'r1', mode: 'singleton' });
  assert.deepEqual((await runsOf('r1')).keys, [{ run_id: after.runId, mode: 'singleton' }]);

  await db.sql`create table public.signups (email text, plan text)`;
  await db.sql`create function public.start_onboarding() returns trigger language plpgsql as $$
    begin
      perform switchyard.start_flow('keyed', jsonb_build_object('n', 1, 'k', new.email),
                                    key => new.email, mode => 'singleton');
      return new;
    end $$`;
  await db.sql`create trigger signups_start after insert on public.signups
                 for each row execute function public.start_onboarding()`;
  await db.sql`insert into public.signups values ('ada@example.com', 'free'),
                                                 ('ada@example.com', 'pro')`;
  const state = await runsOf('ada@example.com');
  assert.equal(state.runs.length, 1, 'one run for the two rows with one key');
  assert.deepEqual(state.keys, [{ run_id: state.runs[0].run_id, mode: 'singleton' }]);
  // The insert rolls back: the trigger's start and key go with it.
  await db.sql.begin(async (tx) => {
    await tx`insert into public.signups values ('bob@example.com', 'free')`;
    throw new Error('roll back');
  }).catch(() => {});
  assert.deepEqual(await runsOf('bob@example.com'), { runs: [], keys: [] });
});

Deno.test('start key arguments that do not fit together are refused, naming the value and the rule', async () => {
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    [
      'mode without key',
      { mode: 'singleton' },
      'key_required',
      /mode "singleton" is invalid: it applies to a start with a key/,
    ],
    [
      'empty key',
      { key: '', mode: 'singleton' },
      'key_length',
      /key "" is invalid: use a key of 1 to 200/,
    ],
    [
      'key and run id',
      { key: 'x', mode: 'singleton', runId: crypto.randomUUID() },
      'key_with_run_id',
      /run_id "[0-9a-f-]+" is invalid: a key and a run id each name the run/,
    ],
    ['no mode', { key: 'x' }, 'mode_unknown', /mode null is invalid/],
    [
      'unknown mode',
      { key: 'x', mode: 'once' },
      'mode_unknown',
      /mode "once" is invalid: use mode 'singleton', 'dedupe' or 'debounce'/,
    ],
    [
      'ttl on singleton',
      { key: 'x', mode: 'singleton', ttl: 5 },
      'ttl_dedupe_only',
      /ttl "5" is invalid/,
    ],
    [
      'ttl too long',
      { key: 'x', mode: 'dedupe', ttl: 31536001 },
      'ttl_range',
      /ttl "31536001" is invalid: use a ttl of 1 to 31536000 seconds/,
    ],
    [
      'delay on dedupe',
      { key: 'x', mode: 'dedupe', delay: 5 },
      'delay_debounce_only',
      /delay "5" is invalid/,
    ],
    [
      'debounce without delay',
      { key: 'x', mode: 'debounce' },
      'delay_range',
      /delay null is invalid: a debounce needs a delay/,
    ],
    [
      'maxDelay under delay',
      { key: 'x', mode: 'debounce', delay: 10, maxDelay: 5 },
      'max_delay_range',
      /max_delay "5" is invalid: use a max_delay from delay \(10\)/,
    ],
    [
      'debounce with startAt',
      { key: 'x', mode: 'debounce', delay: 10, startAt: new Date(Date.now() + 60_000) },
      'debounce_start_at',
      /start_at .* is invalid: a debounce starts delay seconds after the last start/,
    ],
  ];
  for (const [what, options, rule, message] of cases) {
    const e = await refusal(client.start('keyed', { n: 1 }, options as never));
    assert.equal(e.code, '22023', what);
    assert.equal(e.detail.rule, rule, what);
    assert.match(e.message, message, what);
  }
  // Types the SQL cannot take are refused before any SQL runs.
  await assert.rejects(
    client.start('keyed', { n: 1 }, { key: 'x', mode: 'debounce', delay: 1.5 }),
    (e) =>
      e instanceof SwitchyardError && /delay 1.5 is invalid: pass a whole number/.test(e.message),
  );
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.start_keys where key = 'x'`;
  assert.equal(n, 0);
});

/** Opens `n` separate connections, so the starts really run side by side. */
function connections(n: number) {
  return Array.from(
    { length: n },
    () => postgres(db.url, { max: 1, prepare: false, onnotice: () => {} }),
  );
}

Deno.test('100 concurrent starts with one key on 25 connections start one run, in every mode', async () => {
  const racers = connections(25);
  try {
    for (
      const [mode, extra] of [
        ['singleton', ''],
        ['dedupe', ', ttl => 600'],
        ['debounce', ', delay => 600'],
      ] as const
    ) {
      const key = `race-${mode}`;
      const ids = await Promise.all(
        Array.from({ length: 100 }, (_, i) => racers[i % racers.length]).map((c, i) =>
          c<{ id: string }[]>`select switchyard.start_flow('keyed',
            ${c.json({ n: i, k: key })}::jsonb, key => ${key}::text,
            mode => ${mode}::text ${c.unsafe(extra)})::text as id`.then((rows) => rows[0].id)
        ),
      );
      const state = await runsOf(key);
      assert.equal(state.runs.length, 1, `${mode}: one run`);
      assert.deepEqual(
        new Set(ids),
        new Set([state.runs[0].run_id]),
        `${mode}: every start got it`,
      );
      assert.deepEqual(state.keys, [{ run_id: state.runs[0].run_id, mode }]);
      if (mode === 'debounce') {
        // The last start to take the key's row gave the run its input: one of the 100.
        assert.ok(typeof (state.runs[0].input as { n: number }).n === 'number');
      }
    }

    // The first start holds the key in an open transaction and rolls back: the starts waiting
    // on the key's row go on, and exactly one run is made for them.
    const holder = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
    try {
      let abort!: () => void;
      const aborted = new Promise<void>((r) => abort = r);
      const rolledBack = holder.begin(async (tx) => {
        await tx`select switchyard.start_flow('keyed', '{"n": 0, "k": "held"}'::jsonb,
                                              key => 'held', mode => 'singleton')`;
        await aborted;
        throw new Error('roll back');
      }).catch((e) => e);
      await waitFor('the first start to hold the key', async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and state = 'idle in transaction'
             and query like '%start_flow%'`;
        return n === 1;
      });
      const waiting = racers.map((c, i) =>
        c<{ id: string }[]>`select switchyard.start_flow('keyed',
            ${c.json({ n: i + 1, k: 'held' })}::jsonb, key => 'held',
            mode => 'singleton')::text as id`.then((rows) => rows[0].id)
      );
      await waitFor('every other start to wait on the key', async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%start_flow%'`;
        return n === racers.length;
      });
      abort();
      assert.match(String(await rolledBack), /roll back/);
      const ids = await Promise.all(waiting);
      const state = await runsOf('held');
      assert.equal(state.runs.length, 1);
      assert.notEqual((state.runs[0].input as { n: number }).n, 0, 'not the rolled back start');
      assert.deepEqual(new Set(ids), new Set([state.runs[0].run_id]));
    } finally {
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
