/**
 * Type tests: `deno check tests/unit/dsl/types_test.ts` passes only if every `@ts-expect-error` line
 * below really is a type error and every other line type-checks. The code never runs: it sits
 * in a function that the single runtime test does not call.
 */
import assert from 'node:assert/strict';
import type postgres from 'postgres';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';

import { defineDeployedFlow } from '../../../lib/dsl/deployed_flow.ts';
import { Flow, type FlowInput, type StepOutputs, type StepSlugs } from '../../../lib/dsl/flow.ts';
import type {
  HandlerEnv,
  HandlerSql,
  HandlerSupabase,
  StepContext,
} from '../../../lib/dsl/context.ts';
import { type QueueNamesOf, toPlacement, type WorkerTarget } from '../../../lib/dsl/placement.ts';
import type {
  InvalidQueueNameMessage,
  ReservedQueueNameMessage,
  ValidQueueName,
} from '../../../lib/dsl/queue_names.ts';
import { routeFlow } from '../../../lib/dsl/route_flow.ts';
import type { ValidSlug } from '../../../lib/dsl/slugs.ts';
import { withStepQueues } from '../../../lib/dsl/with_step_queues.ts';

/** Compile-time equality: `Equal<A, B>` is `true` only when A and B are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(_proof?: T): void {}

interface ThreadInput {
  communityId: string;
  since: number;
}

function typeTests(): void {
  const flow = new Flow<ThreadInput>({ slug: 'communityThreads' })
    .step({ slug: 'fetch' }, (input, ctx) => {
      // Root steps receive the flow input; the context carries it too.
      const id: string = input.communityId;
      const input2: ThreadInput = ctx.flowInput;
      // @ts-expect-error the root input is ThreadInput, not a number
      const _wrong: number = input;
      return { threads: [id, input2.communityId], count: 2 };
    })
    .step({ slug: 'classify', dependsOn: ['fetch'] }, async (input) => {
      // Dependent steps receive { [dependency]: awaited output }.
      const threads: string[] = await Promise.resolve(input.fetch.threads);
      // @ts-expect-error count is a number
      const _wrong: string = input.fetch.count;
      // @ts-expect-error only dependencies are in the input
      input.communityId;
      return threads.length > 0 ? ('spam' as const) : ('ham' as const);
    })
    .step({ slug: 'notify', dependsOn: ['fetch', 'classify'] }, (input, ctx) => {
      // Promise outputs are awaited in the dependent's input.
      const label: 'spam' | 'ham' = input.classify;
      // @ts-expect-error classify is 'spam' | 'ham', not a Promise
      const _promise: Promise<string> = input.classify;
      const context: StepContext<ThreadInput> = ctx;
      return { label, count: input.fetch.count, signal: context.signal.aborted };
    });

  // dependsOn only accepts earlier step slugs, exactly spelled.
  // @ts-expect-error 'fetchh' is not a step of this flow
  flow.step({ slug: 'later', dependsOn: ['fetchh'] }, () => 1);
  // @ts-expect-error step slugs are case-sensitive in dependsOn
  flow.step({ slug: 'later', dependsOn: ['Fetch'] }, () => 1);
  // @ts-expect-error a step cannot depend on itself (it is not added yet)
  new Flow({ slug: 'f' }).step({ slug: 'a', dependsOn: ['a'] }, () => 1);

  // Duplicate (case-insensitive), reserved and malformed step slugs fail type checking.
  // @ts-expect-error duplicate step slug
  flow.step({ slug: 'fetch' }, () => 1);
  // @ts-expect-error duplicate step slug, case-insensitively
  flow.step({ slug: 'Classify' }, () => 1);
  // @ts-expect-error 'run' is reserved
  flow.step({ slug: 'run' }, () => 1);
  // @ts-expect-error '-' is not allowed in a slug
  flow.step({ slug: 'my-step' }, () => 1);

  // The step map and helpers are typed.
  expectType<Equal<StepSlugs<typeof flow>, 'fetch' | 'classify' | 'notify'>>(true);
  expectType<Equal<FlowInput<typeof flow>, ThreadInput>>(true);
  expectType<Equal<StepOutputs<typeof flow>['classify'], 'spam' | 'ham'>>(true);
  expectType<
    Equal<
      StepOutputs<typeof flow>['notify'],
      { label: 'spam' | 'ham'; count: number; signal: boolean }
    >
  >(true);

  // routeFlow: exactly the step slugs, valid literal queue names, literals preserved.
  const routed = routeFlow(flow, {
    queues: { fetch: 'io', classify: 'classify_threads', notify: 'io' },
  });
  const q: 'classify_threads' = routed.queues.classify;
  // @ts-expect-error the literal type is preserved, so another literal does not fit
  const notQ: 'io' = routed.queues.classify;
  expectType<Equal<QueueNamesOf<typeof routed>, 'io' | 'classify_threads'>>(true);

  // @ts-expect-error missing step key 'notify'
  routeFlow(flow, { queues: { fetch: 'io', classify: 'io' } });
  // @ts-expect-error unknown step key 'archive'
  routeFlow(flow, { queues: { fetch: 'io', classify: 'io', notify: 'io', archive: 'io' } });
  // @ts-expect-error upper case and '-' are invalid in a queue name
  routeFlow(flow, { queues: { fetch: 'Classify-Threads', classify: 'io', notify: 'io' } });
  // @ts-expect-error a queue name cannot start with a digit
  routeFlow(flow, { queues: { fetch: '1io', classify: 'io', notify: 'io' } });
  // @ts-expect-error '__' is reserved for generated private queues
  routeFlow(flow, { queues: { fetch: 'community__fetch', classify: 'io', notify: 'io' } });
  // @ts-expect-error a space is invalid in a queue name
  routeFlow(flow, { queues: { fetch: 'i o', classify: 'io', notify: 'io' } });
  routeFlow(flow, {
    queues: {
      // @ts-expect-error 48 characters is one too many
      fetch: 'qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq',
      classify: 'io',
      notify: 'io',
    },
  });
  // 47 characters is fine.
  routeFlow(flow, {
    queues: {
      fetch: 'qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq',
      classify: 'io',
      notify: 'io',
    },
  });
  // A non-literal string is accepted by type and checked at runtime.
  const dynamic: string = 'io';
  routeFlow(flow, { queues: { fetch: dynamic, classify: dynamic, notify: dynamic } });

  // Deployments keep the placement type and the alias literal.
  const v2 = defineDeployedFlow(routed, { alias: 'communityThreadsAlias' });
  const alias: 'communityThreadsAlias' = v2.alias;
  const sameFlow: typeof flow = v2.flow;
  // @ts-expect-error the alias follows the slug rule
  defineDeployedFlow(routed, { alias: 'community-threads' });
  // @ts-expect-error a deployment cannot be deployed again
  defineDeployedFlow(v2, { alias: 'again' });

  // QueueNamesOf over a registry: routed literals only; plain and step-queued add nothing.
  const other = new Flow({ slug: 'digest' }).step({ slug: 'a' }, () => 1).step(
    { slug: 'b' },
    () => 2,
  );
  const registry = [
    v2,
    defineDeployedFlow(routeFlow(other, { queues: { a: 'q1', b: 'q2' } }), { alias: 'digest' }),
    defineDeployedFlow(other, { alias: 'digestPlain' }),
    withStepQueues(other),
    other,
  ] as const;
  expectType<Equal<QueueNamesOf<typeof registry>, 'io' | 'classify_threads' | 'q1' | 'q2'>>(true);
  const queueName: QueueNamesOf<typeof registry> = 'q2';
  // @ts-expect-error 'q3' is not routed in the registry
  const notRouted: QueueNamesOf<typeof registry> = 'q3';

  // Every kind is a worker target.
  const targets: WorkerTarget[] = [...registry];
  toPlacement(targets[0]);
  // @ts-expect-error a string is not a worker target
  toPlacement('communityThreads');

  // The literal validators on their own.
  expectType<Equal<ValidQueueName<'classify_threads'>, 'classify_threads'>>(true);
  expectType<Equal<ValidQueueName<string>, string>>(true);
  expectType<Equal<ValidQueueName<'Classify'>, InvalidQueueNameMessage<'Classify'>>>(true);
  expectType<Equal<ValidQueueName<'a__b'>, ReservedQueueNameMessage<'a__b'>>>(true);
  expectType<Equal<ValidSlug<'communityThreadsV2'>, 'communityThreadsV2'>>(true);
  // @ts-expect-error a trailing underscore is invalid in a slug
  const badSlug: ValidSlug<'trailing_'> = 'trailing_';

  void [q, notQ, alias, sameFlow, queueName, notRouted, badSlug];
}

function conditionTypeTests(): void {
  interface Ticket {
    plan: 'free' | 'pro';
    user: { id: string; tags: string[] };
  }
  const flow = new Flow<Ticket>({ slug: 'condTypes' })
    .step({ slug: 'always' }, () => 1)
    .step({ slug: 'maybe', if: { plan: 'pro' } }, () => 'pro')
    .step({ slug: 'negated', ifNot: { user: { tags: ['spam'] } } }, () => true)
    .step({ slug: 'strict', if: { plan: 'pro' }, whenUnmet: 'fail' }, () => 2)
    .step({ slug: 'cascade', if: { plan: 'free' }, whenUnmet: 'skip-cascade' }, () => 3)
    .step({ slug: 'tolerant', whenExhausted: 'skip' }, () => 4)
    .step({ slug: 'failing', whenExhausted: 'fail' }, () => 5)
    .step({ slug: 'dropping', whenExhausted: 'skip-cascade' }, () => 6)
    .step({ slug: 'both', if: { plan: 'pro' }, whenExhausted: 'skip-cascade' }, () => 7)
    .step(
      {
        slug: 'sink',
        dependsOn: [
          'always',
          'maybe',
          'negated',
          'strict',
          'cascade',
          'tolerant',
          'failing',
          'dropping',
          'both',
        ],
        // A dependent's condition is typed against the dependency outputs.
        if: { always: 1 },
      },
      (input) => {
        // A step that may be skipped while its dependents run is absent: T | undefined.
        expectType<Equal<typeof input.always, number>>(true);
        expectType<Equal<typeof input.maybe, string | undefined>>(true);
        expectType<Equal<typeof input.negated, boolean | undefined>>(true);
        expectType<Equal<typeof input.tolerant, number | undefined>>(true);
        // whenUnmet 'fail' never skips; with 'skip-cascade' the dependents are skipped too.
        expectType<Equal<typeof input.strict, number>>(true);
        expectType<Equal<typeof input.cascade, number>>(true);
        expectType<Equal<typeof input.failing, number>>(true);
        // whenExhausted 'skip-cascade' skips the dependents with it; an unmet skip still may not.
        expectType<Equal<typeof input.dropping, number>>(true);
        expectType<Equal<typeof input.both, number | undefined>>(true);
        // @ts-expect-error maybe may be absent
        input.maybe.length;
        return input.maybe ?? 'skipped';
      },
    );
  expectType<Equal<StepOutputs<typeof flow>['maybe'], string | undefined>>(true);
  expectType<Equal<StepOutputs<typeof flow>['sink'], string | undefined>>(true);

  const f = new Flow<Ticket>({ slug: 'condTypes2' });
  // @ts-expect-error 'gold' is not a plan
  f.step({ slug: 'a', if: { plan: 'gold' } }, () => 1);
  // @ts-expect-error a misspelt key
  f.step({ slug: 'a', if: { plan: 'pro', plann: 'pro' } }, () => 1);
  // @ts-expect-error a misspelt nested key
  f.step({ slug: 'a', ifNot: { user: { idd: 'u1' } } }, () => 1);
  // @ts-expect-error tags holds strings
  f.step({ slug: 'a', if: { user: { tags: [1] } } }, () => 1);
  // @ts-expect-error not a mode
  f.step({ slug: 'a', if: { plan: 'pro' }, whenUnmet: 'maybe' }, () => 1);
  // @ts-expect-error not a mode
  f.step({ slug: 'a', whenExhausted: 'retry' }, () => 1);
  // An untyped flow takes any JSON pattern.
  new Flow({ slug: 'untyped' }).step({ slug: 'a', if: { anything: [1, { deep: true }] } }, () => 1);
  // A dependent's condition names its dependencies only.
  f.step({ slug: 'a' }, () => ({ n: 1 }))
    // @ts-expect-error plan is not in the input of a dependent step
    .step({ slug: 'b', dependsOn: ['a'], if: { plan: 'pro' } }, () => 1);
}

function mapTypeTests(): void {
  const crawl = new Flow<{ urls: string[]; depth: number }>({ slug: 'crawlTypes' })
    .step({ slug: 'urls' }, (input) => input.urls.map((url) => ({ url, depth: input.depth })))
    .map({ slug: 'fetch', array: 'urls' }, (page, ctx) => {
      // The element type is inferred from the array the map reads.
      expectType<Equal<typeof page, { url: string; depth: number }>>(true);
      expectType<Equal<typeof ctx.taskIndex, number>>(true);
      return { size: page.url.length, depth: page.depth };
    })
    // Map after map: the element is the first map's output element.
    .map({ slug: 'weigh', array: 'fetch' }, (result) => {
      expectType<Equal<typeof result, { size: number; depth: number }>>(true);
      return result.size * result.depth;
    })
    .step({ slug: 'total', dependsOn: ['fetch', 'weigh'] }, (input) => {
      // Dependents receive the outputs in element order, typed.
      expectType<Equal<typeof input.fetch, { size: number; depth: number }[]>>(true);
      expectType<Equal<typeof input.weigh, number[]>>(true);
      return input.weigh.reduce((a, b) => a + b, 0);
    });
  expectType<Equal<StepOutputs<typeof crawl>['fetch'], { size: number; depth: number }[]>>(true);
  expectType<Equal<StepSlugs<typeof crawl>, 'urls' | 'fetch' | 'weigh' | 'total'>>(true);

  // A root map reads the flow input, which must be an array.
  const squares = new Flow<number[]>({ slug: 'squareTypes' })
    .map({ slug: 'square' }, (n) => {
      expectType<Equal<typeof n, number>>(true);
      return n * n;
    });
  expectType<Equal<StepOutputs<typeof squares>['square'], number[]>>(true);
  // @ts-expect-error the flow input is not an array: a root map needs one
  new Flow<{ urls: string[] }>({ slug: 'notArray' }).map({ slug: 'm' }, (x) => x);
  // @ts-expect-error total's output is a number, not an array
  crawl.map({ slug: 'm', array: 'total' }, (x) => x);
  // @ts-expect-error 'nope' is not a step
  crawl.map({ slug: 'm', array: 'nope' }, (x) => x);
  // @ts-expect-error a map takes array, not dependsOn
  crawl.map({ slug: 'm', dependsOn: ['urls'] }, (x) => x);
  // @ts-expect-error duplicate slug
  crawl.map({ slug: 'fetch', array: 'urls' }, (x) => x);
  // A map's condition is typed against { [array]: value }; skippable maps are absent for dependents.
  const conditional = crawl
    .map({ slug: 'big', array: 'fetch', if: { fetch: [{ depth: 2 }] } }, (r) => r.size)
    .step({ slug: 'after', dependsOn: ['big'] }, (input) => {
      expectType<Equal<typeof input.big, number[] | undefined>>(true);
      return input.big?.length ?? 0;
    });
  // @ts-expect-error a map over fetch is evaluated over { fetch }, not the flow input
  crawl.map({ slug: 'bad', array: 'fetch', if: { urls: ['a'] } }, (r) => r);

  // routeFlow and withStepQueues see map steps like any step.
  routeFlow(crawl, { queues: { urls: 'io', fetch: 'io', weigh: 'cpu', total: 'cpu' } });
  // @ts-expect-error missing map step key 'weigh'
  routeFlow(crawl, { queues: { urls: 'io', fetch: 'io', total: 'cpu' } });
  // @ts-expect-error missing map step key 'square'
  routeFlow(squares, { queues: {} });
  const stepQueued = withStepQueues(squares);
  expectType<Equal<keyof typeof stepQueued.queues, 'square'>>(true);
  void [conditional];
}

function contextTypeTests(): void {
  new Flow<{ id: string }>({ slug: 'ctxTypes' }).step({ slug: 'a' }, async (_input, ctx) => {
    expectType<Equal<typeof ctx.taskIndex, number>>(true);
    expectType<Equal<typeof ctx.attempt, number>>(true);
    expectType<Equal<typeof ctx.flowInput, { id: string }>>(true);
    expectType<Equal<typeof ctx.env, HandlerEnv>>(true);
    expectType<Equal<ReturnType<HandlerEnv['get']>, string | undefined>>(true);
    // @ts-expect-error the environment is read-only
    ctx.env.set('X', 'y');
    // ctx.sql: typed tagged-template queries.
    const rows = await ctx.sql<{ n: number }[]>`select ${1}::int as n`;
    const n: number = rows[0].n;
    // @ts-expect-error n is a number
    const s: string = rows[0].n;
    const sql: HandlerSql = ctx.sql;
    // The full postgres.js type is a cast away.
    const full = ctx.sql as unknown as postgres.Sql;
    // ctx.supabase may be absent: the type says so.
    expectType<Equal<typeof ctx.supabase, HandlerSupabase | undefined>>(true);
    // @ts-expect-error ctx.supabase is possibly undefined
    ctx.supabase.from('profiles');
    if (ctx.supabase) await ctx.supabase.from('profiles').select('*');
    // It is a real supabase-js client: one fits the structural type, and it casts back.
    const real: HandlerSupabase = createClient('http://localhost', 'key');
    const typed = ctx.supabase as SupabaseClient | undefined;
    void [n, s, sql, full, real, typed];
    return ctx.taskIndex;
  });
}

function flowControlTypeTests(): void {
  const f = new Flow<{ tenant: string; customer: { id: number; region?: string } }>({
    slug: 'fc',
  });
  // The key is a dotted path of the run input (the default) ...
  const g = f
    .step({ slug: 'a', concurrency: { key: 'tenant', limit: 2 } }, () => ({ shard: 1 }))
    .step({ slug: 'b', concurrency: { key: 'customer.id', limit: 1, input: 'run' } }, () => 1)
    .step({ slug: 'c', concurrency: { key: 'customer.region', limit: 1 } }, () => 1)
    // ... or, with input: 'step', of the step's own input.
    .step(
      { slug: 'd', dependsOn: ['a'], concurrency: { key: 'a.shard', limit: 1, input: 'step' } },
      () => 1,
    )
    .step({ slug: 'e', rateLimit: { name: 'openai' } }, () => 1)
    .step({ slug: 'h', rateLimit: { name: 'openai', cost: 5 } }, () => 1);
  // @ts-expect-error tenantt is not a key of the run input
  f.step({ slug: 'x', concurrency: { key: 'tenantt', limit: 2 } }, () => 1);
  // @ts-expect-error customer.name is not a path of the run input
  f.step({ slug: 'x', concurrency: { key: 'customer.name', limit: 2 } }, () => 1);
  // @ts-expect-error the step input of a root step is the run input: no a.shard in it
  f.step({ slug: 'x', concurrency: { key: 'a.shard', limit: 2, input: 'step' } }, () => 1);
  // @ts-expect-error a limit is required
  f.step({ slug: 'x', concurrency: { key: 'tenant' } }, () => 1);
  // @ts-expect-error input is 'run' or 'step'
  f.step({ slug: 'x', concurrency: { key: 'tenant', limit: 1, input: 'flow' } }, () => 1);
  // @ts-expect-error a rate limit needs its name
  f.step({ slug: 'x', rateLimit: { cost: 1 } }, () => 1);
  // @ts-expect-error cost is a number
  f.step({ slug: 'x', rateLimit: { name: 'openai', cost: '1' } }, () => 1);
  // A map's step input is its element.
  new Flow<{ region: string }[]>({ slug: 'fcMap' })
    .map({ slug: 'm', concurrency: { key: 'region', limit: 1, input: 'step' } }, (e) => e.region);
  new Flow<{ region: string }[]>({ slug: 'fcMap' })
    // @ts-expect-error the element has no zone
    .map({ slug: 'm', concurrency: { key: 'zone', limit: 1, input: 'step' } }, (e) => e.region);
  void g;
}

Deno.test('type tests compile (see deno check tests/unit/dsl/types_test.ts)', () => {
  assert.equal(typeof flowControlTypeTests, 'function');
  assert.equal(typeof typeTests, 'function');
  assert.equal(typeof contextTypeTests, 'function');
  assert.equal(typeof conditionTypeTests, 'function');
  assert.equal(typeof mapTypeTests, 'function');
});
