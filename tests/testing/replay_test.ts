/**
 * A real run as a fixture (docs/design/clock.md#export-and-replay): runs recorded on PostgreSQL by
 * a real
 * worker (a retry, a map, a signal; and one that failed) are exported to a JSON file and replayed
 * in a test engine: answered from the record, to the same outputs, attempts and events with no
 * handler called; or from a chosen step on with the current code, to reproduce the failure and
 * see the fix complete it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  defineDeployedFlow,
  Flow,
  NonRetriable,
  signalPayload,
  startWorker,
} from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { assertRunRecord, createTestEngine, exportRun, type RunRecord } from '../../lib/testing.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

let lookupFailures = 1;
const tripV1 = new Flow<{ city: string; days: number }>({
  slug: 'tripV1',
  maxAttempts: 3,
  baseDelay: 1,
})
  .step({ slug: 'lookup' }, (input) => {
    if (lookupFailures-- > 0) throw new Error('HTTP 503 from the weather service');
    return Array.from({ length: input.days }, (_, i) => `${input.city}-${i + 1}`);
  })
  .map({ slug: 'price', array: 'lookup' }, (day) => day.length * 10)
  .wait({ slug: 'approve', dependsOn: ['price'], payload: signalPayload<{ budget: number }>() })
  .step({ slug: 'book', dependsOn: ['price', 'approve'] }, (input) => {
    const total = input.price.reduce((a, b) => a + b, 0);
    if (total > input.approve.budget) {
      throw new NonRetriable(`over budget: ${total} > ${input.approve.budget}`);
    }
    return { booked: total };
  });
const registry = [defineDeployedFlow(tripV1, { alias: 'trip' })] as const;

/** Runs a trip on PostgreSQL with a real worker, signalled with `budget`; its record, as a file. */
async function recordOnPostgres(budget: number): Promise<{ file: string; record: RunRecord }> {
  const db = await createTestDatabase();
  const client = createClient(registry, { connectionString: db.url });
  const worker = await startWorker(registry, {
    queueName: 'tripv1',
    connectionString: db.url,
    ...FAST,
    logger: { info: () => {}, warn: () => {}, error: () => {} },
  });
  try {
    lookupFailures = 1;
    const run = await client.start('trip', { city: 'Oslo', days: 3 });
    await waitFor(
      'the approval to wait',
      async () => (await run.status())?.steps[2].status === 'started',
    );
    await client.signal(run.runId, 'approve', { budget });
    await waitFor('the run to end', async () => (await run.status())?.status !== 'started');
    const record = await exportRun(db.sql, run.runId);
    const file = await Deno.makeTempFile({ prefix: 'switchyard-run-', suffix: '.json' });
    await Deno.writeTextFile(file, JSON.stringify(record, null, 2));
    return { file, record };
  } finally {
    await worker.stop();
    await client.close();
    await db.close();
  }
}

const names = (events: readonly { stepSlug: string | null; event: string }[]) =>
  events.filter((e) => e.event !== 'progress').map((e) => `${e.stepSlug ?? 'run'} ${e.event}`);

Deno.test('a run recorded on PostgreSQL replays from its JSON file to the same outputs, attempts and events', async () => {
  const { file, record: original } = await recordOnPostgres(1000);
  const record: unknown = JSON.parse(await Deno.readTextFile(file));
  await Deno.remove(file);
  assertRunRecord(record);
  assert.equal(record.run.status, 'completed');
  assert.deepEqual(record.run.output, { book: { booked: 180 } });
  assert.equal(record.steps[0].tasks[0].attempts, 2, 'the lookup was retried once');
  assert.deepEqual(record, original);

  const engine = await createTestEngine({ registry });
  try {
    lookupFailures = 99; // the current handlers would fail: none is called
    const run = await engine.replay(record);
    assert.equal(run.runId, record.run.runId);
    assert.deepEqual(await engine.output(run), record.run.output);
    const replayed = await engine.exportRun(run);
    assert.deepEqual(
      replayed.steps.map((s) => [s.stepSlug, s.status, s.output, s.tasks.map((t) => t.attempts)]),
      record.steps.map((s) => [s.stepSlug, s.status, s.output, s.tasks.map((t) => t.attempts)]),
    );
    assert.deepEqual(names(replayed.events), names(record.events));
    assert.ok(engine.calls('trip', 'lookup').every((c) => c.mocked), 'answered from the record');
    assert.match(
      engine.log.join('\n'),
      /recorded attempt 1 of step "lookup" failed: Error: HTTP 503/,
    );
    // The recorded times: the retry after its backoff, the signal when it came.
    const offset = (r: RunRecord, step: string, event: string) => {
      const e = r.events.find((x) => x.stepSlug === step && x.event === event)!;
      return Date.parse(e.at) - Date.parse(r.run.startedAt);
    };
    assert.ok(offset(replayed, 'lookup', 'completed') >= 1000);
    assert.equal(
      Math.round(offset(replayed, 'approve', 'signalled') / 1000),
      Math.round(offset(record, 'approve', 'signalled') / 1000),
    );
  } finally {
    await engine.close();
  }
});

Deno.test('a failed run replays to the same failure, then from the failing step with a fix it completes', async () => {
  const { file, record } = await recordOnPostgres(100); // 180 > 100: book fails, NonRetriable
  await Deno.remove(file);
  assert.equal(record.run.status, 'failed');
  assert.match(record.run.error ?? '', /over budget: 180 > 100/);

  const engine = await createTestEngine({ registry });
  try {
    const again = await engine.replay(record, { runId: '00000000-0000-4000-8000-0000000000a1' });
    const failure = await engine.failure(again);
    assert.equal(failure.step, 'book');
    assert.match(failure.error ?? '', /over budget: 180 > 100/);
    assert.equal((await engine.steps(again))[3].attempts, 1, 'NonRetriable again: one attempt');

    // The fix: book with the current code, here a mock; the steps before it from the record.
    lookupFailures = 99;
    const book = engine.mock('trip', 'book', (input) => ({
      booked: Math.min(input.approve.budget, input.price.reduce((a, b) => a + b, 0)),
    }));
    const fixed = await engine.replay(record, {
      from: 'book',
      runId: '00000000-0000-4000-8000-0000000000a2',
    });
    assert.deepEqual(await engine.output(fixed), { book: { booked: 100 } });
    assert.equal(book.calls.length, 1);
    assert.deepEqual(book.calls[0].input, { price: [60, 60, 60], approve: { budget: 100 } });
  } finally {
    await engine.close();
  }
});

Deno.test('replay refuses what it cannot replay, naming it', async () => {
  const engine = await createTestEngine({ registry });
  try {
    const run = await engine.start('trip', { city: 'Rome', days: 1 });
    lookupFailures = 0;
    await engine.runUntilIdle();
    const record = await engine.exportRun(run);
    assert.equal(record.run.status, 'started', 'waiting for its approval');
    // A step the record never finished fails the replay, naming it.
    const replayed = await engine.replay(record, { runId: '00000000-0000-4000-8000-0000000000b1' });
    await engine.signal(replayed, 'approve', { budget: 10 });
    await engine.runUntilIdle();
    assert.match(
      (await engine.failure(replayed)).error ?? '',
      /the record has no outcome of step "book" \(it never ran\): replay from "book" to run its handler/,
    );
    await assert.rejects(
      engine.replay({ ...record, format: 'other' } as unknown as RunRecord),
      /a run record must be an object with format "switchyard-run\/1" \(what exportRun writes\); got format "other"/,
    );
    await assert.rejects(
      engine.replay({ ...record, run: { ...record.run, flowSlug: 'tripV9' } }),
      /replay: run \S+ ran version "tripV9", which this engine's registry does not list \(it lists "tripV1"\)/,
    );
    await assert.rejects(
      engine.replay(record, { from: 'pay' }),
      /from "pay" is not a step of tripV1 \(its steps: "lookup", "price", "approve", "book"\)/,
    );
    await assert.rejects(exportRun(engine.sql, 'nope'), /exportRun: runId "nope" is invalid/);
    await assert.rejects(
      exportRun(engine.sql, '00000000-0000-4000-8000-00000000dead'),
      /there is no run 00000000-0000-4000-8000-00000000dead in this database/,
    );
  } finally {
    await engine.close();
  }
});

Deno.test('a record is plain JSON: it survives a file, field for field', async () => {
  const engine = await createTestEngine({ registry, now: '2030-06-01T10:00:00Z' });
  try {
    lookupFailures = 0;
    const run = await engine.start('trip', { city: 'Lima', days: 2 });
    await engine.runUntilIdle();
    await engine.advance('2h');
    await engine.signal(run, 'approve', { budget: 500 });
    await engine.runUntilIdle();
    const record = await engine.exportRun(run);
    const dir = await Deno.makeTempDir();
    try {
      const path = join(dir, 'run.json');
      await Deno.writeTextFile(path, JSON.stringify(record));
      assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), record);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    assert.equal(record.format, 'switchyard-run/1');
    assert.equal(record.run.startedAt, '2030-06-01T10:00:00.000Z');
    assert.equal(record.run.completedAt, '2030-06-01T12:00:00.000Z');
    assert.deepEqual(record.steps.find((s) => s.stepSlug === 'approve')!.signal, {
      payload: { budget: 500 },
      key: null,
      at: '2030-06-01T12:00:00.000Z',
    });
  } finally {
    await engine.close();
  }
});
