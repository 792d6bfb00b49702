/**
 * Type tests of the test engine (docs/design/clock.md#the-test-engine): `deno check` passes only if
 * every
 * `@ts-expect-error` line below really is a type error (a mock's wrong output, a step without a
 * handler, an unknown step or alias, a wrong input or signal) and every other line type-checks
 * (a mock's input is its step's: the flow input, its dependencies' outputs, one element of a
 * map). The code never runs: it sits in a function the single runtime test does not call.
 */
import assert from 'node:assert/strict';
import { defineDeployedFlow, Flow, NonRetriable, RetryAfter } from '../../lib/mod.ts';
import { createTestEngine, type StepMock } from '../../lib/testing.ts';
import { registry } from './_flows.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(_proof?: T): void {}

async function typeTests(): Promise<void> {
  const engine = await createTestEngine({ registry });

  // A root step's mock gets the flow input; it returns the step's output.
  engine.mock('order', 'reserve', (input) => {
    expectType<Equal<typeof input, { order: string; cents: number }>>(true);
    return { hold: input.order };
  });
  // A step with dependencies gets their outputs by slug (a wait step's: its payload).
  const charge: StepMock<{ reserve: { hold: string }; approve: { by: string } }> = engine.mock(
    'order',
    'charge',
    (input) => ({ receipt: `${input.reserve.hold} by ${input.approve.by}` }),
  );
  expectType<Equal<typeof charge.calls[number]['input']['approve'], { by: string }>>(true);
  engine.mock('order', 'charge', (input) => Promise.resolve({ receipt: input.reserve.hold }));
  engine.mock('order', 'charge', () => {
    throw new RetryAfter(30, 'busy');
  });
  engine.mock('order', 'charge', () => {
    throw new NonRetriable('declined');
  });
  // @ts-expect-error the output must be the step's: { receipt: string }
  engine.mock('order', 'charge', () => ({ receipt: 1 }));
  // @ts-expect-error nor a promise of anything else
  engine.mock('order', 'charge', () => Promise.resolve({ receit: 'x' }));
  // @ts-expect-error the input has no such field
  engine.mock('order', 'charge', (input) => ({ receipt: input.reserve.order }));
  // @ts-expect-error a wait step has no handler to mock
  engine.mock('order', 'approve', () => ({ by: 'x' }));
  // @ts-expect-error no such step
  engine.mock('order', 'refund', () => 1);
  // @ts-expect-error no such alias
  engine.mock('orders', 'charge', () => ({ receipt: 'x' }));

  // A map step's mock gets one element and returns one element's output.
  engine.mock('squares', 'square', (n) => {
    expectType<Equal<typeof n, number>>(true);
    return n * n;
  });
  // @ts-expect-error one element's output, not the array of them
  engine.mock('squares', 'square', (n) => [n]);
  engine.mock('squares', 'sum', (input) => input.square.length);

  // Calls are typed with the step's input.
  const calls = engine.calls('flaky', 'work');
  expectType<Equal<typeof calls[number]['input'], { n: number }>>(true);
  // @ts-expect-error a sleep step has no calls
  engine.calls('nap', 'day');

  // Start takes the alias's input; output is the run's; signals take the wait's payload.
  const run = await engine.start('order', { order: 'o-1', cents: 5 });
  // @ts-expect-error cents is missing
  await engine.start('order', { order: 'o-1' });
  const output = await engine.output(run);
  expectType<Equal<typeof output, { charge: { receipt: string } }>>(true);
  await engine.signal(run, 'approve', { by: 'ana' });
  // @ts-expect-error the payload is { by: string }
  await engine.signal(run, 'approve', { by: 1 });
  // @ts-expect-error not a wait step
  await engine.signal(run, 'charge', {});

  // Several versions of one alias: a step of either, its input and output the union of theirs.
  const v1 = new Flow<{ id: string }>({ slug: 'greetV1' }).step({ slug: 'hi' }, (i) => i.id);
  const v2 = new Flow<{ id: string; lang: 'en' | 'de' }>({ slug: 'greetV2' })
    .step({ slug: 'hi' }, (i) => ({ text: i.id, lang: i.lang }))
    .step({ slug: 'log', dependsOn: ['hi'] }, () => true);
  const versions = [
    defineDeployedFlow(v1, { alias: 'greet' }),
    defineDeployedFlow(v2, { alias: 'greet' }),
  ] as const;
  const greet = await createTestEngine({ registry: versions });
  greet.mock('greet', 'hi', (input) => {
    expectType<Equal<typeof input, { id: string } | { id: string; lang: 'en' | 'de' }>>(true);
    return input.id;
  });
  greet.mock('greet', 'log', () => false);
  // @ts-expect-error neither version's output
  greet.mock('greet', 'hi', () => 42);
  await greet.close();
  await engine.close();
}

Deno.test('the test engine is typed from the registry (checked by deno check, not run)', () => {
  assert.equal(typeof typeTests, 'function');
});
