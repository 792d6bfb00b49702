import assert from 'node:assert/strict';

import { defineDeployedFlow } from '../../../lib/dsl/deployed_flow.ts';
import {
  FlowDefinitionError,
  InvalidInputError,
  InvalidQueueNameError,
  InvalidSlugError,
  RouteError,
  SwitchyardError,
  UnstorableValueError,
} from '../../../lib/errors.ts';
import { type AnyFlow, Flow } from '../../../lib/dsl/flow.ts';
import type { StepContext } from '../../../lib/dsl/context.ts';
import { flowShape, toPlacement } from '../../../lib/dsl/placement.ts';
import { routeFlow } from '../../../lib/dsl/route_flow.ts';
import { assertFlowSlug, assertStepSlug } from '../../../lib/dsl/slugs.ts';
import { assertJson } from '../../../lib/dsl/json.ts';
import { withStepQueues } from '../../../lib/dsl/with_step_queues.ts';

const SLUG_RULE = 'start with a letter and use letters, digits and single underscores, with no ' +
  'trailing underscore (^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$, at most 47 characters)';

/** Asserts `fn` throws an instance of `type` whose message contains every fragment. */
function assertThrowsWith(
  fn: () => unknown,
  type: abstract new (...args: never[]) => Error,
  ...fragments: string[]
): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
    assert.ok(error instanceof SwitchyardError, 'every error extends SwitchyardError');
    for (const fragment of fragments) {
      assert.ok(error.message.includes(fragment), `"${error.message}" lacks "${fragment}"`);
    }
    return true;
  });
}

function context(stepSlug: string, flowInput: unknown): StepContext<unknown> {
  return {
    runId: '00000000-0000-0000-0000-000000000001',
    flowSlug: 'diamond',
    stepSlug,
    taskIndex: 0,
    attempt: 1,
    flowInput,
    signal: new AbortController().signal,
    deadline: Infinity,
    checkpoint: () => Promise.reject(new Error('no database in DSL tests')),
    progress: () => Promise.reject(new Error('no database in DSL tests')),
    resume: () => Promise.resolve(undefined),
    clearCheckpoint: () => Promise.resolve(false),
    env: { get: () => undefined },
    sql: (() => {
      throw new Error('no database in DSL tests');
    }) as unknown as StepContext<unknown>['sql'],
  };
}

function diamond() {
  return new Flow<{ n: number }>({ slug: 'diamond' })
    .step({ slug: 'a' }, (input) => ({ n: input.n + 1 }))
    .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a.n * 2)
    .step({ slug: 'c', dependsOn: ['a'] }, (input) => input.a.n * 3)
    .step(
      { slug: 'd', dependsOn: ['b', 'c'] },
      async (input) => ({ sum: await Promise.resolve(input.b + input.c) }),
    );
}

// --- Flow builder ---------------------------------------------------------------------------

Deno.test('step() returns a new flow and leaves the original unchanged', () => {
  const base = new Flow<{ n: number }>({ slug: 'base' });
  const one = base.step({ slug: 'a' }, () => 1);
  const two = one.step({ slug: 'b' }, () => 2);
  const other = one.step({ slug: 'c', dependsOn: ['a'] }, () => 3);

  assert.notEqual(base, one);
  assert.equal(base.steps.length, 0);
  assert.deepEqual(one.steps.map((s) => s.slug), ['a']);
  assert.deepEqual(two.steps.map((s) => s.slug), ['a', 'b']);
  assert.deepEqual(other.steps.map((s) => s.slug), ['a', 'c']);
  assert.equal(one.steps[0], two.steps[0], 'step definitions are shared, not copied');
  assert.equal(two.slug, 'base');
});

Deno.test('flows, steps and options are frozen', () => {
  const flow = diamond();
  assert.ok(Object.isFrozen(flow));
  assert.ok(Object.isFrozen(flow.steps));
  assert.ok(Object.isFrozen(flow.options));
  assert.ok(Object.isFrozen(flow.steps[0]));
  assert.ok(Object.isFrozen(flow.steps[0].options));
  assert.ok(Object.isFrozen(flow.steps[3].dependsOn));
  assert.throws(() => (flow.steps as unknown[]).push({}), TypeError);
});

Deno.test('flow options default to maxAttempts 3, baseDelay 1, maxDelay 86400, timeout 60', () => {
  const flow = new Flow({ slug: 'f' });
  assert.equal(flow.kind, 'flow');
  assert.deepEqual(flow.options, { maxAttempts: 3, baseDelay: 1, maxDelay: 86400, timeout: 60 });
  const custom = new Flow({ slug: 'g', maxAttempts: 1, baseDelay: 0, maxDelay: 0, timeout: 86400 });
  assert.deepEqual(custom.options, { maxAttempts: 1, baseDelay: 0, maxDelay: 0, timeout: 86400 });
  assert.deepEqual(custom.step({ slug: 'a' }, () => 1).options, custom.options);
});

Deno.test('step options are null (inherit) unless given, startDelay defaults to 0', () => {
  const flow = new Flow({ slug: 'f' })
    .step({ slug: 'a' }, () => 1)
    .step({
      slug: 'b',
      maxAttempts: 1000,
      baseDelay: 0,
      maxDelay: 604800,
      timeout: 1,
      startDelay: 86400,
    }, () => 2);
  const noCondition = { if: null, ifNot: null, whenUnmet: 'skip', whenExhausted: 'fail' };
  assert.deepEqual(flow.steps[0].options, {
    maxAttempts: null,
    baseDelay: null,
    maxDelay: null,
    timeout: null,
    startDelay: 0,
    ...noCondition,
  });
  assert.deepEqual(flow.steps[1].options, {
    maxAttempts: 1000,
    baseDelay: 0,
    maxDelay: 604800,
    timeout: 1,
    startDelay: 86400,
    ...noCondition,
  });
});

Deno.test('steps know their index and dependencies in the order given', () => {
  const flow = diamond();
  assert.deepEqual(
    flow.steps.map((s) => [s.slug, s.index, [...s.dependsOn]]),
    [['a', 0, []], ['b', 1, ['a']], ['c', 2, ['a']], ['d', 3, ['b', 'c']]],
  );
  assert.equal(flow.getStep('c')?.index, 2);
  assert.equal(flow.getStep('C'), undefined, 'getStep matches exactly');
  assert.equal(flow.getStep('zzz'), undefined);
  const root = new Flow({ slug: 'f' }).step({ slug: 'a', dependsOn: [] }, () => 1);
  assert.deepEqual(root.steps[0].dependsOn, []);
});

Deno.test('handlers run with the typed input the worker builds', async () => {
  const flow = diamond();
  const [a, b, c, d] = flow.steps;
  const outA = a.handler({ n: 1 }, context('a', { n: 1 }));
  assert.deepEqual(outA, { n: 2 });
  const outB = b.handler({ a: outA }, context('b', { n: 1 }));
  const outC = c.handler({ a: outA }, context('c', { n: 1 }));
  assert.equal(outB, 4);
  assert.equal(outC, 6);
  assert.deepEqual(await d.handler({ b: outB, c: outC }, context('d', { n: 1 })), { sum: 10 });
});

Deno.test('handlers receive the context', () => {
  let seen: StepContext<{ id: string }> | undefined;
  const flow = new Flow<{ id: string }>({ slug: 'ctx' }).step({ slug: 'a' }, (_input, ctx) => {
    seen = ctx;
    return ctx.flowInput.id;
  });
  const ctx = context('a', { id: 'x' });
  assert.equal(flow.steps[0].handler({ id: 'x' }, ctx), 'x');
  assert.equal(seen, ctx);
});

// --- Definition errors ----------------------------------------------------------------------

Deno.test('invalid flow slugs are rejected with the value and the rule', () => {
  const bad = [
    '',
    'my-flow',
    '1flow',
    '_flow',
    'flow_',
    'a__b',
    'flow name',
    'café',
    'x'.repeat(48),
  ];
  for (const slug of bad) {
    assertThrowsWith(() => new Flow({ slug }), InvalidSlugError, JSON.stringify(slug), SLUG_RULE);
  }
  assertThrowsWith(
    () => new Flow({ slug: 42 as unknown as string }),
    InvalidSlugError,
    'flow slug 42',
  );
  new Flow({ slug: 'x'.repeat(47) });
  new Flow({ slug: 'communityThreadsV2' });
  new Flow({ slug: 'a_1_b' });
  assert.throws(() => assertFlowSlug('my-flow'), (error: unknown) => {
    assert.ok(error instanceof InvalidSlugError);
    assert.equal(error.value, 'my-flow');
    assert.equal(error.rule, SLUG_RULE);
    assert.equal(error.message, `flow slug "my-flow" is invalid: ${SLUG_RULE}`);
    return true;
  });
});

Deno.test('invalid step slugs are rejected with the value and the rule', () => {
  const flow = new Flow({ slug: 'f' });
  for (const slug of ['', 'my-step', '2step', 'step_', 'a__b', 'x'.repeat(48)]) {
    assertThrowsWith(
      () => flow.step({ slug } as { slug: 'x' }, () => 1),
      InvalidSlugError,
      `step slug ${JSON.stringify(slug)} is invalid`,
      SLUG_RULE,
    );
  }
  assertStepSlug('x'.repeat(47));
});

Deno.test('the step slug run is reserved in any case', () => {
  const flow = new Flow({ slug: 'f' });
  for (const slug of ['run', 'Run', 'RUN']) {
    assertThrowsWith(
      () => flow.step({ slug } as { slug: 'x' }, () => 1),
      FlowDefinitionError,
      `"${slug}"`,
      'reserved',
    );
  }
  flow.step({ slug: 'runner' }, () => 1);
  flow.step({ slug: 'run_1' }, () => 1);
});

Deno.test('duplicate step slugs are rejected case-insensitively', () => {
  const flow = new Flow({ slug: 'f' }).step({ slug: 'fetch' }, () => 1);
  for (const slug of ['fetch', 'Fetch', 'FETCH']) {
    assertThrowsWith(
      () => flow.step({ slug } as { slug: 'x' }, () => 1),
      FlowDefinitionError,
      `step "${slug}" is a duplicate of step "fetch"`,
      'unique case-insensitively',
    );
  }
});

Deno.test('unknown, misspelled and repeated dependencies are rejected', () => {
  const flow = new Flow({ slug: 'f' }).step({ slug: 'a' }, () => 1);
  assertThrowsWith(
    () => flow.step({ slug: 'b', dependsOn: ['zzz'] as unknown as ['a'] }, () => 1),
    FlowDefinitionError,
    'step "b" depends on unknown step "zzz"',
    'steps added earlier',
    'known steps: "a"',
  );
  assertThrowsWith(
    () => flow.step({ slug: 'b', dependsOn: ['A'] as unknown as ['a'] }, () => 1),
    FlowDefinitionError,
    'unknown step "A"',
    'did you mean "a"?',
  );
  assertThrowsWith(
    () => flow.step({ slug: 'b', dependsOn: ['a', 'a'] }, () => 1),
    FlowDefinitionError,
    'dependency "a" twice',
  );
  assertThrowsWith(
    () => flow.step({ slug: 'b', dependsOn: 'a' as unknown as ['a'] }, () => 1),
    FlowDefinitionError,
    'dependsOn "a" is invalid',
  );
  assertThrowsWith(
    () => new Flow({ slug: 'g' }).step({ slug: 'a', dependsOn: ['a'] as never }, () => 1),
    FlowDefinitionError,
    'unknown step "a"',
    'known steps: none',
  );
});

Deno.test('invalid option values are rejected with the value and the rule', () => {
  const cases: [string, unknown, string][] = [
    ['maxAttempts', 0, 'an integer from 1 to 1000'],
    ['maxAttempts', 1001, 'an integer from 1 to 1000'],
    ['maxAttempts', 1.5, 'an integer from 1 to 1000'],
    ['maxAttempts', '3', 'an integer from 1 to 1000'],
    ['maxAttempts', NaN, 'an integer from 1 to 1000'],
    ['baseDelay', -1, 'an integer from 0 to 86400 seconds'],
    ['baseDelay', 86401, 'an integer from 0 to 86400 seconds'],
    ['maxDelay', -1, 'an integer from 0 to 604800 seconds'],
    ['maxDelay', 604801, 'an integer from 0 to 604800 seconds'],
    ['timeout', 0, 'an integer from 1 to 86400 seconds'],
    ['timeout', Infinity, 'an integer from 1 to 86400 seconds'],
    ['timeout', null, 'an integer from 1 to 86400 seconds'],
  ];
  for (const [name, value, rule] of cases) {
    const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
    assertThrowsWith(
      () => new Flow({ slug: 'f', [name]: value }),
      FlowDefinitionError,
      `flow "f" option ${name} ${shown} is invalid`,
      rule,
    );
    assertThrowsWith(
      () => new Flow({ slug: 'f' }).step({ slug: 'a', [name]: value }, () => 1),
      FlowDefinitionError,
      `flow "f" step "a" option ${name} ${shown} is invalid`,
      rule,
    );
  }
  for (const value of [-1, 86401, 0.5]) {
    assertThrowsWith(
      () => new Flow({ slug: 'f' }).step({ slug: 'a', startDelay: value }, () => 1),
      FlowDefinitionError,
      `option startDelay ${value} is invalid`,
      'an integer from 0 to 86400 seconds',
    );
  }
});

Deno.test('unknown option keys, startDelay on a flow and a missing handler are rejected', () => {
  assertThrowsWith(
    () => new Flow({ slug: 'f', startDelay: 1 } as never),
    FlowDefinitionError,
    'flow "f" option "startDelay" is unknown',
  );
  assertThrowsWith(
    () => new Flow({ slug: 'f' }).step({ slug: 'a', retries: 3 } as never, () => 1),
    FlowDefinitionError,
    'option "retries" is unknown',
  );
  assertThrowsWith(
    () => new Flow({ slug: 'f' }).step({ slug: 'a' }, undefined as never),
    FlowDefinitionError,
    'step "a" handler undefined is invalid: pass a function',
  );
  assertThrowsWith(
    () => new Flow(undefined as never),
    FlowDefinitionError,
    'flow options undefined are invalid',
  );
});

// --- withStepQueues -------------------------------------------------------------------------

Deno.test('conditions: patterns are JSON, modes are checked, whenUnmet needs a condition', () => {
  const f = new Flow<Record<string, unknown>>({ slug: 'f' });
  const pattern = { plan: 'pro', tags: ['a'] };
  const flow = f.step(
    { slug: 'a', if: pattern, ifNot: { banned: true }, whenUnmet: 'fail' },
    () => 1,
  );
  assert.deepEqual(flow.steps[0].options, {
    maxAttempts: null,
    baseDelay: null,
    maxDelay: null,
    timeout: null,
    startDelay: 0,
    if: { plan: 'pro', tags: ['a'] },
    ifNot: { banned: true },
    whenUnmet: 'fail',
    whenExhausted: 'fail',
  });
  pattern.plan = 'free';
  assert.deepEqual(flow.steps[0].options.if, { plan: 'pro', tags: ['a'] }, 'the pattern is copied');
  assert.ok(Object.isFrozen(flow.steps[0].options.if), 'and frozen');
  assert.equal(
    f.step({ slug: 'b', whenExhausted: 'skip' }, () => 1).steps[0].options.whenExhausted,
    'skip',
  );
  assertThrowsWith(
    () => f.step({ slug: 'a', if: { x: 1 }, whenUnmet: 'maybe' as never }, () => 1),
    FlowDefinitionError,
    'flow "f" step "a" option whenUnmet "maybe" is invalid',
    "'skip', 'skip-cascade', 'fail'",
  );
  assertThrowsWith(
    () => f.step({ slug: 'a', whenExhausted: 'retry' as never }, () => 1),
    FlowDefinitionError,
    "option whenExhausted \"retry\" is invalid: use one of 'fail', 'skip', 'skip-cascade'",
  );
  assertThrowsWith(
    () => f.step({ slug: 'a', whenUnmet: 'skip' }, () => 1),
    FlowDefinitionError,
    'option whenUnmet needs a condition: add if or ifNot',
  );
  assertThrowsWith(
    () => f.step({ slug: 'a', if: null as never }, () => 1),
    FlowDefinitionError,
    'option if null is invalid: a condition is a JSON pattern',
  );
  assertThrowsWith(
    () => f.step({ slug: 'a', ifNot: { when: new Date() } as never }, () => 1),
    FlowDefinitionError,
    'flow "f" step "a" option ifNot.when is not JSON',
  );
});

Deno.test('the shape carries conditions', () => {
  const flow = new Flow<{ plan: string }>({ slug: 'cond' })
    .step(
      { slug: 'a', if: { plan: 'pro' }, whenUnmet: 'skip-cascade', whenExhausted: 'skip' },
      () => 1,
    );
  assert.equal(
    JSON.stringify(toPlacement(flow).shape.steps[0].options),
    '{"maxAttempts":null,"baseDelay":null,"maxDelay":null,"timeout":null,"startDelay":0,' +
      '"if":{"plan":"pro"},' +
      '"ifNot":null,"whenUnmet":"skip-cascade","whenExhausted":"skip"}',
  );
});

/** Calls map() past its types, as plain JavaScript could. */
function untypedMap(flow: AnyFlow, config: unknown, handler: unknown): unknown {
  return (flow.map as (config: unknown, handler: unknown) => unknown).call(flow, config, handler);
}

Deno.test('map steps: kind map, array becomes the one dependency, the options of a step', async () => {
  const flow = new Flow<{ urls: string[] }>({ slug: 'crawl' })
    .step({ slug: 'urls' }, (input) => input.urls)
    .map({ slug: 'fetch', array: 'urls', maxAttempts: 5 }, (url) => url.length);
  const fetchStep = flow.getStep('fetch')!;
  assert.equal(fetchStep.kind, 'map');
  assert.equal(flow.getStep('urls')?.kind, 'single');
  assert.deepEqual(fetchStep.dependsOn, ['urls']);
  assert.equal(fetchStep.options.maxAttempts, 5);
  assert.ok(Object.isFrozen(fetchStep));
  assert.equal(
    await fetchStep.handler('abc', context('fetch', {})),
    3,
    'the handler takes one element',
  );
  const root = new Flow<number[]>({ slug: 'nums' }).map({ slug: 'double' }, (n) => n * 2);
  assert.deepEqual(root.steps[0].dependsOn, []);
  assert.deepEqual(routeFlow(flow, { queues: { urls: 'io', fetch: 'io' } }).queues, {
    urls: 'io',
    fetch: 'io',
  });
  assertThrowsWith(
    () => routeFlow(flow, { queues: { urls: 'io' } } as never),
    RouteError,
    'fetch',
  );
  assertThrowsWith(
    () => untypedMap(flow, { slug: 'm', array: 'nope' }, (x: unknown) => x),
    FlowDefinitionError,
    'flow "crawl" map step "m" array "nope" is invalid: name an earlier step',
    'known steps: "urls", "fetch"',
  );
  assertThrowsWith(
    () => untypedMap(flow, { slug: 'm', dependsOn: ['urls'] }, (x: unknown) => x),
    FlowDefinitionError,
    'option "dependsOn" is unknown',
  );
  assertThrowsWith(
    () => untypedMap(flow, { slug: 'fetch', array: 'urls' }, (x: unknown) => x),
    FlowDefinitionError,
    'duplicate of step "fetch"',
  );
  assertThrowsWith(
    () => flow.map({ slug: 'm', array: 'urls', timeout: 0 }, (x) => x),
    FlowDefinitionError,
    'option timeout 0 is invalid',
  );
  assertThrowsWith(
    () => untypedMap(flow, { slug: 'm', array: 'urls' }, 'nope'),
    FlowDefinitionError,
    'handler "nope" is invalid',
  );
});

Deno.test('withStepQueues places each step on lower(flow__step)', () => {
  const flow = new Flow({ slug: 'communityThreads' })
    .step({ slug: 'fetch' }, () => 1)
    .step({ slug: 'classifyAll', dependsOn: ['fetch'] }, () => 2);
  const placed = withStepQueues(flow);
  assert.equal(placed.kind, 'step_queues');
  assert.equal(placed.flow, flow);
  assert.deepEqual(placed.queues, {
    fetch: 'communitythreads__fetch',
    classifyAll: 'communitythreads__classifyall',
  });
  assert.ok(Object.isFrozen(placed) && Object.isFrozen(placed.queues));
});

Deno.test('withStepQueues falls back to the step index when flow__step exceeds 47', () => {
  const flowSlug = 'f'.repeat(30);
  const flow = new Flow({ slug: flowSlug })
    .step({ slug: 's'.repeat(15) }, () => 1) // 30 + 2 + 15 = 47
    .step({ slug: 't'.repeat(16) }, () => 2); // 30 + 2 + 16 = 48
  const placed = withStepQueues(flow);
  assert.equal(placed.queues['s'.repeat(15)], `${flowSlug}__${'s'.repeat(15)}`);
  assert.equal(placed.queues['t'.repeat(16)], `${flowSlug}__1`);
});

Deno.test('withStepQueues throws when even flow__index exceeds 47', () => {
  const flow = new Flow({ slug: 'F'.repeat(45) }).step({ slug: 'step' }, () => 1);
  assertThrowsWith(
    () => withStepQueues(flow),
    InvalidQueueNameError,
    `"${'f'.repeat(45)}__0"`,
    'at most 47 characters',
    'never truncated or hashed',
  );
  assertThrowsWith(
    () => withStepQueues(withStepQueues(new Flow({ slug: 'f' })) as never),
    RouteError,
    'pass a Flow',
  );
});

// --- routeFlow ------------------------------------------------------------------------------

Deno.test('routeFlow places steps on explicit queues, shared between steps', () => {
  const flow = diamond();
  const routed = routeFlow(flow, { queues: { a: 'io', b: 'cpu', c: 'cpu', d: 'io' } });
  assert.equal(routed.kind, 'routed');
  assert.equal(routed.flow, flow);
  assert.deepEqual(routed.queues, { a: 'io', b: 'cpu', c: 'cpu', d: 'io' });
  assert.ok(Object.isFrozen(routed) && Object.isFrozen(routed.queues));
  assert.equal(flow.steps.length, 4, 'the flow is not modified');
});

Deno.test('routeFlow copies the queues map in step order', () => {
  const queues = { d: 'q4', c: 'q3', b: 'q2', a: 'q1' };
  const routed = routeFlow(diamond(), { queues });
  assert.notEqual(routed.queues, queues);
  assert.deepEqual(Object.keys(routed.queues), ['a', 'b', 'c', 'd']);
  queues.a = 'changed';
  assert.equal(routed.queues.a, 'q1');
});

Deno.test('routeFlow rejects a missing step key', () => {
  assertThrowsWith(
    () => routeFlow(diamond(), { queues: { a: 'io', b: 'io' } as never }),
    RouteError,
    'routeFlow(flow "diamond")',
    'misses step "c", "d"',
    'every step must be routed',
  );
});

Deno.test('routeFlow rejects an unknown step key and points out a near miss', () => {
  assertThrowsWith(
    () =>
      routeFlow(diamond(), { queues: { a: 'io', b: 'io', c: 'io', d: 'io', e: 'io' } as never }),
    RouteError,
    'unknown step "e"',
    'list exactly the flow\'s steps ("a", "b", "c", "d")',
  );
  assertThrowsWith(
    () => routeFlow(diamond(), { queues: { A: 'io', b: 'io', c: 'io', d: 'io' } as never }),
    RouteError,
    '"A" (did you mean "a"?)',
  );
  assertThrowsWith(
    () => routeFlow(diamond(), {} as never),
    RouteError,
    'queues undefined is invalid',
  );
});

Deno.test('routeFlow rejects an invalid queue name with the rule', () => {
  assertThrowsWith(
    () =>
      routeFlow(diamond(), {
        queues: { a: 'Classify-Threads', b: 'io', c: 'io', d: 'io' } as never,
      }),
    InvalidQueueNameError,
    'routeFlow(flow "diamond") step "a": queue name "Classify-Threads" is invalid: use lower-case ' +
      'letters, digits and single underscores (^[a-z][a-z0-9_]*$, at most 47 characters)',
  );
  assertThrowsWith(
    () =>
      routeFlow(diamond(), { queues: { a: 'io', b: 'q'.repeat(48), c: 'io', d: 'io' } as never }),
    InvalidQueueNameError,
    'step "b"',
    'at most 47 characters',
  );
  assertThrowsWith(
    () => routeFlow(diamond(), { queues: { a: 'io', b: 'io', c: 42, d: 'io' } as never }),
    InvalidQueueNameError,
    'queue name 42 is invalid',
  );
});

Deno.test('routeFlow rejects explicit names with a double underscore', () => {
  assertThrowsWith(
    () => routeFlow(diamond(), { queues: { a: 'io', b: 'io', c: 'io', d: 'diamond__d' } as never }),
    InvalidQueueNameError,
    'queue name "diamond__d" is invalid',
    'must not contain "__"',
  );
});

Deno.test('one flow can be routed several ways without changing it', () => {
  const flow = diamond();
  const one = routeFlow(flow, { queues: { a: 'q', b: 'q', c: 'q', d: 'q' } });
  const two = routeFlow(flow, { queues: { a: 'x', b: 'y', c: 'y', d: 'x' } });
  assert.equal(one.flow, two.flow);
  assert.deepEqual(toPlacement(one).queues(), ['q']);
  assert.deepEqual(toPlacement(two).queues(), ['x', 'y']);
});

// --- defineDeployedFlow ---------------------------------------------------------------------

Deno.test('defineDeployedFlow returns a distinct frozen object for every kind', () => {
  const flow = diamond();
  const routed = routeFlow(flow, { queues: { a: 'io', b: 'io', c: 'io', d: 'io' } });
  const stepQueued = withStepQueues(flow);
  for (const placed of [flow, routed, stepQueued]) {
    const deployed = defineDeployedFlow(placed, { alias: 'diamondAlias' });
    assert.equal(deployed.kind, 'deployed');
    assert.equal(deployed.alias, 'diamondAlias');
    assert.equal(deployed.placed, placed);
    assert.equal(deployed.flow, flow);
    assert.notEqual(deployed as object, placed as object);
    assert.ok(Object.isFrozen(deployed));
  }
  assert.equal(flow.steps.length, 4);
  assert.equal((routed as { alias?: string }).alias, undefined, 'the routed flow is not mutated');
});

Deno.test('defineDeployedFlow validates the alias like a flow slug', () => {
  for (const alias of ['bad-alias', '', 'a__b', 'x'.repeat(48)]) {
    assertThrowsWith(
      () => defineDeployedFlow(diamond(), { alias } as { alias: 'x' }),
      InvalidSlugError,
      `alias ${JSON.stringify(alias)} is invalid`,
      SLUG_RULE,
    );
  }
  const deployed = defineDeployedFlow(diamond(), { alias: 'x' });
  assertThrowsWith(
    () => defineDeployedFlow(deployed as never, { alias: 'y' }),
    RouteError,
    'cannot be deployed again',
  );
});

// --- toPlacement and FlowShape --------------------------------------------------------------

Deno.test('toPlacement normalizes plain, step-queued, routed and deployed flows', () => {
  const flow = diamond();
  const plain = toPlacement(flow);
  assert.equal(plain.kind, 'plain');
  assert.equal(plain.alias, null);
  assert.equal(plain.flow, flow);
  assert.equal(plain.queueOf('d'), 'diamond');
  assert.deepEqual(plain.queues(), ['diamond']);

  const stepQueued = toPlacement(withStepQueues(flow));
  assert.equal(stepQueued.kind, 'step_queues');
  assert.equal(stepQueued.queueOf('b'), 'diamond__b');
  assert.deepEqual(stepQueued.queues(), ['diamond__a', 'diamond__b', 'diamond__c', 'diamond__d']);

  const routed = toPlacement(
    routeFlow(flow, { queues: { a: 'zeta', b: 'alpha', c: 'alpha', d: 'zeta' } }),
  );
  assert.equal(routed.kind, 'routed');
  assert.equal(routed.alias, null);
  assert.equal(routed.queueOf('c'), 'alpha');
  assert.deepEqual(routed.queues(), ['alpha', 'zeta']);

  const deployed = toPlacement(
    defineDeployedFlow(routeFlow(flow, { queues: { a: 'q', b: 'q', c: 'q', d: 'q' } }), {
      alias: 'dia',
    }),
  );
  assert.equal(deployed.kind, 'routed');
  assert.equal(deployed.alias, 'dia');
  assert.equal(deployed.flow, flow);

  const deployedPlain = toPlacement(defineDeployedFlow(flow, { alias: 'diamond' }));
  assert.equal(deployedPlain.kind, 'plain');
  assert.equal(deployedPlain.alias, 'diamond');
});

Deno.test('placement queues() returns a fresh sorted copy and queueOf rejects unknown steps', () => {
  const placement = toPlacement(diamond());
  placement.queues().push('tampered');
  assert.deepEqual(placement.queues(), ['diamond']);
  assertThrowsWith(
    () => placement.queueOf('zzz'),
    RouteError,
    'step "zzz" is not a step of flow "diamond"',
  );
  assertThrowsWith(
    () => toPlacement({ kind: 'nope' } as never),
    RouteError,
    'toPlacement(an object)',
  );
});

Deno.test('toPlacement re-checks hand-made placements', () => {
  const flow = diamond();
  assertThrowsWith(
    () => toPlacement({ kind: 'routed', flow, queues: { a: 'Q', b: 'q', c: 'q', d: 'q' } }),
    InvalidQueueNameError,
    'queue name "Q"',
  );
  assertThrowsWith(
    () => toPlacement({ kind: 'routed', flow, queues: { a: 'q' } } as never),
    RouteError,
    'misses step',
  );
});

function expectedShape(placement: string, queues: Record<string, string>): unknown {
  const inherit = {
    maxAttempts: null,
    baseDelay: null,
    maxDelay: null,
    timeout: null,
    startDelay: 0,
    if: null,
    ifNot: null,
    whenUnmet: 'skip',
    whenExhausted: 'fail',
  };
  return {
    slug: 'diamond',
    placement,
    options: { maxAttempts: 3, baseDelay: 1, maxDelay: 86400, timeout: 60 },
    steps: [
      { slug: 'a', index: 0, kind: 'single', dependsOn: [], queue: queues.a, options: inherit },
      { slug: 'b', index: 1, kind: 'single', dependsOn: ['a'], queue: queues.b, options: inherit },
      { slug: 'c', index: 2, kind: 'single', dependsOn: ['a'], queue: queues.c, options: inherit },
      {
        slug: 'd',
        index: 3,
        kind: 'single',
        dependsOn: ['b', 'c'],
        queue: queues.d,
        options: inherit,
      },
    ],
  };
}

Deno.test('the diamond shape of a plain flow is exact, key order included', () => {
  const shape = toPlacement(diamond()).shape;
  const expected = expectedShape('plain', {
    a: 'diamond',
    b: 'diamond',
    c: 'diamond',
    d: 'diamond',
  });
  assert.deepEqual(shape, expected);
  assert.equal(JSON.stringify(shape), JSON.stringify(expected));
  assert.equal(
    JSON.stringify(shape.steps[0]),
    '{"slug":"a","index":0,"kind":"single","dependsOn":[],"queue":"diamond","options":' +
      '{"maxAttempts":null,"baseDelay":null,"maxDelay":null,"timeout":null,"startDelay":0,' +
      '"if":null,"ifNot":null,"whenUnmet":"skip","whenExhausted":"fail"}}',
  );
});

Deno.test('the diamond shape with step queues is exact, key order included', () => {
  const shape = toPlacement(withStepQueues(diamond())).shape;
  const expected = expectedShape('step_queues', {
    a: 'diamond__a',
    b: 'diamond__b',
    c: 'diamond__c',
    d: 'diamond__d',
  });
  assert.deepEqual(shape, expected);
  assert.equal(JSON.stringify(shape), JSON.stringify(expected));
});

Deno.test('the diamond shape of a routed flow is exact, key order included', () => {
  const routed = routeFlow(diamond(), { queues: { a: 'io', b: 'cpu', c: 'cpu', d: 'io' } });
  const shape = toPlacement(defineDeployedFlow(routed, { alias: 'diamondAlias' })).shape;
  const expected = expectedShape('routed', { a: 'io', b: 'cpu', c: 'cpu', d: 'io' });
  assert.deepEqual(shape, expected);
  assert.equal(JSON.stringify(shape), JSON.stringify(expected));
  assert.equal(JSON.stringify(flowShape(toPlacement(routed))), JSON.stringify(expected));
});

Deno.test('the shape carries resolved flow options and explicit step options', () => {
  const flow = new Flow({ slug: 'opts', maxAttempts: 7, timeout: 30 })
    .step({ slug: 'a', baseDelay: 5, startDelay: 10 }, () => 1);
  const shape = toPlacement(flow).shape;
  assert.equal(
    JSON.stringify(shape),
    '{"slug":"opts","placement":"plain","options":{"maxAttempts":7,"baseDelay":1,' +
      '"maxDelay":86400,"timeout":30},"steps":[{"slug":"a","index":0,"kind":"single",' +
      '"dependsOn":[],"queue":"opts","options":{"maxAttempts":null,"baseDelay":5,' +
      '"maxDelay":null,"timeout":null,"startDelay":10,"if":null,"ifNot":null,' +
      '"whenUnmet":"skip","whenExhausted":"fail"}}]}',
  );
  assert.ok(Object.isFrozen(shape) && Object.isFrozen(shape.steps[0].options));
});

Deno.test('a flow with an upper-case slug keeps its slug and lower-cases its queue', () => {
  const flow: AnyFlow = new Flow({ slug: 'CommunityThreadsV2' }).step({ slug: 'Fetch' }, () => 1);
  const shape = toPlacement(withStepQueues(flow)).shape;
  assert.equal(shape.slug, 'CommunityThreadsV2');
  assert.equal(shape.steps[0].slug, 'Fetch');
  assert.equal(shape.steps[0].queue, 'communitythreadsv2__fetch');
  assert.equal(toPlacement(flow).queueOf('Fetch'), 'communitythreadsv2');
});

// --- assertJson -----------------------------------------------------------------------------

Deno.test('assertJson accepts JSON values, including shared non-cyclic references', () => {
  const shared = { x: 1 };
  const values = [
    null,
    true,
    0,
    -0,
    1.5,
    '',
    'text',
    [],
    {},
    { a: [1, 'two', null, { b: false }] },
    Object.assign(Object.create(null), { a: 1 }),
    { left: shared, right: shared },
  ];
  for (const value of values) assertJson(value);
});

Deno.test('assertJson rejects non-JSON values and names their path', () => {
  const cyclic: Record<string, unknown> = { a: { b: {} } };
  (cyclic.a as Record<string, Record<string, unknown>>).b.c = cyclic;
  const cases: [unknown, string, string][] = [
    [undefined, 'input', 'undefined'],
    [{ a: { b: undefined } }, 'input.a.b', 'undefined'],
    [{ a: () => 1 }, 'input.a', 'function'],
    [{ n: 10n }, 'input.n', 'bigint'],
    [{ n: NaN }, 'input.n', 'NaN is not a finite number'],
    [{ n: Infinity }, 'input.n', 'Infinity is not a finite number'],
    [{ items: [1, 2, undefined] }, 'input.items[2]', 'undefined'],
    [{ items: [1, , 3] }, 'input.items[1]', 'array hole'],
    [{ 'a-b': { c: Symbol('s') } }, 'input["a-b"].c', 'symbol'],
    [{ [Symbol('k')]: 1 }, 'input', 'symbol-keyed'],
    [{ when: new Date(0) }, 'input.when', 'a Date is not a plain object'],
    [{ m: new Map() }, 'input.m', 'a Map is not a plain object'],
    [cyclic, 'input.a.b.c', 'cyclic reference'],
  ];
  for (const [value, path, rule] of cases) {
    assert.throws(() => assertJson(value), (error: unknown) => {
      assert.ok(error instanceof InvalidInputError, String(error));
      assert.equal(error.path, path);
      assert.ok(error.message.startsWith(`${path} is not JSON: `), error.message);
      assert.ok(error.message.includes(rule), `"${error.message}" lacks "${rule}"`);
      return true;
    });
  }
});

Deno.test('assertJson refuses nesting past 1000 levels with the limit, not a stack overflow', () => {
  const nested = (n: number) => JSON.parse('['.repeat(n) + ']'.repeat(n));
  assertJson(nested(1000));
  for (const n of [1001, 50_000]) {
    assert.throws(() => assertJson(nested(n)), (error: unknown) => {
      assert.ok(error instanceof InvalidInputError, String(error));
      assert.equal(error.path, 'input' + '[0]'.repeat(1000));
      assert.match(error.message, /nest more than 1000 levels deep/);
      return true;
    });
  }
});

Deno.test('assertJson refuses U+0000 wherever it sits, with the path and the index', () => {
  const cases: [unknown, string, string][] = [
    ['\u0000', 'input', 'the string holds U+0000 at index 0'],
    [{ a: 'ab\u0000' }, 'input.a', 'the string holds U+0000 at index 2'],
    [{ list: [1, ['x', 'y\u0000z']] }, 'input.list[1][1]', 'the string holds U+0000 at index 1'],
    [{ ['k\u0000']: 1 }, 'input["k\\u0000"]', 'the property name holds U+0000 at index 1'],
  ];
  for (const [value, path, rule] of cases) {
    assert.throws(() => assertJson(value), (error: unknown) => {
      assert.ok(error instanceof UnstorableValueError, String(error));
      assert.equal(error.path, path);
      assert.ok(error.message.includes(rule), `"${error.message}" lacks "${rule}"`);
      return true;
    });
  }
  // Text around it is fine, and so is the six-character escape written out.
  assertJson({ a: 'before after', b: '\\u0000' });
});

Deno.test('assertJson names the root as told', () => {
  assertThrowsWith(
    () => assertJson({ a: 1n }, 'output'),
    InvalidInputError,
    'output.a is not JSON',
  );
});

Deno.test('a bad rateLimit or concurrency option names the field, its value and the rule', () => {
  const f = new Flow<{ tenant: string }>({ slug: 'fieldNamesV1' });
  // deno-lint-ignore no-explicit-any
  const step = (options: any) => () => f.step({ slug: 'a', ...options }, () => 1);
  const cases: [unknown, string[]][] = [
    [{ rateLimit: { name: 'bad name' } }, [
      'step "a" option rateLimit.name "bad name" is invalid',
      'a letter or digit, then letters, digits, "_", ".", ":" or "-" (at most 100)',
    ]],
    [{ rateLimit: { name: 'x'.repeat(101) } }, ['rateLimit.name "xxxx', 'at most 100']],
    [{ rateLimit: { name: 7 } }, ['option rateLimit.name 7 is invalid']],
    [{ rateLimit: {} }, ['option rateLimit.name undefined is invalid']],
    [{ rateLimit: { name: 'ok', burst: 3 } }, [
      'option rateLimit has an unknown key "burst"',
      'pass { name, cost? }',
    ]],
    [{ rateLimit: 'openai' }, ['option rateLimit "openai" is invalid: pass { name, cost? }']],
    [{ concurrency: { key: 'a..b', limit: 1 } }, [
      'option concurrency.key "a..b" is invalid',
      "a dotted path of one to 8 keys such as 'tenant' or 'customer.id'",
    ]],
    [{ concurrency: { key: '', limit: 1 } }, ['option concurrency.key "" is invalid']],
    [{ concurrency: { key: 'a.b.c.d.e.f.g.h.i', limit: 1 } }, [
      'option concurrency.key "a.b.c.d.e.f.g.h.i" is invalid',
    ]],
    [{ concurrency: { limit: 1 } }, ['option concurrency.key undefined is invalid']],
    [{ concurrency: { key: 'tenant', limit: 1, scope: 'x' } }, [
      'option concurrency has an unknown key "scope"',
      'pass { key, limit, input? }',
    ]],
    [{ concurrency: [1] }, ['option concurrency an array is invalid: pass { key, limit, input? }']],
  ];
  for (const [options, fragments] of cases) {
    assertThrowsWith(step(options), FlowDefinitionError, ...fragments);
  }
});
