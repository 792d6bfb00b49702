/**
 * The client, consistent (issue 25; docs/design/client.md), with real workers on real
 * PostgreSQL: every step's output through `stepOutputs()` (a skipped leaf leaves `output()`
 * without it), `status()` in camelCase only (the 0.3.0 snake_case names went in 0.5.0), and `events()`
 * following a failed run through its retry with `throughRetries`.
 */
import assert from 'node:assert/strict';
import { defineDeployedFlow, Flow, startWorker } from '../../lib/mod.ts';
import { createClient } from '../../lib/client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, within } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

let failOnce = true;
const orders = new Flow<{ sku: string; gift: boolean }>({ slug: 'ordersConsistV1', maxAttempts: 1 })
  .step({ slug: 'price' }, (input) => ({ cents: input.sku.length * 100 }))
  .step({ slug: 'wrap', dependsOn: ['price'], if: { price: { cents: -1 } } }, () => 'wrapped')
  .step({ slug: 'charge', dependsOn: ['price'] }, (input) => {
    if (failOnce) {
      failOnce = false;
      throw new Error('card declined');
    }
    return { charged: input.price.cents };
  });
const registry = [defineDeployedFlow(orders, { alias: 'ordersConsist' })] as const;

Deno.test('stepOutputs() reads every step, typed; a skipped leaf is absent from output() and stepOutputs()', async () => {
  failOnce = false;
  const worker = await startWorker(registry, {
    queueName: 'ordersconsistv1',
    connectionString: db.url,
    ...FAST,
    logger: SILENT,
  });
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('ordersConsist', { sku: 'abc', gift: false });
    const output = await run.output();
    // `wrap` is a leaf that was skipped: the run's output holds `charge` only.
    assert.deepEqual(output, { charge: { charged: 300 } });
    const steps = await run.stepOutputs();
    assert.ok(steps);
    // Typed: price is { cents: number }, charge { charged: number }.
    const cents: number | undefined = steps.price?.cents;
    assert.equal(cents, 300);
    assert.deepEqual(steps, { price: { cents: 300 }, charge: { charged: 300 } });
    assert.equal(await client.run(crypto.randomUUID()).stepOutputs(), null, 'no such run');

    const status = await run.status();
    assert.ok(status);
    assert.equal(status.runId, run.runId);
    assert.equal(status.flowSlug, 'ordersConsistV1');
    assert.equal(status.startedAs, 'ordersConsist');
    assert.equal(typeof status.startedAt, 'string');
    // The snake_case names of 0.3.0 are gone (0.5.0): one name per field.
    assert.deepEqual(Object.keys(status).filter((k) => k.includes('_')), []);
    const wrap = status.steps.find((s) => s.stepSlug === 'wrap');
    assert.equal(wrap?.status, 'skipped');
    assert.match(wrap?.skipReason ?? '', /condition not met/);
    assert.deepEqual(
      status.steps.flatMap((st) => Object.keys(st)).filter((k) => k.includes('_')),
      [],
    );
    assert.equal(status.steps.find((s) => s.stepSlug === 'price')?.queueName, 'ordersconsistv1');
  } finally {
    await client.close();
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

Deno.test('events({ throughRetries }) follows a failed run through its retry to its completion', async () => {
  failOnce = true;
  const worker = await startWorker(registry, {
    queueName: 'ordersconsistv1',
    connectionString: db.url,
    ...FAST,
    logger: SILENT,
  });
  const client = createClient(registry, { connectionString: db.url });
  try {
    const run = await client.start('ordersConsist', { sku: 'abcd', gift: true });
    const seen: string[] = [];
    const following = (async () => {
      for await (const e of run.events({ throughRetries: true })) {
        seen.push(`${e.stepSlug ?? 'run'} ${e.event}`);
        if (e.stepSlug === null && e.event === 'failed') await run.retry();
      }
    })();
    await within(30_000, 'the events to end at the completion after the retry', following);
    assert.deepEqual(seen.filter((s) => s.startsWith('run ')), [
      'run started',
      'run failed',
      'run retried',
      'run completed',
    ]);
    assert.ok(seen.includes('charge failed') && seen.includes('charge completed'), seen.join());
    // Without it, the same run's events end at the first failure.
    const plain: string[] = [];
    for await (const e of run.events()) plain.push(`${e.stepSlug ?? 'run'} ${e.event}`);
    assert.equal(plain.at(-1), 'run failed');
    assert.deepEqual(await run.output(), { charge: { charged: 400 } });
  } finally {
    await client.close();
    await within(30_000, 'the worker to stop', worker.stop());
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
