/**
 * The flows the benchmark runs. Shared with `_rss_worker.ts`, which builds the same registry
 * in a separate process.
 *
 * @module
 */
import {
  type AnyFlow,
  defineDeployedFlow,
  type DeployedFlow,
  Flow,
  routeFlow,
} from '../lib/mod.ts';

/**
 * `count` concrete flows `<prefix>0 … <prefix>{count-1}`, each with `steps` independent root
 * steps `s0 …` routed to `queue`, deployed under an alias of the same name. Handlers return
 * a small object so completion writes a real output.
 */
export function routedRegistry(
  prefix: string,
  count: number,
  steps: number,
  queue: string,
): DeployedFlow[] {
  const registry: DeployedFlow[] = [];
  for (let i = 0; i < count; i++) {
    const slug: string = `${prefix}${i}`;
    let flow: AnyFlow = new Flow<{ i: number }>({ slug, maxAttempts: 3, timeout: 60 });
    const queues: Record<string, string> = {};
    for (let s = 0; s < steps; s++) {
      const slug: string = `s${s}`;
      flow = flow.step({ slug }, (input: { i: number }) => ({ i: input.i, s }));
      queues[`s${s}`] = queue;
    }
    // deno-lint-ignore no-explicit-any
    registry.push(defineDeployedFlow(routeFlow(flow, { queues } as any), { alias: slug }));
  }
  return registry;
}

/**
 * The end-to-end flow: three dependent steps over two shared queues
 * (`first` and `third` on `queueA`, `second` on `queueB`).
 */
export function threeStepFlow(slug: string, queueA: string, queueB: string): DeployedFlow {
  const flow = new Flow<{ i: number }>({ slug, maxAttempts: 3 })
    .step({ slug: 'first' }, (input) => ({ n: input.i }))
    .step({ slug: 'second', dependsOn: ['first'] }, (input) => ({ n: input.first.n + 1 }))
    .step({ slug: 'third', dependsOn: ['second'] }, (input) => ({ n: input.second.n * 2 }));
  return defineDeployedFlow(
    routeFlow(flow, { queues: { first: queueA, second: queueB, third: queueA } }),
    { alias: slug },
  );
}

/**
 * Figure 6: a root map over the flow input array, a map over a step's output, and a 1-step
 * flow doing the same work per task, all routed to `queue`.
 */
export function fanOutFlows(queue: string): DeployedFlow[] {
  const rootMap = new Flow<number[]>({ slug: 'benchRootMap', maxAttempts: 3 })
    .map({ slug: 'each' }, (i) => ({ i }));
  const stepMap = new Flow<{ n: number }>({ slug: 'benchStepMap', maxAttempts: 3 })
    .step({ slug: 'list' }, (input) => Array.from({ length: input.n }, (_, i) => i))
    .map({ slug: 'each', array: 'list' }, (i) => ({ i }));
  const single = new Flow<{ i: number }>({ slug: 'benchSingle', maxAttempts: 3 })
    .step({ slug: 'each' }, (input) => ({ i: input.i }));
  return [
    defineDeployedFlow(routeFlow(rootMap, { queues: { each: queue } }), { alias: 'benchRootMap' }),
    defineDeployedFlow(routeFlow(stepMap, { queues: { list: queue, each: queue } }), {
      alias: 'benchStepMap',
    }),
    defineDeployedFlow(routeFlow(single, { queues: { each: queue } }), { alias: 'benchSingle' }),
  ];
}
