/**
 * `deno run --config <functions deno.json> scripts/_registry_probe.ts <registry.ts>`: loads a
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
    const index = new DispatchIndex(list);
    return {
      placements: index.placements.map((p) => ({
        kind: p.kind,
        flow: p.flow.slug,
        queues: p.queues(),
        shape: p.shape,
      })),
      aliases: [...index.aliases()],
    };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

if (import.meta.main) console.log(JSON.stringify(await probe(Deno.args[0])));
