/**
 * Types that read a registry the way callers see it: the aliases they may start, the input
 * each alias takes and the output its runs end with (docs/design/client.md). Types only;
 * the database decides at run time which version an alias starts.
 *
 * An alias may list several versions in one registry (old ones stay while they drain), and a
 * run may belong to any of them, so the input and output types are unions over the versions
 * the registry lists for that alias. Entries that are not deployments (a plain `Flow`, a
 * `withStepQueues()` or `routeFlow()` placement) have no literal name at the type level and
 * are not startable through the typed client: deploy them under an alias.
 *
 * @module
 */

import type {
  AnyFlow,
  FlowInput,
  FlowOutput,
  SignalPayloadOf,
  SignalSlugs,
  StepOutputs,
  StepSlugs,
} from './flow.ts';
import type { DeployedFlow, FlowOf } from './deployed_flow.ts';
import type { WorkerTarget } from './placement.ts';

/**
 * A registry: the list of deployments every queue function imports (keep it `as const`).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { Registry } from '../client.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'threadsV1' }).step({ slug: 'a' }, () => 1);
 * const registry = [defineDeployedFlow(v1, { alias: 'threads' })] as const satisfies Registry;
 * ```
 */
export type Registry = readonly WorkerTarget[];

/**
 * The deployments of a registry (entries made by `defineDeployedFlow`).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { DeploymentsOf } from '../client.ts';
 *
 * const v1 = new Flow({ slug: 'threadsV1' }).step({ slug: 'a' }, () => 1);
 * const registry = [v1, defineDeployedFlow(v1, { alias: 'threads' })] as const;
 * type Deployed = DeploymentsOf<typeof registry>; // only the deployment
 * ```
 */
// deno-lint-ignore no-explicit-any
export type DeploymentsOf<R extends Registry> = Extract<R[number], DeployedFlow<any, string>>;

/**
 * The aliases a registry deploys: what `client.start` accepts (and autocompletes).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasOf } from '../client.ts';
 *
 * const v1 = new Flow({ slug: 'threadsV1' }).step({ slug: 'a' }, () => 1);
 * const t1 = new Flow({ slug: 'ticketsV1' }).step({ slug: 'a' }, () => 1);
 * const registry = [
 *   defineDeployedFlow(v1, { alias: 'threads' }),
 *   defineDeployedFlow(t1, { alias: 'tickets' }),
 * ] as const;
 * const alias: AliasOf<typeof registry> = 'tickets'; // 'threads' | 'tickets'
 * ```
 */
export type AliasOf<R extends Registry> = DeploymentsOf<R>['alias'];

/**
 * Every concrete flow (version) a registry lists under an alias, as a union.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasFlows } from '../client.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'threadsV1' }).step({ slug: 'a' }, () => 1);
 * const registry = [defineDeployedFlow(v1, { alias: 'threads' })] as const;
 * const flow: AliasFlows<typeof registry, 'threads'> = v1;
 * ```
 */
export type AliasFlows<R extends Registry, A extends AliasOf<R>> = Extract<
  DeploymentsOf<R>,
  { readonly alias: A }
>['flow'] extends infer F extends AnyFlow ? F : never;

/**
 * The input of an alias: the union of the inputs of its versions in the registry.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasInput } from '../client.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'threadsV1' }).step({ slug: 'a' }, () => 1);
 * const v2 = new Flow<{ id: string; lang: string }>({ slug: 'threadsV2' })
 *   .step({ slug: 'a' }, () => 2);
 * const registry = [
 *   defineDeployedFlow(v1, { alias: 'threads' }),
 *   defineDeployedFlow(v2, { alias: 'threads' }),
 * ] as const;
 * const input: AliasInput<typeof registry, 'threads'> = { id: 't1' }; // v1's or v2's input
 * ```
 */
export type AliasInput<R extends Registry, A extends AliasOf<R>> = FlowInput<AliasFlows<R, A>>;

/**
 * The output of a completed run of an alias: the union over its versions of their leaf
 * step outputs (a run keeps the version it started on).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasOutput } from '../client.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'threadsV1' })
 *   .step({ slug: 'fetch' }, (input) => input.id)
 *   .step({ slug: 'label', dependsOn: ['fetch'] }, () => 'spam' as const);
 * const registry = [defineDeployedFlow(v1, { alias: 'threads' })] as const;
 * const output: AliasOutput<typeof registry, 'threads'> = { label: 'spam' };
 * ```
 */
export type AliasOutput<R extends Registry, A extends AliasOf<R>> = FlowOutput<AliasFlows<R, A>>;

/**
 * Every step's output of an alias's run, by step slug: the union over its versions (a run keeps
 * the version it started on).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasStepOutputs } from '../client.ts';
 *
 * const v1 = new Flow<{ id: string }>({ slug: 'threadsV1' })
 *   .step({ slug: 'fetch' }, (input) => input.id)
 *   .step({ slug: 'label', dependsOn: ['fetch'] }, () => 'spam' as const);
 * const registry = [defineDeployedFlow(v1, { alias: 'threads' })] as const;
 * const outputs: AliasStepOutputs<typeof registry, 'threads'> = { fetch: 'id-1', label: 'spam' };
 * ```
 */
export type AliasStepOutputs<R extends Registry, A extends AliasOf<R>> =
  // Distributes over the versions.
  AliasFlows<R, A> extends infer F ? F extends AnyFlow ? StepOutputs<F> : never : never;

/**
 * The step slugs of an alias: the union over its versions (a step of any version).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow } from '../mod.ts';
 * import type { AliasStepSlugs } from '../client.ts';
 *
 * const v1 = new Flow({ slug: 'threadsV1' }).step({ slug: 'fetch' }, () => 1);
 * const registry = [defineDeployedFlow(v1, { alias: 'threads' })] as const;
 * const step: AliasStepSlugs<typeof registry, 'threads'> = 'fetch';
 * ```
 */
export type AliasStepSlugs<R extends Registry, A extends AliasOf<R>> =
  // Distributes over the versions (keyof of a union would keep only the common keys).
  AliasFlows<R, A> extends infer F ? F extends AnyFlow ? StepSlugs<F> : never : never;

/**
 * The wait steps of an alias (over its versions) and each one's signal payload type: what
 * `run.signal()` accepts on a handle of that alias (docs/design/waits.md).
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow, signalPayload } from '../mod.ts';
 * import type { AliasSignals } from '../client.ts';
 *
 * const v1 = new Flow({ slug: 'reviewV1' })
 *   .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean }>() });
 * const registry = [defineDeployedFlow(v1, { alias: 'review' })] as const;
 * const signals: AliasSignals<typeof registry, 'review'> = { approval: { approved: true } };
 * ```
 */
export type AliasSignals<R extends Registry, A extends AliasOf<R>> = {
  [S in SignalSlugs<AliasFlows<R, A>>]: SignalPayloadOf<AliasFlows<R, A>, S>;
};

/**
 * The wait steps of every flow a registry lists, with their signal payload types (a slug
 * several flows use: the union of theirs): what `client.signal()` accepts.
 *
 * @example
 * ```ts
 * import { defineDeployedFlow, Flow, signalPayload } from '../mod.ts';
 * import type { RegistrySignals } from '../client.ts';
 *
 * const v1 = new Flow({ slug: 'reviewV1' })
 *   .wait({ slug: 'approval', payload: signalPayload<{ approved: boolean }>() });
 * const registry = [defineDeployedFlow(v1, { alias: 'review' })] as const;
 * const signals: RegistrySignals<typeof registry> = { approval: { approved: false } };
 * ```
 */
export type RegistrySignals<R extends Registry> = {
  [S in SignalSlugs<FlowOf<R[number]>>]: SignalPayloadOf<FlowOf<R[number]>, S>;
};
