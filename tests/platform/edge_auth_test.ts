/**
 * Bearers a queue function accepts (docs/design/supabase.md): the keys of
 * `SUPABASE_SECRET_KEYS` (Supabase's new API keys, a JSON object of `sb_secret_…` keys) next to
 * `SUPABASE_SERVICE_ROLE_KEY` and `SWITCHYARD_WORKER_SECRET`; a malformed value accepts nothing.
 */
import assert from 'node:assert/strict';
import { defineDeployedFlow, EdgeWorker, Flow, routeFlow } from '../../lib/mod.ts';
import { createMemoryPlatform } from '../../lib/platform/platform.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const flow = new Flow({ slug: 'bearerV1' }).step({ slug: 'work' }, () => 1);
const registry = [
  defineDeployedFlow(routeFlow(flow, { queues: { work: 'bearer_q' } }), { alias: 'bearer' }),
] as const;
const bearer = (token: string) => ({
  method: 'POST',
  headers: { Authorization: `Bearer ${token}` },
});
const DEFAULT_KEY = 'sb_secret_N7UND0UgjKTVK-Uodkm0Hg_xSvEMPvz';
const CI_KEY = 'sb_secret_2Vq0cXk9mQeYb1nWz3LpAa_QhR8tJ5sD';

Deno.test('every key of SUPABASE_SECRET_KEYS is an accepted bearer', async () => {
  const platform = createMemoryPlatform({
    DATABASE_URL: db.url,
    SUPABASE_SECRET_KEYS: JSON.stringify({ default: DEFAULT_KEY, ci: CI_KEY }),
  });
  const lines: string[] = [];
  const logger = {
    info() {},
    warn: (m: string) => lines.push(m),
    error: (m: string) => lines.push(m),
  };
  const handle = EdgeWorker.start(registry, { queueName: 'bearer_q', platform, logger });
  try {
    for (const wrong of ['sb_secret_wrong', `${DEFAULT_KEY}x`, 'default', '{}']) {
      lines.length = 0;
      const refused = await platform.fetch('http://local/', bearer(wrong));
      assert.equal(refused.status, 401, wrong);
      // The answer says nothing more; the function's log says why (issue 10, item 9).
      assert.deepEqual(await refused.json(), { error: 'unauthorized' });
      assert.match(lines.join('\n'), /not an accepted worker secret/);
    }
    assert.equal(handle.worker, null, 'no refused request started a worker');
    const first = await platform.fetch('http://local/', bearer(DEFAULT_KEY));
    const body = await first.json();
    assert.equal(first.status, 200, JSON.stringify(body));
    assert.equal(body.state, 'started');
    const second = await platform.fetch('http://local/', bearer(CI_KEY));
    assert.equal(second.status, 200);
    assert.equal((await second.json()).state, 'running');
  } finally {
    await handle.stop();
  }
});

Deno.test('secret keys work next to the kit secret and the legacy service role key', async () => {
  const platform = createMemoryPlatform({
    DATABASE_URL: db.url,
    SUPABASE_SECRET_KEYS: JSON.stringify({ default: DEFAULT_KEY }),
    SUPABASE_SERVICE_ROLE_KEY: 'legacy-service-role-jwt',
    SWITCHYARD_WORKER_SECRET: 'kit-secret-4e1f',
  });
  const handle = EdgeWorker.start(registry, { queueName: 'bearer_q', platform });
  try {
    for (const token of [DEFAULT_KEY, 'legacy-service-role-jwt', 'kit-secret-4e1f']) {
      const response = await platform.fetch('http://local/', bearer(token));
      assert.equal(response.status, 200, token);
      await response.body?.cancel();
    }
  } finally {
    await handle.stop();
  }
});

Deno.test('a malformed SUPABASE_SECRET_KEYS accepts nothing and says what to configure', async () => {
  for (
    const value of [
      'not json',
      JSON.stringify(DEFAULT_KEY),
      JSON.stringify([DEFAULT_KEY]),
      'null',
      JSON.stringify({ default: 42 }),
    ]
  ) {
    const platform = createMemoryPlatform({ DATABASE_URL: db.url, SUPABASE_SECRET_KEYS: value });
    const lines: string[] = [];
    const logger = { info() {}, warn: (m: string) => lines.push(m), error: () => {} };
    const handle = EdgeWorker.start(registry, { queueName: 'bearer_q', platform, logger });
    try {
      const response = await platform.fetch('http://local/', bearer(DEFAULT_KEY));
      assert.equal(response.status, 401, value);
      assert.deepEqual(await response.json(), { error: 'unauthorized' });
      assert.match(
        lines.join('\n'),
        /no secret is configured: set SWITCHYARD_WORKER_SECRET, SUPABASE_SECRET_KEYS/,
      );
      assert.equal(handle.worker, null);
    } finally {
      await handle.stop();
    }
  }
  await db.close();
});
