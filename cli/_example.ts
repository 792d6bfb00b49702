/**
 * `deno task install --example` (`npx switchyard install --example`): one example flow, its queue function and a client script, so a
 * new project runs something with the README's next command (docs/design/local-runs.md).
 *
 * It copies `cli/templates/example/` into the project (the flow
 * `supabase/functions/_shared/flows/greet.ts`, the registry listing it, `example.ts` at the
 * root), then scaffolds the queue function of `greetings` and compiles the flow into a migration
 * (`npx switchyard compile`), so the flow starts right after the push. The registry is written only
 * over the installer's empty one; a registry of the project's own, or another file where the
 * example goes, is refused, and nothing is written. Running it again changes nothing.
 *
 * @module
 */
import { dirname, join, relative } from 'node:path';
import { KIT_ROOT } from './_project.ts';
import { readOrNull } from './_util.ts';
import { compileFlows } from './compile.ts';
import { scaffoldQueue } from './scaffold_queue.ts';

/** The example's queue. */
export const EXAMPLE_QUEUE = 'greetings';

/** What {@linkcode installExample} did, file by file (paths relative to the project). */
export interface ExampleResult {
  files: { path: string; action: 'created' | 'updated' | 'unchanged' }[];
}

/**
 * A module's code without its comments, whitespace collapsed: the installer's empty registry is
 * recognised whatever its comments say (an earlier kit's words included).
 */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '').replace(/\s+/g, ' ')
    .trim();
}

async function templateFiles(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...await templateFiles(p, base));
    else out.push(relative(base, p));
  }
  return out.sort();
}

/**
 * Writes the example into an installed project (see the module docs); throws `refuse(message)`
 * where it would overwrite a file of the project's own.
 *
 * @example
 * ```ts
 * import { installExample } from './_example.ts';
 *
 * const { files } = await installExample('../my-app', (m) => new Error(m));
 * for (const f of files) console.log(f.action, f.path);
 * ```
 */
export async function installExample(
  projectDir: string,
  refuse: (message: string) => Error,
  kitDir: string = KIT_ROOT,
): Promise<ExampleResult> {
  const templates = join(kitDir, 'cli', 'templates');
  const exampleDir = join(templates, 'example');
  const emptyRegistry = await Deno.readTextFile(join(templates, 'registry.ts'));
  const plans: { path: string; content: string; existing: string | null }[] = [];
  const conflicts: string[] = [];
  for (const path of await templateFiles(exampleDir)) {
    const content = await Deno.readTextFile(join(exampleDir, path));
    const existing = await readOrNull(join(projectDir, path));
    const replaceable = existing === null || existing === content ||
      (path.endsWith('_shared/registry.ts') && code(existing) === code(emptyRegistry));
    if (!replaceable) conflicts.push(path);
    plans.push({ path, content, existing });
  }
  if (conflicts.length > 0) {
    throw refuse(
      `--example would overwrite ${conflicts.join(', ')}, which the project has written itself ` +
        '(the registry only replaces the empty one the installer writes); nothing of the ' +
        "example was written. Add the example by hand from the kit's cli/templates/example/",
    );
  }
  const files: ExampleResult['files'] = [];
  for (const plan of plans) {
    if (plan.existing === plan.content) {
      files.push({ path: plan.path, action: 'unchanged' });
      continue;
    }
    await Deno.mkdir(dirname(join(projectDir, plan.path)), { recursive: true });
    await Deno.writeTextFile(join(projectDir, plan.path), plan.content);
    files.push({ path: plan.path, action: plan.existing === null ? 'created' : 'updated' });
  }
  const scaffold = await scaffoldQueue({ projectDir, queueName: EXAMPLE_QUEUE });
  for (const f of scaffold.files) {
    files.push({ path: f.path, action: f.action === 'kept' ? 'unchanged' : f.action });
  }
  const compiled = await compileFlows({ projectDir });
  if (compiled.path !== null) files.push({ path: compiled.path, action: 'created' });
  return { files };
}
