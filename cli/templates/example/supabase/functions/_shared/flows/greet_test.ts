/**
 * The example flow's tests, written by `npx switchyard install --example`. They run the real
 * engine — the project's SQL core on an embedded PGlite, no server, no Docker — with a virtual
 * clock, from the project root:
 *
 *     npx deno test -A --config supabase/functions/deno.json supabase/functions/
 *
 * @module
 */
import assert from 'node:assert/strict';
import { createTestEngine } from 'switchyard/testing';
import { registry } from '../registry.ts';

Deno.test('greet composes a greeting and delivers its length', async () => {
  await using engine = await createTestEngine({ registry });
  const run = await engine.start('greet', { name: 'Ada' });
  await engine.runUntilIdle();
  assert.deepEqual(await engine.output(run), { deliver: 11 });
});

Deno.test('a failed delivery is retried after its backoff, with the composed text', async () => {
  await using engine = await createTestEngine({ registry });
  // The first delivery fails; the flow's default backoff retries it 1 s later.
  engine.mock('greet', 'deliver', () => {
    throw new Error('mailbox full');
  }, { times: 1 });
  const run = await engine.start('greet', { name: 'Grace' });
  await engine.runUntilIdle();
  assert.equal((await engine.status(run)).status, 'started');
  await engine.advance('1s');
  assert.deepEqual(await engine.output(run), { deliver: 13 });
  const calls = engine.calls('greet', 'deliver');
  assert.deepEqual(calls.map((c) => [c.attempt, c.mocked]), [[1, true], [2, false]]);
  assert.deepEqual(calls[1].input.compose, { text: 'Hello, Grace!' });
});
