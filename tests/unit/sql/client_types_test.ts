/**
 * Type tests of the typed client (docs/design/client.md): `deno check` passes only if every
 * `@ts-expect-error` line below really is a type error (a wrong alias, a wrong input shape, a
 * wrong output use) and every other line type-checks. The code never runs: it sits in a
 * function that the single runtime test does not call.
 */
import assert from 'node:assert/strict';
import { defineDeployedFlow, Flow, routeFlow, withStepQueues } from '../../../lib/mod.ts';
import {
  type AliasInput,
  type AliasOf,
  type AliasOutput,
  createClient,
  type RunEvent,
} from '../../../lib/client.ts';
import type { FlowOutput, LeafSlugs } from '../../../lib/mod.ts';
import { registry as shipped } from '../../../supabase/functions/_shared/registry.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(_proof?: T): void {}

async function typeTests(): Promise<void> {
  // Leaves: the steps no later step depends on.
  const diamond = new Flow<{ n: number }>({ slug: 'diamond' })
    .step({ slug: 'a' }, (input) => input.n)
    .step({ slug: 'b', dependsOn: ['a'] }, (input) => ({ b: input.a }))
    .step({ slug: 'c', dependsOn: ['a'] }, (input) => Promise.resolve(`${input.a}`))
    .step({ slug: 'd', dependsOn: ['b'] }, () => true as const);
  expectType<Equal<LeafSlugs<typeof diamond>, 'c' | 'd'>>(true);
  expectType<Equal<FlowOutput<typeof diamond>, { c: string; d: true }>>(true);
  expectType<Equal<LeafSlugs<Flow<{ n: number }>>, never>>(true);

  // Two versions of one alias with different inputs and outputs, and a second alias.
  const v1 = new Flow<{ threadId: string }>({ slug: 'threadsV1' })
    .step({ slug: 'classify' }, () => ({ label: 'spam' as 'spam' | 'ham' }));
  const v2 = new Flow<{ threadId: string; lang: 'en' | 'de' }>({ slug: 'threadsV2' })
    .step({ slug: 'classify' }, () => ({ label: 'ham' as 'spam' | 'ham' }))
    .step({ slug: 'score', dependsOn: ['classify'] }, () => 3);
  const tickets = new Flow<{ ticket: number }>({ slug: 'ticketsV1' })
    .step({ slug: 'triage' }, () => 'sev1' as const);
  const registry = [
    defineDeployedFlow(routeFlow(v1, { queues: { classify: 'io' } }), { alias: 'threads' }),
    defineDeployedFlow(withStepQueues(v2), { alias: 'threads' }),
    defineDeployedFlow(tickets, { alias: 'tickets' }),
    new Flow({ slug: 'undeployed' }).step({ slug: 'x' }, () => 1),
  ] as const;

  expectType<Equal<AliasOf<typeof registry>, 'threads' | 'tickets'>>(true);
  expectType<
    Equal<
      AliasInput<typeof registry, 'threads'>,
      { threadId: string } | { threadId: string; lang: 'en' | 'de' }
    >
  >(true);
  expectType<
    Equal<
      AliasOutput<typeof registry, 'threads'>,
      { classify: { label: 'spam' | 'ham' } } | { score: number }
    >
  >(true);

  const client = createClient(registry, { connectionString: 'postgres://localhost/app' });
  const run = await client.start('threads', { threadId: 't1' });
  await client.start('threads', { threadId: 't1', lang: 'de' }, { runId: crypto.randomUUID() });
  await client.start('tickets', { ticket: 7 }, { owner: crypto.randomUUID() });

  // @ts-expect-error 'thread' is not an alias of the registry
  await client.start('thread', { threadId: 't1' });
  // @ts-expect-error a concrete slug is not an alias
  await client.start('threadsV1', { threadId: 't1' });
  // @ts-expect-error a flow that is not deployed has no alias to start
  await client.start('undeployed', {});
  // @ts-expect-error threadId must be a string
  await client.start('threads', { threadId: 1 });
  // @ts-expect-error the input of tickets is { ticket: number }
  await client.start('tickets', { threadId: 't1' });
  // @ts-expect-error the input is required
  await client.start('tickets');

  // Start keys (docs/design/flow-control.md#start-keys): typed per mode.
  await client.start('tickets', { ticket: 7 }, { key: 't-7', mode: 'singleton' });
  await client.start('tickets', { ticket: 7 }, { key: 't-7', mode: 'dedupe', ttl: 3600 });
  await client.start('tickets', { ticket: 7 }, { key: 't-7', mode: 'debounce', delay: 5 });
  await client.start('tickets', { ticket: 7 }, {
    key: 't-7',
    mode: 'debounce',
    delay: 5,
    maxDelay: 60,
    owner: crypto.randomUUID(),
  });
  // @ts-expect-error a key needs its mode
  await client.start('tickets', { ticket: 7 }, { key: 't-7' });
  // @ts-expect-error not a mode
  await client.start('tickets', { ticket: 7 }, { key: 't-7', mode: 'once' });
  // @ts-expect-error a mode needs a key
  await client.start('tickets', { ticket: 7 }, { mode: 'singleton' });
  // @ts-expect-error a ttl is dedupe's
  await client.start('tickets', { ticket: 7 }, { key: 't-7', mode: 'singleton', ttl: 5 });
  // @ts-expect-error a debounce needs its delay
  await client.start('tickets', { ticket: 7 }, { key: 't-7', mode: 'debounce' });
  await client.start('tickets', { ticket: 7 }, {
    key: 'k',
    mode: 'debounce',
    delay: 5,
    // @ts-expect-error a debounce sets its own start
    startAt: new Date(),
  });
  await client.start('tickets', { ticket: 7 }, {
    key: 'k',
    mode: 'dedupe',
    // @ts-expect-error a key takes no run id
    runId: crypto.randomUUID(),
  });
  // @ts-expect-error lang is 'en' | 'de'
  await client.start('threads', { threadId: 't1', lang: 'fr' });
  // @ts-expect-error runId is a string
  await client.start('tickets', { ticket: 1 }, { runId: 7 });

  // Outputs: the leaf outputs of either version; narrowing by key.
  const out = await run.output({ timeoutMs: 1_000 });
  if ('score' in out) {
    const score: number = out.score;
    void score;
  } else {
    const label: 'spam' | 'ham' = out.classify.label;
    void label;
  }
  // @ts-expect-error score exists only in v2's output
  out.score.toFixed();

  // Every step's output (stepOutputs), of either version, each key optional.
  const steps = await run.stepOutputs();
  if (steps !== null) {
    const label: 'spam' | 'ham' | undefined = steps.classify?.label;
    void label;
    if ('score' in steps) {
      const score: number | undefined = steps.score;
      void score;
    }
    // @ts-expect-error a step output may be absent (skipped or not finished)
    steps.classify.label;
    // @ts-expect-error no step is called 'nope'
    steps.nope;
  }
  // The status in camelCase.
  const runStatus = await run.status();
  const startedAs: string | undefined = runStatus?.startedAs;
  const stepSlug: 'classify' | 'score' | undefined = runStatus?.steps[0].stepSlug;
  void startedAs, stepSlug;
  // @ts-expect-error there is no startedas: camelCase is startedAs
  runStatus?.startedas;

  const ticketOut = await (await client.start('tickets', { ticket: 1 })).output();
  expectType<Equal<typeof ticketOut, { triage: 'sev1' }>>(true);
  // @ts-expect-error triage is the literal 'sev1'
  const wrong: 'sev2' = ticketOut.triage;

  // Events and status name the alias's steps.
  for await (const event of run.events({ after: 0 })) {
    expectType<Equal<typeof event, RunEvent<'classify' | 'score'>>>(true);
    // @ts-expect-error 'triage' is not a step of threads
    if (event.stepSlug === 'triage') break;
  }
  const status = await client.run<'tickets'>(crypto.randomUUID()).status();
  const step: 'triage' | undefined = status?.steps[0].stepSlug;
  await client.cancel(run.runId, 'not needed');
  await client.retry(run.runId);
  await run.cancel('not needed');
  // @ts-expect-error a cancel needs a reason
  await run.cancel();

  // Typed by the registry's type alone (an app that does not load the handlers).
  const typeOnly = createClient<typeof registry>({ connectionString: 'postgres://localhost/app' });
  await typeOnly.start('tickets', { ticket: 1 });
  // @ts-expect-error the type alone still checks the input
  await typeOnly.start('tickets', { ticket: '1' });

  // The shipped registry: its aliases and their inputs.
  const app = createClient(shipped, {});
  const thread = await app.start('communityThreads', { id: 't', title: 'x', body: 'y' });
  const delivered = (await thread.output()).deliverSlack;
  const posted: boolean = delivered.posted;
  // @ts-expect-error a community thread has a title and a body
  await app.start('communityThreads', { id: 't' });
  // @ts-expect-error the shipped aliases are communityThreads and supportTickets
  await app.start('supportTicket', { id: 'k', customer: 'a', plan: 'pro', subject: 's' });

  void [wrong, step, posted];
}

Deno.test('client type tests compile (see deno check tests/unit/sql/client_types_test.ts)', () => {
  assert.equal(typeof typeTests, 'function');
});
