/**
 * A disposable copy of this kit's project, for the end-to-end test and the demo: they
 * scaffold, edit the registry and serve functions there, never in the working tree.
 *
 * @module
 */
import { join } from 'node:path';

/**
 * The kit's project root (a directory path ending in `/`).
 *
 * @example
 * ```ts
 * import { KIT_ROOT } from './_project.ts';
 *
 * console.log(`${KIT_ROOT}supabase/config.toml`);
 * ```
 */
export const KIT_ROOT: string = decodeURIComponent(new URL('../', import.meta.url).pathname);

/** What a project copy holds: the kit's modules, the Supabase project and the import map. */
const ENTRIES = ['lib', 'supabase', 'deno.json', 'import_map.json'];

/** Directories the Supabase CLI writes locally; never copied. */
const SKIP = new Set(['.temp', '.branches', 'node_modules']);

async function copy(from: string, to: string): Promise<void> {
  const info = await Deno.stat(from);
  if (!info.isDirectory) {
    await Deno.copyFile(from, to);
    return;
  }
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (SKIP.has(entry.name)) continue;
    await copy(join(from, entry.name), join(to, entry.name));
  }
}

/**
 * Copies the kit's project (lib/, supabase/, deno.json, import_map.json) into a new temporary
 * directory and returns its path. The caller removes it.
 *
 * @example
 * ```ts
 * import { copyProject } from './_project.ts';
 *
 * const dir = await copyProject('switchyard-demo-');
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function copyProject(prefix = 'switchyard-project-'): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  for (const entry of ENTRIES) await copy(join(KIT_ROOT, entry), join(dir, entry));
  return dir;
}
