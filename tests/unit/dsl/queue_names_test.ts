import assert from 'node:assert/strict';

import { InvalidQueueNameError, SwitchyardError } from '../../../lib/errors.ts';
import {
  assertQueueName,
  isValidQueueName,
  plainQueueName,
  QUEUE_NAME_MAX_LENGTH,
  stepQueueName,
} from '../../../lib/dsl/queue_names.ts';

const RULE =
  'use lower-case letters, digits and single underscores (^[a-z][a-z0-9_]*$, at most 47 characters)';

function assertRejected(name: unknown, explicit: boolean, rule = RULE): void {
  assert.equal(isValidQueueName(name, { explicit }), false, `${String(name)} should be invalid`);
  assert.throws(
    () => assertQueueName(name, { explicit }),
    (error: unknown) => {
      assert.ok(error instanceof InvalidQueueNameError);
      assert.ok(error instanceof SwitchyardError);
      assert.equal(error.name, 'InvalidQueueNameError');
      assert.equal(error.value, name);
      assert.equal(error.rule, rule);
      assert.ok(error.message.includes(rule), error.message);
      if (typeof name === 'string') {
        assert.ok(error.message.includes(JSON.stringify(name)), error.message);
      }
      return true;
    },
  );
}

Deno.test('valid queue names pass as explicit and generated names', () => {
  for (const name of ['a', 'io', 'classify_threads', 'q1', 'a_b_c', 'x9_', 'a_']) {
    assert.equal(isValidQueueName(name, { explicit: true }), true, name);
    assertQueueName(name, { explicit: true });
    assertQueueName(name, { explicit: false });
  }
});

Deno.test('a 47-character name is valid and a 48-character name is not', () => {
  assert.equal(QUEUE_NAME_MAX_LENGTH, 47);
  const name47 = 'q'.repeat(47);
  assertQueueName(name47, { explicit: true });
  assertRejected('q'.repeat(48), true);
  assertRejected('q'.repeat(48), false);
});

Deno.test('the error message names the value and the rule', () => {
  assert.throws(
    () => assertQueueName('Classify-Threads', { explicit: true }),
    {
      name: 'InvalidQueueNameError',
      message: 'queue name "Classify-Threads" is invalid: use lower-case letters, digits and ' +
        'single underscores (^[a-z][a-z0-9_]*$, at most 47 characters)',
    },
  );
});

Deno.test('mixed case, digits first, underscores first and empty names are rejected', () => {
  for (const name of ['Queue', 'queueA', 'QUEUE', '1queue', '_queue', '', '9']) {
    assertRejected(name, true);
    assertRejected(name, false);
  }
});

Deno.test('unicode, quotes, $, ;, --, spaces and other punctuation are rejected', () => {
  const names = [
    'café',
    'queue_ß',
    'ｑueue',
    'queue\u200b',
    'q"x',
    "q'x",
    'q`x',
    'q$x',
    'q;drop table x',
    'q--x',
    'q-x',
    'q x',
    ' q',
    'q\n',
    'q.x',
    'q/x',
    'q\\x',
    'q\0',
  ];
  for (const name of names) {
    assertRejected(name, true);
    assertRejected(name, false);
  }
});

Deno.test('non-strings are rejected', () => {
  for (const value of [undefined, null, 42, {}, ['q']]) assertRejected(value, true);
});

Deno.test('explicit names must not contain a double underscore', () => {
  const rule =
    'explicit queue names must not contain "__", which is reserved for generated private ' +
    'queue names';
  for (const name of ['a__b', 'threads__fetch', 'a___b', 'ab__']) {
    assertRejected(name, true, rule);
    assert.equal(isValidQueueName(name, { explicit: false }), true, name);
    assertQueueName(name, { explicit: false });
  }
  assert.equal(isValidQueueName('a__b'), true, 'the default is the bare format');
});

Deno.test('the error can name where the queue was declared', () => {
  assert.throws(
    () => assertQueueName('Bad', { explicit: true, where: 'routeFlow(flow "f") step "a"' }),
    { message: /^routeFlow\(flow "f"\) step "a": queue name "Bad" is invalid: / },
  );
});

Deno.test('a plain flow queue is the lower-cased flow slug', () => {
  assert.equal(plainQueueName('communityThreadsV2'), 'communitythreadsv2');
  assert.equal(plainQueueName('diamond'), 'diamond');
  assert.equal(plainQueueName('A'.repeat(47)), 'a'.repeat(47));
  assert.throws(() => plainQueueName('bad-slug'), { name: 'InvalidSlugError' });
});

Deno.test('a step queue is lower(flow__step), else lower(flow__index), else an error', () => {
  assert.equal(stepQueueName('Threads', 'fetchAll', 0), 'threads__fetchall');
  // 20 + 2 + 25 = 47: still the name form.
  assert.equal(
    stepQueueName('f'.repeat(20), 's'.repeat(25), 1),
    `${'f'.repeat(20)}__${'s'.repeat(25)}`,
  );
  // 20 + 2 + 26 = 48: falls back to the index.
  assert.equal(stepQueueName('f'.repeat(20), 's'.repeat(26), 12), `${'f'.repeat(20)}__12`);
  // 44 + 2 + 1 = 47: the index form still fits.
  assert.equal(stepQueueName('F'.repeat(44), 'step', 7), `${'f'.repeat(44)}__7`);
  // 44 + 2 + 2 = 48: nothing fits.
  assert.throws(
    () => stepQueueName('F'.repeat(44), 'step', 10),
    (error: unknown) => {
      assert.ok(error instanceof InvalidQueueNameError);
      assert.ok(error.message.includes(`"${'f'.repeat(44)}__10"`), error.message);
      assert.ok(error.message.includes('at most 47 characters'), error.message);
      assert.ok(error.message.includes('never truncated or hashed'), error.message);
      return true;
    },
  );
});

Deno.test('generated step queue names are valid queue names but never valid explicit names', () => {
  const name = stepQueueName('threads', 'fetch', 0);
  assert.equal(isValidQueueName(name, { explicit: false }), true);
  assert.equal(isValidQueueName(name, { explicit: true }), false);
});
