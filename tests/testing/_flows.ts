/**
 * Flows the test engine's suites share (tests/testing/): small, each built for one rule.
 *
 * @module
 */
import { defineDeployedFlow, Flow, routeFlow, signalPayload } from '../../lib/mod.ts';

/** Three steps: a reservation, a week-long approval window, a charge that may be retried. */
export const orderV1 = new Flow<{ order: string; cents: number }>({
  slug: 'orderV1',
  maxAttempts: 3,
  baseDelay: 30,
})
  .step({ slug: 'reserve' }, (input) => ({ hold: `hold-${input.order}` }))
  .wait({
    slug: 'approve',
    dependsOn: ['reserve'],
    payload: signalPayload<{ by: string }>(),
    timeout: 7 * 86400,
  })
  .step(
    { slug: 'charge', dependsOn: ['reserve', 'approve'] },
    (input) => ({ receipt: `${input.reserve.hold} by ${input.approve.by}` }),
  );

/** A wait whose timeout skips it, and one whose timeout fails the run. */
export const reviewV1 = new Flow<{ doc: string }>({ slug: 'reviewV1' })
  .wait({
    slug: 'optional',
    payload: signalPayload<{ note: string }>(),
    timeout: 3600,
    onTimeout: 'skip',
  })
  .step(
    { slug: 'publish', dependsOn: ['optional'] },
    (input) => input.optional?.note ?? 'no note',
  );
export const strictV1 = new Flow<{ doc: string }>({ slug: 'strictV1' })
  .wait({ slug: 'sign', payload: signalPayload<{ by: string }>(), timeout: 600 })
  .step({ slug: 'file', dependsOn: ['sign'] }, (input) => input.sign.by);

/** A sleep of a day, and a sleep until a time read from the input. */
export const napV1 = new Flow<{ wakeAt: string }>({ slug: 'napV1' })
  .sleep({ slug: 'day', seconds: 86400 })
  .sleep({ slug: 'until', dependsOn: ['day'], until: { key: 'wakeAt' } })
  .step({ slug: 'wake', dependsOn: ['until'] }, () => 'awake');

/** One step, three attempts, a base delay of 10 s: 10 s, then 20 s of backoff. */
export const flakyV1 = new Flow<{ n: number }>({ slug: 'flakyV1', maxAttempts: 3, baseDelay: 10 })
  .step({ slug: 'work' }, (input) => input.n * 2);

/** One step with a short timeout, for the claim's visibility and stall recovery. */
export const slowV1 = new Flow<{ n: number }>({ slug: 'slowV1', maxAttempts: 2, timeout: 20 })
  .step({ slug: 'work' }, (input) => input.n + 1);

/** A step behind a rate limit (`calls`), and one with keyed concurrency of 1 per tenant. */
export const limitedV1 = new Flow<{ tenant: string; n: number }>({ slug: 'limitedV1' })
  .step({ slug: 'call', rateLimit: { name: 'calls' } }, (input) => input.n);
export const keyedV1 = new Flow<{ tenant: string; n: number }>({ slug: 'keyedV1' })
  .step({ slug: 'work', concurrency: { key: 'tenant', limit: 1 } }, (input) => input.n);

/** A report for schedules and start keys, and one with a map over its input. */
export const reportV1 = new Flow<{ day?: string }>({ slug: 'reportV1' })
  .step({ slug: 'build' }, (input) => `report ${input.day ?? 'today'}`);
export const squaresV1 = new Flow<number[]>({ slug: 'squaresV1' })
  .map({ slug: 'square' }, (n) => n * n)
  .step({ slug: 'sum', dependsOn: ['square'] }, (input) => input.square.reduce((a, b) => a + b, 0));

/** Two queues shared by the priority flow: its step on `prio_q`. */
export const prioV1 = routeFlow(
  new Flow<{ n: number }>({ slug: 'prioV1' }).step({ slug: 'work' }, (input) => input.n),
  { queues: { work: 'prio_q' } },
);

/** The registry of the suites. */
export const registry = [
  defineDeployedFlow(orderV1, { alias: 'order' }),
  defineDeployedFlow(reviewV1, { alias: 'review' }),
  defineDeployedFlow(strictV1, { alias: 'strict' }),
  defineDeployedFlow(napV1, { alias: 'nap' }),
  defineDeployedFlow(flakyV1, { alias: 'flaky' }),
  defineDeployedFlow(slowV1, { alias: 'slow' }),
  defineDeployedFlow(limitedV1, { alias: 'limited' }),
  defineDeployedFlow(keyedV1, { alias: 'keyed' }),
  defineDeployedFlow(reportV1, { alias: 'report' }),
  defineDeployedFlow(squaresV1, { alias: 'squares' }),
  defineDeployedFlow(prioV1, { alias: 'prio' }),
] as const;
