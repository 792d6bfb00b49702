/**
 * A worker's dispatch index: the registry it was given (the user's list of
 * deployments), normalized and keyed by concrete flow slug, and the exact
 * (flow, step) pairs it supports on the queue it polls (docs/design/worker.md#worker-start-up
 * steps 1, 2 and 4; docs/design/vocabulary.md for the words).
 *
 * @module
 */
import type { StepDefinition } from '../dsl/flow_types.ts';
import { hasTask, type Placement, toPlacement, type WorkerTarget } from '../dsl/placement.ts';
import { plainQueueName } from '../dsl/queue_names.ts';
import { WorkerConfigError } from '../errors.ts';

/** The deployments of one worker, keyed by concrete flow slug. */
export class DispatchIndex {
  /** Placements in the order listed. */
  readonly placements: readonly Placement[];
  readonly #byFlow = new Map<string, Placement>();

  constructor(targets: readonly WorkerTarget[]) {
    if (targets.length === 0) {
      throw new WorkerConfigError('the worker registry is empty: list at least one flow');
    }
    this.placements = targets.map((t) => toPlacement(t));
    for (const p of this.placements) {
      const slug = p.flow.slug;
      const clash = [...this.#byFlow.keys()].find((k) => k.toLowerCase() === slug.toLowerCase());
      if (clash !== undefined) {
        throw new WorkerConfigError(
          `the registry lists concrete flow "${slug}" more than once` +
            (clash === slug ? '' : ` (as "${clash}": slugs are unique case-insensitively)`) +
            ': each concrete version may appear once; a new version needs a new slug',
        );
      }
      this.#byFlow.set(slug, p);
    }
  }

  /** The placement of a concrete flow, if listed. */
  get(flowSlug: string): Placement | undefined {
    return this.#byFlow.get(flowSlug);
  }

  /** The step definition for a claimed task, if this registry has it. */
  step(flowSlug: string, stepSlug: string): StepDefinition | undefined {
    return this.#byFlow.get(flowSlug)?.flow.getStep(stepSlug);
  }

  /** Alias -> concrete versions in registry order (the last one is the target). */
  aliases(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const p of this.placements) {
      if (p.alias === null) continue;
      const versions = out.get(p.alias) ?? [];
      versions.push(p.flow.slug);
      out.set(p.alias, versions);
    }
    return out;
  }

  /** Every queue some deployment routes a step to. */
  queues(): string[] {
    return [...new Set(this.placements.flatMap((p) => p.queues()))].sort();
  }

  /** The exact `flow/step` pairs routed to a queue. */
  pairsFor(queue: string): string[] {
    const pairs: string[] = [];
    for (const p of this.placements) {
      for (const s of p.flow.steps) {
        // A wait or sleep step has no task, so no worker serves it.
        if (hasTask(s) && p.queueOf(s.slug) === queue) pairs.push(`${p.flow.slug}/${s.slug}`);
      }
    }
    return pairs;
  }
}

/** Selects the one queue a worker polls, from its dispatch index and its selector. */
export function selectQueue(
  index: DispatchIndex,
  selector: { queueName?: string; stepSlug?: string },
): string {
  const kinds = new Set(index.placements.map((p) => p.kind));
  const only = index.placements.length === 1 ? index.placements[0] : undefined;
  if (only?.kind === 'plain' && only.alias === null) {
    if (selector.queueName !== undefined || selector.stepSlug !== undefined) {
      throw new WorkerConfigError(
        `a plain flow's worker takes no queueName or stepSlug: flow "${only.flow.slug}" ` +
          `always uses its own queue "${plainQueueName(only.flow.slug)}"`,
      );
    }
    // (A flow without steps is refused by queueOf, naming its steps: none.)
    return only.flow.steps.length === 0 ? only.queueOf('') : plainQueueName(only.flow.slug);
  }
  if (only?.kind === 'step_queues' && only.alias === null) {
    if (selector.stepSlug === undefined) {
      throw new WorkerConfigError(
        `a withStepQueues() worker needs stepSlug: one of ${
          only.flow.steps.map((s) => `"${s.slug}"`).join(', ')
        } of flow "${only.flow.slug}"`,
      );
    }
    if (!only.flow.getStep(selector.stepSlug)) {
      throw new WorkerConfigError(
        `stepSlug "${selector.stepSlug}" is not a step of flow "${only.flow.slug}": use one of ${
          only.flow.steps.map((s) => `"${s.slug}"`).join(', ')
        }`,
      );
    }
    const queue = only.queueOf(selector.stepSlug);
    if (selector.queueName !== undefined && selector.queueName !== queue) {
      throw new WorkerConfigError(
        `queueName "${selector.queueName}" does not match step "${selector.stepSlug}"'s queue "${queue}"`,
      );
    }
    return queue;
  }
  if (selector.stepSlug !== undefined) {
    throw new WorkerConfigError(
      'stepSlug selects a withStepQueues() flow; this registry needs queueName instead',
    );
  }
  if (selector.queueName === undefined) {
    throw new WorkerConfigError(
      `this registry (${[...kinds].join(', ')} flows) needs queueName: one of ${
        index.queues().map((q) => `"${q}"`).join(', ')
      }`,
    );
  }
  if (!index.queues().includes(selector.queueName)) {
    throw new WorkerConfigError(
      `queueName "${selector.queueName}" is unknown: no deployment in the registry routes a step to it ` +
        `(known queues: ${index.queues().map((q) => `"${q}"`).join(', ')})`,
    );
  }
  return selector.queueName;
}
