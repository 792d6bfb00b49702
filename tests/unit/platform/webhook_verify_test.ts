/**
 * Webhook signature verification (issue 43, docs/design/ingestion.md#signed-webhooks): both header
 * forms
 * against digests computed here with crypto.subtle (and RFC 4231's test case 2), a tampered
 * body, a wrong secret, timestamps at and past the tolerance, malformed headers. No database.
 */
import assert from 'node:assert/strict';
import { createWebhook, hmacSha256Hex, verifyWebhookSignature } from '../../../lib/mod.ts';

const SECRET = 'whsec-test-0123456789';
const encoder = new TextEncoder();

/** The hex HMAC-SHA256, computed independently of the module under test. */
async function hex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(data)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('');
}

const body = '{"order":1001,"total":"12.50"}';
const bytes = encoder.encode(body);
const NOW = 1_780_000_000_000; // ms
const T = NOW / 1000;

Deno.test('RFC 4231 test case 2: the digest and the plain form', async () => {
  const expected = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';
  assert.equal(await hmacSha256Hex('Jefe', 'what do ya want for nothing?'), expected);
  const check = await verifyWebhookSignature({
    secret: 'Jefe',
    header: expected,
    body: encoder.encode('what do ya want for nothing?'),
  });
  assert.deepEqual(check, { ok: true, form: 'plain' });
});

Deno.test('the plain form: hex over the body, with or without sha256=, any case', async () => {
  const digest = await hex(SECRET, body);
  for (const header of [digest, `sha256=${digest}`, digest.toUpperCase(), ` ${digest} `]) {
    assert.deepEqual(
      await verifyWebhookSignature({ secret: SECRET, header, body: bytes }),
      { ok: true, form: 'plain' },
      header,
    );
  }
  const tampered = encoder.encode(body.replace('12.50', '0.01'));
  const refused = await verifyWebhookSignature({ secret: SECRET, header: digest, body: tampered });
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.rule, 'signature_mismatch');
  const wrongSecret = await hex(`${SECRET}x`, body);
  const other = await verifyWebhookSignature({ secret: SECRET, header: wrongSecret, body: bytes });
  assert.equal(!other.ok && other.rule, 'signature_mismatch');
});

Deno.test('the t= form: hex over `${t}.${body}`, within the tolerance only', async () => {
  const at = (t: number) =>
    verifyWebhookSignature({
      secret: SECRET,
      header: `t=${t},v1=${digests.get(t)}`,
      body: bytes,
      now: NOW,
    });
  const digests = new Map<number, string>();
  for (const t of [T, T - 300, T + 300, T - 301, T + 301, T - 86400]) {
    digests.set(t, await hex(SECRET, `${t}.${body}`));
  }
  assert.deepEqual(await at(T), { ok: true, form: 'timestamped' });
  assert.deepEqual(await at(T - 300), { ok: true, form: 'timestamped' }, 'the bound is inclusive');
  assert.deepEqual(await at(T + 300), { ok: true, form: 'timestamped' });
  for (const t of [T - 301, T + 301, T - 86400]) {
    const check = await at(t);
    assert.equal(check.ok, false, String(t));
    assert.equal(!check.ok && check.rule, 'timestamp_outside_tolerance');
    assert.match(!check.ok ? check.message : '', /at most 300 s/);
  }
  // A custom tolerance.
  const late = await verifyWebhookSignature({
    secret: SECRET,
    header: `t=${T - 86400},v1=${digests.get(T - 86400)}`,
    body: bytes,
    now: NOW,
    toleranceSeconds: 90000,
  });
  assert.deepEqual(late, { ok: true, form: 'timestamped' });
  // The timestamp is signed: moving it (to pass the tolerance) breaks the signature.
  const moved = await verifyWebhookSignature({
    secret: SECRET,
    header: `t=${T},v1=${digests.get(T - 86400)}`,
    body: bytes,
    now: NOW,
  });
  assert.equal(!moved.ok && moved.rule, 'signature_mismatch');
  // The body-only digest in the t= form does not match either.
  const bodyOnly = await verifyWebhookSignature({
    secret: SECRET,
    header: `t=${T},v1=${await hex(SECRET, body)}`,
    body: bytes,
    now: NOW,
  });
  assert.equal(!bodyOnly.ok && bodyOnly.rule, 'signature_mismatch');
  // A tampered body, a wrong secret.
  const tampered = await verifyWebhookSignature({
    secret: SECRET,
    header: `t=${T},v1=${digests.get(T)}`,
    body: encoder.encode(`${body} `),
    now: NOW,
  });
  assert.equal(!tampered.ok && tampered.rule, 'signature_mismatch');
  const wrong = await verifyWebhookSignature({
    secret: 'another',
    header: `t=${T},v1=${digests.get(T)}`,
    body: bytes,
    now: NOW,
  });
  assert.equal(!wrong.ok && wrong.rule, 'signature_mismatch');
  // Rotation: several v1 entries (and unknown schemes) are fine when one matches.
  const rotated = await verifyWebhookSignature({
    secret: SECRET,
    header: `t=${T},v1=${await hex('old-secret', `${T}.${body}`)},v0=zz,v1=${digests.get(T)}`,
    body: bytes,
    now: NOW,
  });
  assert.deepEqual(rotated, { ok: true, form: 'timestamped' });
});

Deno.test('missing and malformed headers are refused with their rule', async () => {
  const digest = await hex(SECRET, `${T}.${body}`);
  const cases: [string | null, string][] = [
    [null, 'signature_missing'],
    ['', 'signature_missing'],
    ['   ', 'signature_missing'],
    ['abc', 'signature_malformed'],
    [`${digest}00`, 'signature_malformed'],
    ['sha256=xyz', 'signature_malformed'],
    [`v1=${digest}`, 'signature_malformed'],
    [`t=${T}`, 'signature_malformed'],
    [`t=soon,v1=${digest}`, 'signature_malformed'],
    [`t=${T},t=${T},v1=${digest}`, 'signature_malformed'],
    [`t=${T},v1=${digest.slice(2)}`, 'signature_malformed'],
    [`t=${T},garbage,v1=${digest}`, 'signature_malformed'],
  ];
  for (const [header, rule] of cases) {
    const check = await verifyWebhookSignature({ secret: SECRET, header, body: bytes, now: NOW });
    assert.equal(check.ok, false, String(header));
    assert.equal(!check.ok && check.rule, rule, String(header));
  }
});

Deno.test('createWebhook refuses bad options at once, naming the value and the rule', () => {
  const cases: [Parameters<typeof createWebhook>[0], RegExp][] = [
    [{ alias: '' }, /alias "" is invalid/],
    [{ alias: 'a', ttl: 0 }, /ttl 0 is invalid: pass a whole number from 1 to 31536000/],
    [{ alias: 'a', ttl: 31536001 }, /ttl 31536001 is invalid/],
    [{ alias: 'a', maxBodyBytes: 1.5 }, /maxBodyBytes 1.5 is invalid/],
    [{ alias: 'a', toleranceSeconds: -1 }, /toleranceSeconds -1 is invalid/],
    [{ alias: 'a', deliveryIdHeaders: [] }, /deliveryIdHeaders is empty/],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => createWebhook(options),
      (e: Error) => e instanceof TypeError && message.test(e.message),
    );
  }
});

Deno.test('without a database or a secret: 405 and 500 webhook_config, naming the variable only', async () => {
  const webhook = createWebhook({ alias: 'a', env: () => undefined });
  const get = await webhook.fetch(new Request('http://local/hook'));
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  await get.body?.cancel();
  const errors: string[] = [];
  const quiet = createWebhook({
    alias: 'a',
    env: (name) => (name === 'HOOK_SECRET' ? 's3cret-value' : undefined),
    secretEnv: 'HOOK_SECRET',
    logger: { warn: (m) => errors.push(m), error: (m) => errors.push(m) },
  });
  const body = '{"a":1}';
  const noDb = await quiet.fetch(
    new Request('http://local/hook', {
      method: 'POST',
      headers: { 'webhook-signature': await hex('s3cret-value', body), 'webhook-id': 'd1' },
      body,
    }),
  );
  assert.equal(noDb.status, 500);
  const json = await noDb.json();
  assert.equal(json.error, 'webhook_config');
  assert.ok(!JSON.stringify(json).includes('s3cret-value'));
  assert.match(errors.join('\n'), /no database connection/);
  const noSecret = createWebhook({
    alias: 'a',
    env: () => undefined,
    logger: { warn() {}, error() {} },
  });
  const refused = await noSecret.fetch(new Request('http://local/hook', { method: 'POST', body }));
  assert.equal(refused.status, 500);
  assert.match((await refused.json()).message, /set SWITCHYARD_WEBHOOK_SECRET/);
});
