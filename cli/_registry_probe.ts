/**
 * `deno run --config <functions deno.json> cli/_registry_probe.ts <registry.ts>`: loads a
 * project's registry against the project's own copy of the kit (`switchyard` as the project's
 * import map resolves it, so the installed runtime and the project's own bare imports) and
 * prints, as one JSON line, the queues its deployments use and what a worker's start-up compiles:
 * `{ "placements": [{ "kind", "flow", "queues", "shape" }], "aliases": [[alias, versions]] }`, or
 * `{ "error": "…" }`. The scaffold and `deno task compile` run it for installed projects.
 *
 * @module
 */
import { pathToFileURL } from 'node:url';
import { DispatchIndex } from 'switchyard/worker/dispatch_index.ts';
import type { FlowShape } from 'switchyard/dsl/placement.ts';

/**
 * What the probe prints.
 *
 * @example
 * ```ts
 * import type { ProbeResult } from './_registry_probe.ts';
 * const result: ProbeResult = {
 *   placements: [{ kind: 'routed', flow: 'greetV1', queues: ['greetings'], shape: {} as never }],
 *   aliases: [['greet', ['greetV1']]],
 * };
 * ```
 */
export type ProbeResult =
  | {
    /** The deployments in registry order, each with the shape `ensure_flow` compiles. */
    placements: { kind: string; flow: string; queues: string[]; shape: FlowShape }[];
    /** Alias → its versions in registry order (the last is the target), as `sync_alias` takes. */
    aliases: [string, string[]][];
  }
  | { error: string };

/**
 * What a registry's dispatch index compiles, as the probe prints it: the deployments with their
 * queues and shapes, and each alias with its versions. The scaffold uses it in a checkout too.
 *
 * @example
 * ```ts
 * import { planOf } from './_registry_probe.ts';
 * import { DispatchIndex } from '../lib/worker/dispatch_index.ts';
 * console.log(planOf(new DispatchIndex([])).placements.length);
 * ```
 */
export function planOf(index: DispatchIndex): Extract<ProbeResult, { placements: unknown }> {
  return {
    placements: index.placements.map((p) => ({
      kind: p.kind,
      flow: p.flow.slug,
      queues: p.queues(),
      shape: p.shape,
    })),
    aliases: [...index.aliases()],
  };
}

async function probe(path: string): Promise<ProbeResult> {
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(path).href);
  } catch (e) {
    return { error: `cannot load: ${(e as Error).message}` };
  }
  const list = mod.registry ?? mod.default;
  if (!Array.isArray(list)) {
    return {
      error: 'must export `registry` (or a default export): an array of deployments, got ' +
        (list === undefined ? 'no such export' : typeof list),
    };
  }
  try {
    return planOf(new DispatchIndex(list));
  } catch (e) {
    return { error: (e as Error).message };
  }
}

if (import.meta.main) console.log(JSON.stringify(await probe(Deno.args[0])));
