/**
 * Flow control in a test engine behaves as the SQL core makes it behave on PostgreSQL
 * (docs/design/flow-control.md#rate-limits-and-keyed-concurrency,
 * docs/design/flow-control.md#start-keys, docs/design/clock.md#the-test-engine): a rate limit's
 * refills, keyed concurrency held by a
 * task another worker runs, and start keys (singleton, dedupe with its TTL, debounce with its
 * delay and maximum delay). One scenario runs on the embedded PGlite engine and on an engine on a
 * PostgreSQL test database; what each saw, and when, is the same, and is the rule's story.
 */
import assert from 'node:assert/strict';
import { createTestEngine, type TestEngine } from '../../lib/testing.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { registry } from './_flows.ts';

type Engine = TestEngine<typeof registry>;

/** Run ids of keyed starts come from the database: named by first appearance instead. */
function namer() {
  const names = new Map<string, string>();
  return (id: string) => {
    if (!names.has(id)) names.set(id, `run${names.size + 1}`);
    return names.get(id)!;
  };
}

async function scenario(engine: Engine): Promise<string[]> {
  const seen: string[] = [];
  const t0 = engine.now.getTime();
  const at = () => `+${(engine.now.getTime() - t0) / 1000}s`;
  const name = namer();

  // A rate limit of 2 a minute, burst 2: five calls start at 0, 0, 30, 60, 90 s.
  await engine.sql`select switchyard.set_rate_limit('calls', 2, 60, 2)`;
  for (let n = 1; n <= 5; n++) await engine.start('limited', { tenant: 'a', n });
  await engine.runUntilIdle();
  seen.push(`${at()} calls: ${engine.calls('limited', 'call').length}`);
  await engine.advance('29s');
  seen.push(`${at()} calls: ${engine.calls('limited', 'call').length}`);
  await engine.advance('2m');
  seen.push(
    `call times: ${
      engine.calls('limited', 'call').map((c) => `${(c.at.getTime() - t0) / 1000}s`).join(' ')
    }`,
  );

  // Keyed concurrency, 1 per tenant: another worker runs a task of tenant a; a's others wait,
  // b's run; when it completes, a's go on.
  const a1 = await engine.start('keyed', { tenant: 'a', n: 1 });
  const other = crypto.randomUUID();
  await engine.sql`select switchyard.register_worker(${other}::uuid, 'keyedv1', 'other-worker',
    '{keyedV1/work}'::text[], 15)`;
  const [m] = await engine.sql<{ msg_id: string }[]>`
    select msg_id::text from pgmq.read('keyedv1', 30, 1)`;
  const [claim] = await engine.sql<{ disposition: string; attempt: number }[]>`
    select disposition, attempt from switchyard.start_tasks('keyedv1', array[${m.msg_id}::bigint],
      ${other}::uuid, null)`;
  assert.equal(claim.disposition, 'claimed');
  await engine.start('keyed', { tenant: 'a', n: 2 });
  await engine.start('keyed', { tenant: 'b', n: 3 });
  await engine.start('keyed', { tenant: 'a', n: 4 });
  await engine.advance('5s');
  seen.push(`${at()} keyed ran: ${engine.calls('keyed', 'work').map((c) => c.input.n).join(' ')}`);
  await engine.sql`select switchyard.complete_task(${a1.runId}::uuid, 'work', 1, '1'::jsonb, 0)`;
  await engine.sql`select switchyard.heartbeat(${other}::uuid)`;
  await engine.advance('2s');
  seen.push(`${at()} keyed ran: ${engine.calls('keyed', 'work').map((c) => c.input.n).join(' ')}`);

  // Singleton: one open run per key; once it ended, the next start is a new run.
  const s1 = await engine.start('report', { day: 'mon' }, { key: 'daily', mode: 'singleton' });
  const s2 = await engine.start('report', { day: 'tue' }, { key: 'daily', mode: 'singleton' });
  await engine.runUntilIdle();
  const s3 = await engine.start('report', { day: 'wed' }, { key: 'daily', mode: 'singleton' });
  await engine.runUntilIdle();
  seen.push(
    `singleton: ${name(s1.runId)} ${name(s2.runId)} ${name(s3.runId)} ` +
      `${JSON.stringify(await engine.output(s1))} ${JSON.stringify(await engine.output(s3))}`,
  );

  // Dedupe with a TTL of an hour after the run ended.
  const d1 = await engine.start('report', { day: 'a' }, { key: 'k', mode: 'dedupe', ttl: 3600 });
  await engine.runUntilIdle();
  await engine.advance('59m');
  const d2 = await engine.start('report', { day: 'b' }, { key: 'k', mode: 'dedupe', ttl: 3600 });
  await engine.advance('1m');
  const d3 = await engine.start('report', { day: 'c' }, { key: 'k', mode: 'dedupe', ttl: 3600 });
  seen.push(`${at()} dedupe: ${name(d1.runId)} ${name(d2.runId)} ${name(d3.runId)}`);

  // Debounce of 60 s, at most 100 s: each start pushes the run, the last input wins, the maximum
  // delay bounds it.
  const opts = { key: 'deb', mode: 'debounce', delay: 60, maxDelay: 100 } as const;
  const b1 = await engine.start('report', { day: '1' }, opts);
  await engine.advance('50s');
  await engine.start('report', { day: '2' }, opts);
  await engine.advance('40s');
  await engine.start('report', { day: '3' }, opts); // 90 s: pushed to 150 s, cut to 100 s
  await engine.advance('9s');
  seen.push(`${at()} debounce: ${(await engine.status(b1)).steps[0].status}`);
  await engine.advance('1s');
  const status = await engine.status(b1);
  seen.push(
    `${at()} debounce: ${status.status} ${JSON.stringify(status.output)} completed at ` +
      `+${(Date.parse(status.completedAt!) - t0) / 1000}s`,
  );
  return seen;
}

Deno.test('rate limits, keyed concurrency and start keys behave in a test engine as on PostgreSQL', async () => {
  const now = '2030-05-01T08:00:00Z';
  const lite = await createTestEngine({ registry, now });
  let onLite: string[];
  try {
    onLite = await scenario(lite);
  } finally {
    await lite.close();
  }
  const db = await createTestDatabase();
  let onPg: string[];
  try {
    const engine = await createTestEngine({ registry, now, databaseUrl: db.url });
    try {
      onPg = await scenario(engine);
    } finally {
      await engine.close();
    }
  } finally {
    await db.close();
  }
  assert.deepEqual(onPg, onLite);
  // The rules' story, spelled out.
  assert.deepEqual(onLite.slice(0, 3), [
    '+0s calls: 2',
    '+29s calls: 2',
    'call times: 0s 0s 30s 60s 90s',
  ]);
  assert.equal(onLite[3], '+154s keyed ran: 3');
  assert.equal(onLite[4], '+156s keyed ran: 3 2 4');
  assert.equal(
    onLite[5],
    'singleton: run1 run1 run2 {"build":"report mon"} {"build":"report wed"}',
  );
  assert.equal(onLite[6], '+3756s dedupe: run3 run3 run4');
  assert.equal(onLite[7], '+3855s debounce: created');
  assert.equal(onLite[8], '+3856s debounce: completed {"build":"report 3"} completed at +3856s');
});
