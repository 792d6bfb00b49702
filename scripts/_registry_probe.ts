/**
 * `deno run --config <functions deno.json> scripts/_registry_probe.ts <registry.ts>`: loads a
 * project's registry against the project's own copy of the kit (`switchyard` as the project's
 * import map resolves it, so the installed runtime and the project's own bare imports) and
 * prints, as one JSON line, the queues its deployments use: `{ "placements": [{ "kind",
 * "flow", "queues" }] }`, or `{ "error": "…" }`. The scaffold runs it for installed projects.
 *
 * @module
 */
import { pathToFileURL } from 'node:url';
import { DispatchIndex } from 'switchyard/worker/dispatch_index.ts';

/**
 * What the probe prints.
 *
 * @example
 * ```ts
 * import type { ProbeResult } from './_registry_probe.ts';
 * const result: ProbeResult = {
 *   placements: [{ kind: 'routed', flow: 'greetV1', queues: ['greetings'] }],
 * };
 * ```
 */
export type ProbeResult =
  | { placements: { kind: string; flow: string; queues: string[] }[] }
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
      })),
    };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

if (import.meta.main) console.log(JSON.stringify(await probe(Deno.args[0])));
