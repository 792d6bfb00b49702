/**
 * Type tests of wait and sleep steps (issue 22, docs/design/waits.md): `deno check` passes
 * only if every `@ts-expect-error` line below really is a type error and every other line
 * type-checks. The payload type reaches the step's dependents and `client.signal`; `routeFlow`
 * takes no queue for a wait or sleep step (and refuses one). The type code never runs: it sits
 * in a function the runtime tests do not call; they check the same rules at runtime.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../../lib/dsl/placement.ts';
import { FlowDefinitionError, RouteError } from '../../../lib/errors.ts';
import {
  defineDeployedFlow,
  Flow,
  routeFlow,
  signalPayload,
  type SignalSlugs,
  type StepOutputs,
  type WaitSlugs,
} from '../../../lib/mod.ts';
import { type AliasSignals, createClient, type RegistrySignals } from '../../../lib/client.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(_proof?: T): void {}

const review = new Flow<{ text: string }>({ slug: 'reviewTypes' })
  .step({ slug: 'draft' }, (input) => input.text.trim())
  .wait({
    slug: 'approval',
    dependsOn: ['draft'],
    payload: signalPayload<{ approved: boolean; by: string }>(),
    timeout: 3600,
  })
  .wait({
    slug: 'legal',
    payload: signalPayload<{ ok: boolean }>(),
    timeout: 60,
    onTimeout: 'skip',
  })
  .sleep({ slug: 'cool_off', dependsOn: ['approval'], seconds: 30 })
  .step({ slug: 'publish', dependsOn: ['draft', 'approval', 'legal', 'cool_off'] }, (input) => {
    // The payload is the step's output; onTimeout 'skip' makes it optional, a sleep's is null.
    const approved: boolean = input.approval.approved;
    const legal: boolean | undefined = input.legal?.ok;
    const slept: null = input.cool_off;
    return { approved, legal, slept, text: input.draft };
  });

async function typeTests(): Promise<void> {
  expectType<
    Equal<StepOutputs<typeof review>['approval'], { approved: boolean; by: string }>
  >();
  expectType<Equal<StepOutputs<typeof review>['legal'], { ok: boolean } | undefined>>();
  expectType<Equal<WaitSlugs<typeof review>, 'approval' | 'legal' | 'cool_off'>>();
  expectType<Equal<SignalSlugs<typeof review>, 'approval' | 'legal'>>();

  // A wait without payload marker takes any JSON.
  new Flow({ slug: 'anyPayload' }).wait({ slug: 'w' }).step(
    { slug: 'use', dependsOn: ['w'] },
    (input) => JSON.stringify(input.w),
  );
  // @ts-expect-error a wait step is a step: its slug is new to the flow
  review.wait({ slug: 'approval' });
  // @ts-expect-error dependsOn names earlier steps only
  new Flow({ slug: 'x' }).wait({ slug: 'w', dependsOn: ['nope'] });
  // @ts-expect-error onTimeout is 'fail' or 'skip'
  new Flow({ slug: 'x' }).wait({ slug: 'w', timeout: 5, onTimeout: 'skip-cascade' });
  // @ts-expect-error a sleep needs its seconds
  new Flow({ slug: 'x' }).sleep({ slug: 's' });

  // A sleep until a time: the path names a string of the run input, or of the step's input.
  const timed = new Flow<{ sendAt: string; count: number; meta: { remindAt?: string } }>({
    slug: 'timedTypes',
  })
    .sleep({ slug: 'until_send', until: { key: 'sendAt' } })
    .sleep({ slug: 'until_remind', until: { key: 'meta.remindAt', input: 'run' } })
    .wait({ slug: 'approval', payload: signalPayload<{ at: string; n: number }>() })
    .sleep({ slug: 'hold', dependsOn: ['approval'], until: { key: 'approval.at', input: 'step' } });
  expectType<Equal<StepOutputs<typeof timed>['hold'], null>>();
  expectType<Equal<SignalSlugs<typeof timed>, 'approval'>>();
  // @ts-expect-error until names a string: count is a number
  timed.sleep({ slug: 's1', until: { key: 'count' } });
  // @ts-expect-error a misspelt key
  timed.sleep({ slug: 's2', until: { key: 'sendat' } });
  // @ts-expect-error input 'step' reads the step's input: { approval }, not the run input
  timed.sleep({ slug: 's3', dependsOn: ['approval'], until: { key: 'sendAt', input: 'step' } });
  // @ts-expect-error approval.n is a number
  timed.sleep({ slug: 's4', dependsOn: ['approval'], until: { key: 'approval.n', input: 'step' } });
  // @ts-expect-error seconds or until, not both
  timed.sleep({ slug: 's5', seconds: 5, until: { key: 'sendAt' } });

  // routeFlow: only the steps with a handler take a queue.
  const routed = routeFlow(review, { queues: { draft: 'io', publish: 'io' } });
  expectType<Equal<typeof routed.queues.publish, 'io'>>();
  // @ts-expect-error a wait step uses no queue
  routeFlow(review, { queues: { draft: 'io', publish: 'io', approval: 'io' } });
  // @ts-expect-error a sleep step uses no queue
  routeFlow(review, { queues: { draft: 'io', publish: 'io', cool_off: 'io' } });
  // @ts-expect-error a step with a handler still needs one
  routeFlow(review, { queues: { draft: 'io' } });

  // The client: the registry's wait steps and their payload types.
  const registry = [defineDeployedFlow(routed, { alias: 'review' })] as const;
  expectType<
    Equal<RegistrySignals<typeof registry>, {
      approval: { approved: boolean; by: string };
      legal: { ok: boolean };
    }>
  >();
  expectType<
    Equal<AliasSignals<typeof registry, 'review'>, RegistrySignals<typeof registry>>
  >();
  const client = createClient(registry, {});
  const runId = crypto.randomUUID();
  await client.signal(runId, 'approval', { approved: true, by: 'ada' }, { key: 'k1' });
  await client.signal(runId, 'legal', { ok: false });
  // @ts-expect-error the payload has the wait step's type
  await client.signal(runId, 'approval', { approved: 'yes', by: 'ada' });
  // @ts-expect-error a step with a handler takes no signal
  await client.signal(runId, 'draft', 'text');
  // @ts-expect-error a sleep takes no signal
  await client.signal(runId, 'cool_off', null);
  const run = client.run<'review'>(runId);
  await run.signal('legal', { ok: true });
  // @ts-expect-error the handle's signal is typed by the alias too
  await run.signal('legal', { approved: true });
}

function childFlowTypes(): void {
  const enrich = defineDeployedFlow(
    new Flow<{ id: string }>({ slug: 'enrichTypes' }).step({ slug: 'lookup' }, (i) => i.id.length),
    { alias: 'enrichTypes' },
  );
  const order = new Flow<{ id: string }>({ slug: 'orderTypes' })
    .childFlow({ slug: 'enriched', flow: enrich })
    .step({ slug: 'ship', dependsOn: ['enriched'] }, (input) => input.enriched.lookup > 0);
  expectType<Equal<StepOutputs<typeof order>['enriched'], { lookup: number }>>();
  expectType<Equal<WaitSlugs<typeof order>, 'enriched'>>();
  expectType<Equal<SignalSlugs<typeof order>, never>>();
  routeFlow(order, { queues: { ship: 'io' } });
  // @ts-expect-error a flow step uses no queue
  routeFlow(order, { queues: { ship: 'io', enriched: 'io' } });
  // @ts-expect-error the step's input must be the child flow's input
  new Flow<{ other: number }>({ slug: 'bad' }).childFlow({ slug: 'c', flow: enrich });
  // @ts-expect-error a flow step needs a deployment, not a bare flow
  new Flow<{ id: string }>({ slug: 'bad2' }).childFlow({ slug: 'c', flow: enrich.flow });
}

Deno.test('wait and sleep steps: the types above check; the same rules hold at runtime', () => {
  assert.equal(typeof childFlowTypes, 'function');
  assert.equal(typeof typeTests, 'function');
  const placement = toPlacement(routeFlow(review, { queues: { draft: 'io', publish: 'io' } }));
  assert.deepEqual(
    placement.shape.steps.map((s) => [s.slug, s.kind, s.queue]),
    [
      ['draft', 'single', 'io'],
      ['approval', 'wait', null],
      ['legal', 'wait', null],
      ['cool_off', 'sleep', null],
      ['publish', 'single', 'io'],
    ],
  );
  assert.deepEqual(placement.shape.steps[2].options.waitTimeout, 60);
  assert.deepEqual(placement.shape.steps[2].options.onTimeout, 'skip');
  assert.deepEqual(placement.queues(), ['io']);
  assert.throws(() => placement.queueOf('approval'), RouteError);
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => routeFlow(review, { queues: { draft: 'io', publish: 'io', approval: 'io' } as any }),
    (e) => e instanceof RouteError && /wait step "approval".*uses no queue/.test(e.message),
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => new Flow({ slug: 'x' }).wait({ slug: 'w', onTimeout: 'skip' } as any),
    (e) => e instanceof FlowDefinitionError && /onTimeout needs a timeout/.test(e.message),
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => new Flow({ slug: 'x' }).sleep({ slug: 's' } as any),
    (e) =>
      e instanceof FlowDefinitionError && /needs exactly one of seconds and until/.test(e.message),
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => new Flow({ slug: 'x' }).sleep({ slug: 's', seconds: 5, until: { key: 'at' } } as any),
    (e) =>
      e instanceof FlowDefinitionError && /needs exactly one of seconds and until/.test(e.message),
  );
  for (const bad of [{ key: '' }, { key: 'a..b' }, { key: 'at', input: 'flow' }, 'at', { at: 1 }]) {
    assert.throws(
      // deno-lint-ignore no-explicit-any
      () => new Flow({ slug: 'x' }).sleep({ slug: 's', until: bad } as any),
      (e) =>
        e instanceof FlowDefinitionError &&
        /flow "x" sleep step "s" option until .* is invalid: pass \{ key, input\? \}/.test(
          e.message,
        ),
      JSON.stringify(bad),
    );
  }
  // The shape carries the path as keys, and no waitTimeout.
  const until = toPlacement(
    new Flow<{ at: { time: string } }>({ slug: 'x' }).sleep({
      slug: 's',
      until: { key: 'at.time' },
    }),
  ).shape.steps[0].options;
  assert.deepEqual(
    [until.waitTimeout, until.sleepUntil],
    [null, { key: ['at', 'time'], input: 'run' }],
  );
  assert.throws(
    () => new Flow({ slug: 'x' }).wait({ slug: 'w', timeout: 0 }),
    (e) => e instanceof FlowDefinitionError && /timeout 0 is invalid/.test(e.message),
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => new Flow({ slug: 'x' }).wait({ slug: 'w', payload: { approved: true } } as any),
    (e) => e instanceof FlowDefinitionError && /signalPayload/.test(e.message),
  );
  // A plain flow's shape: the waits have no queue, the other steps the flow's.
  const plain = toPlacement(review).shape;
  assert.deepEqual(plain.steps.map((s) => s.queue), [
    'reviewtypes',
    null,
    null,
    null,
    'reviewtypes',
  ]);
});
