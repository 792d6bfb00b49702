/**
 * `deno task scaffold-queue <queue_name> [--max-concurrent N] [--force] [--project DIR]`
 * (`npx switchyard scaffold-queue` from the npm package; without `--project`, the project the user
 * is in, `cli/_invocation.ts`):
 * writes the Edge Function that polls one explicit queue.
 *
 * For queue `classify_threads` it writes, inside the project's `supabase/` directory:
 *
 * - `functions/classify-threads-worker/index.ts`: imports the shared registry
 *   (`functions/_shared/registry.ts`) and calls
 *   `EdgeWorker.start(registry, { queueName: 'classify_threads', maxConcurrent })`;
 * - `functions/classify-threads-worker/deno.json`: the function's import map, so that
 *   `supabase functions deploy` resolves the same modules as the project (`switchyard` → the
 *   project's copy of the kit, reached by a relative path inside the project: the runtime
 *   `deno task install` wrote to `functions/_switchyard/`, else the project's own `lib/` as in
 *   the kit's checkout; a project with neither is refused). In an installed project it holds
 *   only the entries the function loads, npm and jsr ranges pinned to exact versions by the
 *   project's deno.lock, else the kit's;
 * - a `[functions.classify-threads-worker]` section in `config.toml` (entrypoint, import map,
 *   `verify_jwt = false`: the function checks its own bearer);
 * - `migrations/<timestamp>_register_classify_threads_worker.sql`, which calls
 *   `switchyard.register_function()` (a new function starts enabled and unpaused; an existing
 *   one keeps its flags). Its timestamp is one second after the newest migration, so it runs
 *   after the kit's SQL core, and never after now (at most the second before the run, so a
 *   later `supabase migration new` sorts after it; right after another migration it waits up
 *   to a second for the clock; a newest migration named after a future time is refused).
 *
 * It refuses an invalid queue name (with the rule) and a queue that no deployment in the
 * registry routes a step to (the registry module is imported to find out). It is idempotent:
 * a second run changes nothing and says so. A file that exists with other content (edited by
 * hand, or written with other options) is never overwritten without `--force`; without it
 * nothing at all is written. The registration migration is never rewritten, not even with
 * `--force`: a database may have applied it (an earlier kit's registration is kept as it is).
 *
 * The written files come from templates in `cli/templates/`, read next to this script:
 * `queue_function/index.ts` (a module that type-checks in place against the project's registry;
 * its placeholders `QUEUE_NAME` and `MAX_CONCURRENT` and its template-only tail are replaced or
 * dropped), `queue_function/deno.json` (the kit's imports, added for keys the project does not
 * map), `function_config.toml` and `register_function.sql` (placeholders `FUNCTION_NAME` and
 * `QUEUE_NAME`). Every placeholder is replaced by an exact substitution that must match exactly
 * once; a template out of step with the scaffold is an error, never a wrong file.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertQueueName } from '../lib/dsl/queue_names.ts';
import { defaultFunctionName } from '../lib/worker/worker.ts';
import { DispatchIndex } from '../lib/worker/dispatch_index.ts';
import type { WorkerTarget } from '../lib/dsl/placement.ts';
import { functionSection, setFunctionSection } from './_functions_config.ts';
import {
  exists,
  migrationTimestamp,
  type Planned as PlannedFile,
  readOrNull,
  sqlFileNames,
  timestampsAfter,
} from './_util.ts';
import { KIT_ROOT } from './_project.ts';
import { denoExecutable } from '../lib/sql/deno_executable.ts';
import { lockedSpecifiers, moduleGraph, pinned } from './_kit.ts';
import {
  commandName,
  findProject,
  supabaseCli,
  supabaseRemote,
  userCommand,
} from './_invocation.ts';
import { planOf, type ProbeResult } from './_registry_probe.ts';

/**
 * The registry module every queue function imports, relative to the project directory.
 *
 * @example
 * ```ts
 * import { REGISTRY_PATH } from './scaffold_queue.ts';
 *
 * console.log(`edit ${REGISTRY_PATH}`);
 * ```
 */
export const REGISTRY_PATH = 'supabase/functions/_shared/registry.ts';

/**
 * The templates' directory: real files that `deno fmt`, `deno lint` and (the index.ts)
 * `deno check` see, read at run time next to this script.
 */
const TEMPLATES_DIR = join(KIT_ROOT, 'cli', 'templates');

/** The templates of the written files, relative to the templates' directory. */
const TEMPLATES = {
  index: 'queue_function/index.ts',
  denoJson: 'queue_function/deno.json',
  config: 'function_config.toml',
  migration: 'register_function.sql',
} as const;

/** The directory of the queue function's template: it stands where a function directory does. */
const TEMPLATE_FUNCTION_DIR = join(TEMPLATES_DIR, dirname(TEMPLATES.index));

/**
 * Where the index.ts template's template-only part begins: the scaffold drops this line and
 * every line after it (declarations that let the template type-check in place).
 */
const TEMPLATE_ONLY = '// scaffold-queue: template only.';

/**
 * Placeholder words of the templates. Queue and function names are lower-case, so none of them
 * can survive in a written file unless a template holds one the scaffold does not replace.
 */
const PLACEHOLDERS = ['QUEUE_NAME', 'MAX_CONCURRENT', 'FUNCTION_NAME'] as const;

/** The line width of the written index.ts (the kit's `deno fmt` line width). */
const LINE_WIDTH = 100;

/**
 * The scaffold cannot proceed: the message names the value and the rule.
 *
 * @example
 * ```ts
 * import { ScaffoldError } from './scaffold_queue.ts';
 *
 * console.assert(new ScaffoldError('x').name === 'ScaffoldError');
 * ```
 */
export class ScaffoldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScaffoldError';
  }
}

/**
 * Options of {@linkcode scaffoldQueue}.
 *
 * @example
 * ```ts
 * import type { ScaffoldOptions } from './scaffold_queue.ts';
 *
 * const options: ScaffoldOptions = { projectDir: '.', queueName: 'classify_threads' };
 * ```
 */
export interface ScaffoldOptions {
  /** The project root (holds `supabase/`). */
  projectDir: string;
  queueName: string;
  /** Tasks the function's worker runs at once (default 10). */
  maxConcurrent?: number;
  /** Overwrite files whose content differs from what the scaffold writes. */
  force?: boolean;
  /** The clock for the migration timestamp (tests). */
  now?: Date;
  /** The directory holding the templates (default: `templates/` next to this script; tests). */
  templatesDir?: string;
}

/**
 * What one scaffold run did, file by file (paths relative to the project directory).
 *
 * @example
 * ```ts
 * import type { ScaffoldResult } from './scaffold_queue.ts';
 *
 * const result: ScaffoldResult = { functionName: 'a-worker', queueName: 'a', changed: false, files: [] };
 * ```
 */
export interface ScaffoldResult {
  functionName: string;
  queueName: string;
  /** Whether any file was written. */
  changed: boolean;
  /** `kept`: an existing registration migration an earlier kit wrote, never rewritten. */
  files: { path: string; action: 'created' | 'updated' | 'unchanged' | 'kept' }[];
}

interface Planned extends PlannedFile {
  /** An existing migration that differs from what the scaffold writes now, kept as it is. */
  kept?: boolean;
}

/** A relative import specifier from `fromDir` to `target` (always starting with `.`). */
function specifier(fromDir: string, target: string, trailingSlash = false): string {
  let rel = relative(fromDir, target).replaceAll('\\', '/');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  if (trailingSlash && !rel.endsWith('/')) rel += '/';
  return rel;
}

/** One template: its text and its path (relative to the kit when inside it, for messages). */
export interface Template {
  path: string;
  text: string;
}

/** Every template (line endings normalized to `\n`); a missing one is a ScaffoldError. */
async function readTemplates(dir: string): Promise<Record<keyof typeof TEMPLATES, Template>> {
  const read = async (name: string): Promise<Template> => {
    const abs = resolve(dir, name);
    const rel = relative(KIT_ROOT, abs);
    const path = rel.startsWith('..') ? abs : rel.replaceAll('\\', '/');
    try {
      return { path, text: (await Deno.readTextFile(abs)).replaceAll('\r\n', '\n') };
    } catch (e) {
      throw new ScaffoldError(
        `cannot read the scaffold's template ${path}: ${(e as Error).message}`,
      );
    }
  };
  return {
    index: await read(TEMPLATES.index),
    denoJson: await read(TEMPLATES.denoJson),
    config: await read(TEMPLATES.config),
    migration: await read(TEMPLATES.migration),
  };
}

/**
 * Replaces each placeholder of a template by its value. Every placeholder is an exact string
 * that must occur exactly once in the template, and no placeholder word may remain afterwards:
 * a template edited out of step with the scaffold fails loudly instead of writing a wrong file.
 */
function fill(
  { path, text: template }: Template,
  substitutions: readonly (readonly [placeholder: string, value: string])[],
): string {
  const spans = substitutions.map(([placeholder, value]) => {
    const count = template.split(placeholder).length - 1;
    if (count !== 1) {
      throw new ScaffoldError(
        `the scaffold's template ${path} must contain ${JSON.stringify(placeholder)} exactly ` +
          `once, found it ${count} times: fix the template`,
      );
    }
    const at = template.indexOf(placeholder);
    return { at, end: at + placeholder.length, value };
  }).sort((a, b) => a.at - b.at);
  let out = '';
  let pos = 0;
  for (const span of spans) {
    if (span.at < pos) {
      throw new ScaffoldError(`the scaffold's template ${path} has overlapping placeholders`);
    }
    out += template.slice(pos, span.at) + span.value;
    pos = span.end;
  }
  out += template.slice(pos);
  const left = PLACEHOLDERS.filter((word) => out.includes(word));
  if (left.length > 0) {
    throw new ScaffoldError(
      `the scaffold's template ${path} holds ${left.join(', ')} where the scaffold does not ` +
        'replace it: fix the template',
    );
  }
  return out;
}

/**
 * Loads the deployments listed by the project's registry module (its `registry` export, or
 * its default export).
 *
 * @example
 * ```ts
 * import { loadRegistry } from './scaffold_queue.ts';
 *
 * console.log((await loadRegistry('.')).length);
 * ```
 */
export async function loadRegistry(projectDir: string): Promise<readonly WorkerTarget[]> {
  const path = resolve(projectDir, REGISTRY_PATH);
  if (!(await exists(path))) {
    throw new ScaffoldError(
      `${REGISTRY_PATH} is missing in ${resolve(projectDir)}: every queue function imports the ` +
        'shared registry, so create it first (export const registry = [...] as const)',
    );
  }
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(path).href);
  } catch (e) {
    throw new ScaffoldError(`cannot load ${REGISTRY_PATH}: ${(e as Error).message}`);
  }
  const list = mod.registry ?? mod.default;
  if (!Array.isArray(list)) {
    throw new ScaffoldError(
      `${REGISTRY_PATH} must export \`registry\` (or a default export): an array of deployments, ` +
        `got ${list === undefined ? 'no such export' : typeof list}`,
    );
  }
  return list as WorkerTarget[];
}

/**
 * The project's copy of the kit, which its functions import as `switchyard`: the runtime the
 * installer put in `supabase/functions/_switchyard/` (its manifest says so), or the project's
 * own `lib/` (the kit's checkout and copies of it).
 */
export type KitCopy = { kind: 'installed' | 'checkout'; libDir: string };

/** The installed runtime, relative to the project. */
const INSTALLED_RUNTIME = 'supabase/functions/_switchyard';

export async function kitCopy(projectDir: string): Promise<KitCopy> {
  const installed = join(projectDir, INSTALLED_RUNTIME);
  if (await exists(join(installed, 'manifest.json'))) {
    return { kind: 'installed', libDir: installed };
  }
  if (await exists(join(projectDir, 'lib', 'mod.ts'))) {
    return { kind: 'checkout', libDir: join(projectDir, 'lib') };
  }
  throw new ScaffoldError(
    `Switchyard is not installed in ${projectDir}: run \`${
      userCommand('install', [], { project: projectDir })
    }\` first. A queue function must import the kit from inside the project ` +
      '(supabase functions deploy uploads nothing outside it)',
  );
}

/**
 * The function's imports without what it does not load, at exact versions: the entries whose
 * key the function's module graph (index.ts → the registry → …, the kit's runtime included)
 * imports, each npm/jsr range pinned by the project's deno.lock, else the kit's. A deployed
 * function then resolves exactly what was tested, with no dev-only packages.
 */
async function runtimeOnly(
  imports: Record<string, string>,
  projectDir: string,
  functionDir: string,
  entry: string,
): Promise<Record<string, string>> {
  // The graph of the registry, resolved with every candidate entry (absolute paths).
  const absolute: Record<string, string> = {};
  for (const [key, value] of Object.entries(imports)) {
    absolute[key] = value.startsWith('./') || value.startsWith('../')
      ? pathToFileURL(resolve(functionDir, value)).href + (value.endsWith('/') ? '/' : '')
      : value;
  }
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-scaffold-' });
  let used: Set<string>;
  try {
    const mapPath = join(dir, 'import_map.json');
    await Deno.writeTextFile(mapPath, JSON.stringify({ imports: absolute }));
    const graph = await moduleGraph(entry, { importMap: mapPath });
    used = new Set(graph.filter((m) => m.local !== null).flatMap((m) => m.bare));
  } catch (e) {
    throw new ScaffoldError(
      `cannot resolve the modules of ${relative(projectDir, entry)}: ${(e as Error).message}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  used.add('switchyard'); // index.ts
  const locked = {
    ...await lockedSpecifiers(join(KIT_ROOT, 'deno.lock')),
    ...await lockedSpecifiers(join(projectDir, 'supabase', 'functions', 'deno.lock')),
    ...await lockedSpecifiers(join(projectDir, 'deno.lock')),
  };
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(imports)) {
    const needed = key.endsWith('/') ? [...used].some((u) => u.startsWith(key)) : used.has(key);
    if (needed) out[key] = pinned(value, locked);
  }
  return out;
}

/**
 * The registry's deployments (their queues and shapes) and aliases, as a worker's start-up
 * derives them. In the kit's checkout the registry is imported here; in an installed project it
 * is loaded in a subprocess with the project's import map (the installed runtime, the project's
 * own bare imports).
 *
 * @example
 * ```ts
 * import { registryPlan } from './scaffold_queue.ts';
 *
 * const { placements, aliases } = await registryPlan('.');
 * console.log(placements.map((p) => p.flow), aliases);
 * ```
 */
export async function registryPlan(
  projectDir: string,
): Promise<Extract<ProbeResult, { placements: unknown }>> {
  const copy = await kitCopy(projectDir);
  if (copy.kind === 'checkout') {
    return planOf(new DispatchIndex(await loadRegistry(projectDir)));
  }
  const path = resolve(projectDir, REGISTRY_PATH);
  if (!(await exists(path))) await loadRegistry(projectDir); // the missing-registry message
  const deno = await denoExecutable(`the registry probe (it loads ${REGISTRY_PATH})`);
  // The probe runs from a temp copy: the compiled command's embedded files are readable only by
  // itself, and the probe imports only `switchyard/…`, which the project's map resolves. One
  // path for both, so the tests run the compiled command's.
  const probeDir = await Deno.makeTempDir({ prefix: 'switchyard-probe-' });
  const probeFile = join(probeDir, '_registry_probe.ts');
  await Deno.writeTextFile(
    probeFile,
    await Deno.readTextFile(join(KIT_ROOT, 'cli', '_registry_probe.ts')),
  );
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(deno, {
      args: [
        'run',
        '--no-lock',
        '--allow-read',
        '--allow-env',
        '--config',
        join(projectDir, 'supabase', 'functions', 'deno.json'),
        probeFile,
        path,
      ],
      stdout: 'piped',
      stderr: 'piped',
      stdin: 'null',
      env: { NO_COLOR: '1' },
    }).output();
  } finally {
    await Deno.remove(probeDir, { recursive: true }).catch(() => {});
  }
  const text = new TextDecoder().decode(out.stdout).trim().split('\n').pop() ?? '';
  let result: ProbeResult;
  try {
    result = JSON.parse(text);
  } catch {
    throw new ScaffoldError(
      `cannot load ${REGISTRY_PATH}: ${new TextDecoder().decode(out.stderr).trim() || text}`,
    );
  }
  if ('error' in result) throw new ScaffoldError(`${REGISTRY_PATH} ${result.error}`);
  return result;
}

/**
 * The deno.json of a function directory: the project's imports (deno.json `imports` and its
 * import map; in an installed project also `supabase/functions/deno.json`), relative paths
 * rebased to the function's directory, plus the kit; and the project's `fmt` style. In an
 * installed project only the entries the function loads are kept, at exact versions.
 */
export async function functionImportMap(
  template: Template,
  projectDir: string,
  functionDir: string,
  copy: KitCopy,
  /** The module whose graph names the entries kept in an installed project (default the registry). */
  entry: string = join(projectDir, REGISTRY_PATH),
): Promise<string> {
  const imports: Record<string, string> = {};
  const add = (entries: unknown, baseDir: string) => {
    if (typeof entries !== 'object' || entries === null) return;
    for (const [key, value] of Object.entries(entries as Record<string, unknown>)) {
      if (typeof value !== 'string') continue;
      imports[key] = value.startsWith('./') || value.startsWith('../')
        ? specifier(functionDir, resolve(baseDir, value), value.endsWith('/'))
        : value;
    }
  };
  const denoJson = await readOrNull(join(projectDir, 'deno.json'));
  let importMapPath = join(projectDir, 'import_map.json');
  let fmt: Record<string, unknown> | undefined;
  if (denoJson) {
    const config = JSON.parse(denoJson) as {
      imports?: unknown;
      importMap?: string;
      fmt?: Record<string, unknown>;
    };
    add(config.imports, projectDir);
    if (typeof config.importMap === 'string') importMapPath = resolve(projectDir, config.importMap);
    // Deno picks the nearest deno.json for a path: keep the project's formatting style there.
    if (config.fmt && typeof config.fmt === 'object') {
      const { include: _include, exclude: _exclude, ...style } = config.fmt;
      if (Object.keys(style).length > 0) fmt = style;
    }
  }
  const importMap = await readOrNull(importMapPath);
  if (importMap) {
    add((JSON.parse(importMap) as { imports?: unknown }).imports, dirname(importMapPath));
  }
  if (copy.kind === 'installed') {
    // The functions' shared import map, where the installer put the kit's entries.
    const functionsDir = join(projectDir, 'supabase', 'functions');
    const shared = await readOrNull(join(functionsDir, 'deno.json'));
    if (shared) add((JSON.parse(shared) as { imports?: unknown }).imports, functionsDir);
  }
  // The template's imports (the kit and its npm packages), for keys the project does not map.
  // Its relative paths name files of the kit's lib/ relative to the template's directory; they
  // become the same files of the project's copy of the kit (its lib/, or the installed
  // runtime in supabase/functions/_switchyard/).
  let parsed: unknown;
  try {
    parsed = JSON.parse(template.text);
  } catch (e) {
    throw new ScaffoldError(`the scaffold's template ${template.path}: ${(e as Error).message}`);
  }
  const defaults = (parsed as { imports?: unknown } | null)?.imports;
  if (
    typeof defaults !== 'object' || defaults === null || Array.isArray(defaults) ||
    Object.keys(parsed as object).some((key) => key !== 'imports')
  ) {
    throw new ScaffoldError(
      `the scaffold's template ${template.path} must hold exactly an "imports" object`,
    );
  }
  const kitLib = join(KIT_ROOT, 'lib');
  for (const [key, value] of Object.entries(defaults as Record<string, unknown>)) {
    if (typeof value !== 'string') continue;
    if (!value.startsWith('./') && !value.startsWith('../')) {
      imports[key] ??= value;
      continue;
    }
    const inKit = relative(kitLib, resolve(TEMPLATE_FUNCTION_DIR, value));
    if (inKit.startsWith('..')) {
      throw new ScaffoldError(
        `the scaffold's template ${template.path} maps "${key}" outside the kit's lib/: ${value}`,
      );
    }
    imports[key] ??= specifier(functionDir, join(copy.libDir, inKit), value.endsWith('/'));
  }
  if (copy.kind === 'installed') {
    const runtime = await runtimeOnly(imports, projectDir, functionDir, entry);
    return `${JSON.stringify(fmt ? { imports: runtime, fmt } : { imports: runtime }, null, 2)}\n`;
  }
  return `${JSON.stringify(fmt ? { imports, fmt } : { imports }, null, 2)}\n`;
}

/** The function's index.ts: the template without its template-only part, filled in. */
function indexSource(
  template: Template,
  functionDir: string,
  registryPath: string,
  queueName: string,
  maxConcurrent: number,
): string {
  const lines = template.text.split('\n');
  const cuts = lines.filter((line) => line.startsWith(TEMPLATE_ONLY)).length;
  if (cuts !== 1) {
    throw new ScaffoldError(
      `the scaffold's template ${template.path} must contain one line starting with ` +
        `${JSON.stringify(TEMPLATE_ONLY)}, found ${cuts}: fix the template`,
    );
  }
  const cut = lines.findIndex((line) => line.startsWith(TEMPLATE_ONLY));
  const kept = `${lines.slice(0, cut).join('\n').trimEnd()}\n`;
  const options = [`queueName: '${queueName}'`, `maxConcurrent: ${maxConcurrent}`];
  const oneLine = `{ ${options.join(', ')} }`;
  const source = fill({ ...template, text: kept }, [
    ['Queue function for "QUEUE_NAME"', `Queue function for "${queueName}"`],
    [
      `from '${specifier(TEMPLATE_FUNCTION_DIR, join(KIT_ROOT, REGISTRY_PATH))}';`,
      `from '${specifier(functionDir, registryPath)}';`,
    ],
    ['{ queueName: QUEUE_NAME, maxConcurrent: MAX_CONCURRENT }', oneLine],
  ]);
  // As deno fmt does: an options object that makes its line too long goes one per line.
  return source.split('\n').map((line) => {
    if (line.length <= LINE_WIDTH || !line.includes(oneLine)) return line;
    const indent = /^\s*/.exec(line)![0];
    const wrapped = `{\n${options.map((o) => `${indent}  ${o},\n`).join('')}${indent}}`;
    return line.replace(oneLine, () => wrapped);
  }).join('\n');
}

/** The function's `[functions.<name>]` section of config.toml (without a final newline). */
function configSection(template: Template, functionName: string, queueName: string): string {
  return fill({ ...template, text: template.text.replace(/\n$/, '') }, [
    ['[functions.FUNCTION_NAME]', `[functions.${functionName}]`],
    ['Queue function for "QUEUE_NAME"', `Queue function for "${queueName}"`],
    ['"./functions/FUNCTION_NAME/deno.json"', `"./functions/${functionName}/deno.json"`],
    ['"./functions/FUNCTION_NAME/index.ts"', `"./functions/${functionName}/index.ts"`],
  ]);
}

/** The registration migration. */
function migrationSource(template: Template, functionName: string, queueName: string): string {
  return fill(template, [
    [
      'function "FUNCTION_NAME" for queue "QUEUE_NAME"',
      `function "${functionName}" for queue "${queueName}"`,
    ],
    ['scaffold-queue QUEUE_NAME`', `scaffold-queue ${queueName}\``],
    ["ensure_shared_queue('QUEUE_NAME')", `ensure_shared_queue('${queueName}')`],
    [
      "register_function('FUNCTION_NAME', 'QUEUE_NAME')",
      `register_function('${functionName}', '${queueName}')`,
    ],
  ]);
}

async function planMigration(
  template: Template,
  migrationsDir: string,
  projectDir: string,
  functionName: string,
  queueName: string,
  now: Date,
): Promise<Planned> {
  const content = migrationSource(template, functionName, queueName);
  const suffix = `_register_${queueName}_worker.sql`;
  const names = await sqlFileNames(migrationsDir);
  const mine = names.filter((n) => n.endsWith(suffix) && /^\d{14}_/.test(n));
  // A registration migration that exists may have been applied by a database: it is never
  // rewritten, not even with --force, whichever kit wrote it (an earlier kit's registration ran
  // against the SQL core of its time, which is where it sorts). It registers the same function
  // for the same queue, so nothing needs a new one.
  if (mine.length > 0) {
    const path = join(migrationsDir, mine[mine.length - 1]);
    const text = await Deno.readTextFile(path);
    return {
      path: relative(projectDir, path),
      content: text,
      existing: text,
      kept: text !== content,
    };
  }
  const newestName = names.filter((n) => /^\d{14}_/.test(n)).pop();
  const at = await timestampsAfter({
    newest: newestName?.slice(0, 14),
    newestName,
    count: 1,
    now,
    what: 'the registration migration',
    refuse: (message) => new ScaffoldError(message),
  });
  const path = join(migrationsDir, `${migrationTimestamp(at)}${suffix}`);
  return { path: relative(projectDir, path), content, existing: null };
}

/**
 * Writes (or verifies) the queue function of one explicit queue. See the module docs.
 *
 * @example
 * ```ts
 * import { scaffoldQueue } from './scaffold_queue.ts';
 *
 * const result = await scaffoldQueue({ projectDir: '.', queueName: 'classify_threads' });
 * for (const file of result.files) console.log(file.action, file.path);
 * ```
 */
export async function scaffoldQueue(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const { queueName, force = false } = options;
  const projectDir = resolve(options.projectDir);
  assertQueueName(queueName, { explicit: true, where: 'scaffold-queue' });
  const maxConcurrent = options.maxConcurrent ?? 10;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1 || maxConcurrent > 1000) {
    throw new ScaffoldError(
      `--max-concurrent ${maxConcurrent} is invalid: use an integer from 1 to 1000`,
    );
  }
  const supabaseDir = join(projectDir, 'supabase');
  const configPath = join(supabaseDir, 'config.toml');
  const config = await readOrNull(configPath);
  if (config === null) {
    throw new ScaffoldError(
      `${configPath} is missing: run the scaffold in a Supabase project (supabase init) or pass --project DIR`,
    );
  }

  const templates = await readTemplates(options.templatesDir ?? TEMPLATES_DIR);
  const copy = await kitCopy(projectDir);
  const { placements } = await registryPlan(projectDir);
  const routed = [
    ...new Set(placements.filter((p) => p.kind === 'routed').flatMap((p) => p.queues)),
  ].sort();
  if (!routed.includes(queueName)) {
    const owner = placements.find((p) => p.queues.includes(queueName));
    throw new ScaffoldError(
      owner
        ? `queue "${queueName}" is the private queue of flow "${owner.flow}": the scaffold writes ` +
          'functions for explicit shared queues only (routeFlow); a private queue is served by ' +
          'EdgeWorker.start(flow) in a function of your own'
        : `queue "${queueName}" is unknown: no deployment in ${REGISTRY_PATH} routes a step to it ` +
          `(routed queues: ${routed.map((q) => `"${q}"`).join(', ') || 'none'}); route a step ` +
          'there with routeFlow() first',
    );
  }

  const functionName = defaultFunctionName(queueName);
  const functionDir = join(supabaseDir, 'functions', functionName);
  const rel = (p: string) => relative(projectDir, p);
  const section = configSection(templates.config, functionName, queueName);
  const currentSection = functionSection(config, functionName);
  const plans: Planned[] = [
    {
      path: rel(join(functionDir, 'index.ts')),
      content: indexSource(
        templates.index,
        functionDir,
        join(projectDir, REGISTRY_PATH),
        queueName,
        maxConcurrent,
      ),
      existing: await readOrNull(join(functionDir, 'index.ts')),
    },
    {
      path: rel(join(functionDir, 'deno.json')),
      content: await functionImportMap(templates.denoJson, projectDir, functionDir, copy),
      existing: await readOrNull(join(functionDir, 'deno.json')),
    },
    {
      path: rel(configPath),
      content: currentSection === section
        ? config
        : setFunctionSection(config, functionName, section),
      existing: config,
    },
    await planMigration(
      templates.migration,
      join(supabaseDir, 'migrations'),
      projectDir,
      functionName,
      queueName,
      options.now ?? new Date(),
    ),
  ];

  const files = await writePlanned(projectDir, plans, {
    configPath: rel(configPath),
    functionName,
    sectionEdited: currentSection !== null && currentSection !== section,
    force,
  });
  return {
    functionName,
    queueName,
    changed: files.some((f) => f.action === 'created' || f.action === 'updated'),
    files,
  };
}

/**
 * Writes a scaffold's planned files (shared by scaffold-queue and scaffold-webhook): refuses,
 * writing nothing, when a file differs from what the scaffold writes (config.toml is shared by
 * every function, so there only the function's own section counts as edited by hand) unless
 * `force`; then writes what changed and says, per file, what it did (`kept` for a plan marked so).
 */
export async function writePlanned(
  projectDir: string,
  plans: (PlannedFile & { kept?: boolean })[],
  opts: { configPath: string; functionName: string; sectionEdited: boolean; force: boolean },
): Promise<{ path: string; action: 'created' | 'updated' | 'unchanged' | 'kept' }[]> {
  const conflicts = plans.filter((p) =>
    p.path === opts.configPath
      ? opts.sectionEdited
      : p.existing !== null && p.existing !== p.content
  );
  if (conflicts.length > 0 && !opts.force) {
    throw new ScaffoldError(
      `refusing to overwrite ${
        conflicts.map((c) =>
          c.path === opts.configPath
            ? `the [functions.${opts.functionName}] section of ${c.path}`
            : c.path
        ).join(', ')
      }: the content differs from what the scaffold writes (edited by hand, or other options); ` +
        'nothing was written. Rerun with --force to overwrite',
    );
  }
  const files: { path: string; action: 'created' | 'updated' | 'unchanged' | 'kept' }[] = [];
  for (const plan of plans) {
    if (plan.existing === plan.content) {
      files.push({ path: plan.path, action: plan.kept ? 'kept' : 'unchanged' });
      continue;
    }
    const abs = join(projectDir, plan.path);
    await Deno.mkdir(dirname(abs), { recursive: true });
    await Deno.writeTextFile(abs, plan.content);
    files.push({ path: plan.path, action: plan.existing === null ? 'created' : 'updated' });
  }
  return files;
}

const USAGE = `usage: ${
  commandName('scaffold-queue')
} <queue_name> [--max-concurrent N] [--force] [--project DIR]

  --project DIR  the Supabase project; default: the project you are in (the nearest directory
                 upward with supabase/config.toml)`;

/** The command line of this script: its exit code. */
export async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'max-concurrent': { type: 'string' },
        force: { type: 'boolean', default: false },
        project: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  if (parsed.positionals.length !== 1) {
    console.error(`error: give exactly one queue name\n${USAGE}`);
    return 2;
  }
  const text = parsed.values['max-concurrent'];
  if (text !== undefined && !/^\d+$/.test(text)) {
    console.error(`error: --max-concurrent "${text}" is invalid: use an integer from 1 to 1000`);
    return 2;
  }
  try {
    const projectDir = findProject(parsed.values.project);
    const result = await scaffoldQueue({
      projectDir,
      queueName: parsed.positionals[0],
      maxConcurrent: text === undefined ? undefined : Number(text),
      force: parsed.values.force,
    });
    for (const f of result.files.filter((f) => f.action === 'kept')) {
      console.log(
        `kept      ${f.path} (a registration an earlier kit wrote; applied migrations are never ` +
          'rewritten)',
      );
    }
    if (!result.changed) {
      console.log(
        `nothing to do: ${result.functionName} is up to date (${result.files.length} files unchanged)`,
      );
      return 0;
    }
    for (const f of result.files.filter((f) => f.action !== 'kept')) {
      console.log(`${f.action.padEnd(9)} ${f.path}`);
    }
    const migrated = result.files.some((f) =>
      f.action === 'created' && f.path.endsWith(`_register_${result.queueName}_worker.sql`)
    );
    const cli = await supabaseCli(projectDir);
    const deploy = `\`${cli.command} functions deploy ${result.functionName}\``;
    console.log(
      migrated
        ? `\nnext: apply the migration with ${supabaseRemote(cli, 'db push')}, or against ` +
          `DATABASE_URL with ${userCommand('db:push')}; then deploy with ${deploy}`
        : `\nnext: deploy with ${deploy}`,
    );
    return 0;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
