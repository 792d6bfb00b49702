/**
 * `deno task scaffold-queue <queue_name> [--max-concurrent N] [--force] [--project DIR]`:
 * writes the Edge Function that polls one explicit queue.
 *
 * For queue `classify_threads` it writes, inside the project's `supabase/` directory:
 *
 * - `functions/classify-threads-worker/index.ts`: imports the shared registry
 *   (`functions/_shared/registry.ts`) and calls
 *   `EdgeWorker.start(registry, { queueName: 'classify_threads', maxConcurrent })`;
 * - `functions/classify-threads-worker/deno.json`: the function's import map, so that
 *   `supabase functions deploy` resolves the same modules as the project (`switchyard` → the
 *   kit's `lib/`, which the function reaches by a relative path inside the project; npm
 *   packages by their `npm:` specifiers);
 * - a `[functions.classify-threads-worker]` section in `config.toml` (entrypoint, import map,
 *   `verify_jwt = false`: the function checks its own bearer);
 * - `migrations/<timestamp>_register_classify_threads_worker.sql`, which calls
 *   `switchyard.register_function()` (a new function starts enabled and unpaused; an existing
 *   one keeps its flags). Its timestamp is now, or one second after the newest migration if
 *   that is later, so it always runs after the kit's SQL core.
 *
 * It refuses an invalid queue name (with the rule) and a queue that no deployment in the
 * registry routes a step to (the registry module is imported to find out). It is idempotent:
 * a second run changes nothing and says so. A file that exists with other content (edited by
 * hand, or written with other options) is never overwritten without `--force`; without it
 * nothing at all is written.
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
import { exists } from './_util.ts';

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

/** The kit's own `lib/` directory (used when the project has no `lib/` of its own). */
const KIT_LIB = decodeURIComponent(new URL('../lib/', import.meta.url).pathname);

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
  files: { path: string; action: 'created' | 'updated' | 'unchanged' }[];
}

interface Planned {
  path: string;
  content: string;
  existing: string | null;
}

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** A relative import specifier from `fromDir` to `target` (always starting with `.`). */
function specifier(fromDir: string, target: string, trailingSlash = false): string {
  let rel = relative(fromDir, target).replaceAll('\\', '/');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  if (trailingSlash && !rel.endsWith('/')) rel += '/';
  return rel;
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
 * The deno.json of a function directory: the project's imports (deno.json `imports` and its
 * import map), relative paths rebased to the function's directory, plus the kit; and the
 * project's `fmt` style.
 */
async function functionImportMap(projectDir: string, functionDir: string): Promise<string> {
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
  const lib = (await exists(join(projectDir, 'lib', 'mod.ts')))
    ? join(resolve(projectDir), 'lib')
    : KIT_LIB;
  imports['switchyard'] ??= specifier(functionDir, join(lib, 'mod.ts'));
  imports['switchyard/'] ??= specifier(functionDir, lib, true);
  imports['postgres'] ??= 'npm:postgres@3';
  return `${JSON.stringify(fmt ? { imports, fmt } : { imports }, null, 2)}\n`;
}

function indexSource(queueName: string, maxConcurrent: number): string {
  const oneLine =
    `EdgeWorker.start(registry, { queueName: '${queueName}', maxConcurrent: ${maxConcurrent} });`;
  const call = oneLine.length <= 100 ? oneLine : `EdgeWorker.start(registry, {
  queueName: '${queueName}',
  maxConcurrent: ${maxConcurrent},
});`;
  return `/**
 * Queue function for "${queueName}", written by \`deno task scaffold-queue\`.
 *
 * One worker polls this queue and runs every flow and version of the shared registry routed
 * to it. Edit \`../_shared/registry.ts\`, not this file.
 *
 * @module
 */
import { EdgeWorker } from 'switchyard';
import { registry } from '../_shared/registry.ts';

${call}
`;
}

function configSection(functionName: string, queueName: string): string {
  return `[functions.${functionName}]
# Queue function for "${queueName}" (deno task scaffold-queue). It checks its own bearer (the
# service role key or SWITCHYARD_WORKER_SECRET), so the gateway's JWT check is off.
verify_jwt = false
import_map = "./functions/${functionName}/deno.json"
entrypoint = "./functions/${functionName}/index.ts"`;
}

function migrationSource(functionName: string, queueName: string): string {
  return `-- Registers queue function "${functionName}" for queue "${queueName}" (written by
-- \`deno task scaffold-queue ${queueName}\`). A new function starts enabled and unpaused; an
-- existing one keeps its flags: this never re-enables a disabled or paused function.
select switchyard.register_function('${functionName}', '${queueName}');
`;
}

function timestamp(date: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(date.getUTCFullYear(), 4)}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}` +
    `${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}`;
}

function parseTimestamp(ts: string): Date {
  return new Date(Date.UTC(
    Number(ts.slice(0, 4)),
    Number(ts.slice(4, 6)) - 1,
    Number(ts.slice(6, 8)),
    Number(ts.slice(8, 10)),
    Number(ts.slice(10, 12)),
    Number(ts.slice(12, 14)),
  ));
}

async function planMigration(
  migrationsDir: string,
  projectDir: string,
  functionName: string,
  queueName: string,
  now: Date,
): Promise<Planned> {
  const content = migrationSource(functionName, queueName);
  const suffix = `_register_${queueName}_worker.sql`;
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(migrationsDir)) {
      if (entry.isFile && entry.name.endsWith('.sql')) names.push(entry.name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  names.sort();
  const mine = names.filter((n) => n.endsWith(suffix) && /^\d{14}_/.test(n));
  for (const name of mine) {
    const text = await Deno.readTextFile(join(migrationsDir, name));
    if (text === content) {
      return { path: relative(projectDir, join(migrationsDir, name)), content, existing: text };
    }
  }
  if (mine.length > 0) {
    const path = join(migrationsDir, mine[mine.length - 1]);
    return { path: relative(projectDir, path), content, existing: await Deno.readTextFile(path) };
  }
  const newest = names.map((n) => /^(\d{14})_/.exec(n)?.[1]).filter(Boolean).pop();
  let at = new Date(Math.floor(now.getTime() / 1000) * 1000);
  if (newest) {
    const after = new Date(parseTimestamp(newest).getTime() + 1000);
    if (after > at) at = after;
  }
  const path = join(migrationsDir, `${timestamp(at)}${suffix}`);
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

  const registry = new DispatchIndex(await loadRegistry(projectDir));
  const routed = [
    ...new Set(registry.placements.filter((p) => p.kind === 'routed').flatMap((p) => p.queues())),
  ].sort();
  if (!routed.includes(queueName)) {
    const owner = registry.placements.find((p) => p.queues().includes(queueName));
    throw new ScaffoldError(
      owner
        ? `queue "${queueName}" is the private queue of flow "${owner.flow.slug}": the scaffold writes ` +
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
  const section = configSection(functionName, queueName);
  const currentSection = functionSection(config, functionName);
  const plans: Planned[] = [
    {
      path: rel(join(functionDir, 'index.ts')),
      content: indexSource(queueName, maxConcurrent),
      existing: await readOrNull(join(functionDir, 'index.ts')),
    },
    {
      path: rel(join(functionDir, 'deno.json')),
      content: await functionImportMap(projectDir, functionDir),
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
      join(supabaseDir, 'migrations'),
      projectDir,
      functionName,
      queueName,
      options.now ?? new Date(),
    ),
  ];

  // config.toml is shared by every function: only our section counts as "edited by hand".
  const conflicts = plans.filter((p) =>
    p.path === rel(configPath)
      ? currentSection !== null && currentSection !== section
      : p.existing !== null && p.existing !== p.content
  );
  if (conflicts.length > 0 && !force) {
    throw new ScaffoldError(
      `refusing to overwrite ${
        conflicts.map((c) =>
          c.path === rel(configPath)
            ? `the [functions.${functionName}] section of ${c.path}`
            : c.path
        ).join(', ')
      }: the content differs from what the scaffold writes (edited by hand, or other options); ` +
        'nothing was written. Rerun with --force to overwrite',
    );
  }
  const files: ScaffoldResult['files'] = [];
  for (const plan of plans) {
    if (plan.existing === plan.content) {
      files.push({ path: plan.path, action: 'unchanged' });
      continue;
    }
    const abs = join(projectDir, plan.path);
    await Deno.mkdir(dirname(abs), { recursive: true });
    await Deno.writeTextFile(abs, plan.content);
    files.push({ path: plan.path, action: plan.existing === null ? 'created' : 'updated' });
  }
  return {
    functionName,
    queueName,
    changed: files.some((f) => f.action !== 'unchanged'),
    files,
  };
}

const USAGE =
  'usage: deno task scaffold-queue <queue_name> [--max-concurrent N] [--force] [--project DIR]';

async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'max-concurrent': { type: 'string' },
        force: { type: 'boolean', default: false },
        project: { type: 'string', default: '.' },
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
    const result = await scaffoldQueue({
      projectDir: parsed.values.project!,
      queueName: parsed.positionals[0],
      maxConcurrent: text === undefined ? undefined : Number(text),
      force: parsed.values.force,
    });
    if (!result.changed) {
      console.log(
        `nothing to do: ${result.functionName} is up to date (${result.files.length} files unchanged)`,
      );
      return 0;
    }
    for (const f of result.files) console.log(`${f.action.padEnd(9)} ${f.path}`);
    console.log(
      `\nnext: apply the migration (supabase db push, or deno task db:push) and deploy with ` +
        `\`supabase functions deploy ${result.functionName}\``,
    );
    return 0;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
