/**
 * Type tests for worker selectors: `deno check` fails if any `@ts-expect-error`
 * below stops being an error. The functions are never called.
 */
import {
  defineDeployedFlow,
  Flow,
  routeFlow,
  startWorker,
  withStepQueues,
} from '../../../lib/mod.ts';

const flow = new Flow<{ text: string }>({ slug: 'typedV1' })
  .step({ slug: 'classify' }, (i) => i.text.length)
  .step({ slug: 'deliver', dependsOn: ['classify'] }, (i) => i.classify > 3);
const v1 = defineDeployedFlow(
  routeFlow(flow, { queues: { classify: 'classify_threads', deliver: 'deliver_slack_alerts' } }),
  { alias: 'typed' },
);

export function queueNameAutocompletesFromTheRegistry() {
  startWorker([v1], { queueName: 'classify_threads' });
  startWorker([v1], { queueName: 'deliver_slack_alerts', maxConcurrent: 1 });
  // @ts-expect-error a queue no deployment routes to
  startWorker([v1], { queueName: 'classify_thread' });
  // @ts-expect-error a registry worker needs queueName
  startWorker([v1], {});
}

export function plainAndStepQueuedContractsStay() {
  startWorker(flow);
  // @ts-expect-error a plain flow takes no queueName
  startWorker(flow, { queueName: 'typedv1' });
  startWorker(withStepQueues(flow), { stepSlug: 'deliver' });
  // @ts-expect-error stepSlug must be a step of the flow
  startWorker(withStepQueues(flow), { stepSlug: 'nope' });
  // @ts-expect-error stepSlug is required
  startWorker(withStepQueues(flow), {});
}

Deno.test('worker selector types are checked by deno check', () => {});
