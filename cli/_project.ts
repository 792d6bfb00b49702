/**
 * A disposable copy of this kit's project, for the end-to-end test and the demo: they
 * scaffold, edit the registry and serve functions there, never in the working tree.
 *
 * @module
 */
import { dirname, join } from 'node:path';

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

/**
 * Copies a file, or a directory with everything in it, to `to` (parent directories made as
 * needed); entries named in `skip` are left out at any depth.
 *
 * @example
 * ```ts
 * import { copyTree, KIT_ROOT } from './_project.ts';
 *
 * const dir = await Deno.makeTempDir();
 * await copyTree(`${KIT_ROOT}pgmq_compat`, `${dir}/pgmq_compat`);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function copyTree(
  from: string,
  to: string,
  skip: ReadonlySet<string> = new Set(),
): Promise<void> {
  const info = await Deno.stat(from);
  if (!info.isDirectory) {
    await Deno.mkdir(dirname(to), { recursive: true });
    await Deno.copyFile(from, to);
    return;
  }
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (skip.has(entry.name)) continue;
    await copyTree(join(from, entry.name), join(to, entry.name), skip);
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
  for (const entry of ENTRIES) await copyTree(join(KIT_ROOT, entry), join(dir, entry), SKIP);
  return dir;
}
