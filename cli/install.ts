/**
 * `deno task install [--project DIR] [--force] [--example]` (`npx switchyard install` from the
 * npm package): adds the kit to a Supabase project (one made by `supabase init`, or any project
 * with `supabase/config.toml`): `--project DIR`, else the one the user is in
 * (`cli/_invocation.ts`). docs/design/local-runs.md. `--example` adds an example flow, its queue
 * function, its compiled
 * migration and a client script (`cli/_example.ts`).
 *
 * It writes, inside `DIR/supabase/`:
 *
 * - `functions/_switchyard/`: the kit's runtime, every module `lib/mod.ts`, `lib/client.ts`,
 *   `lib/errors.ts` and `lib/browser.ts` load (operator and development modules stay in the
 *   kit), a README and `manifest.json`, the record of what the
 *   installer wrote: the kit version, a SHA-256 per runtime file, each SQL core migration with
 *   the file name it was installed as, and the import-map entries it added;
 * - `migrations/<timestamp>_switchyard_<name>.sql`: the kit's SQL core, timestamped after the
 *   project's newest migration (one second apart, in the kit's order) and never after now (the
 *   last is the second before the run, so a later `supabase migration new` sorts after it; right
 *   after one it waits for the clock, saying so; a newest migration named after a future time
 *   is refused), each with a header naming the kit file;
 * - `functions/_shared/registry.ts`, the empty registry, only when absent;
 * - `functions/deno.json`: the import-map entries shared code (`_shared/`) and editors resolve
 *   with: `switchyard` → `./_switchyard/mod.ts`, `switchyard/` → `./_switchyard/`, and the npm
 *   packages the runtime imports at the exact versions of the kit's `deno.lock`. Keys the
 *   project maps itself are kept. The scaffold writes the same entries, rebased
 *   (`../_switchyard/mod.ts`), into each queue function's own deno.json.
 *
 * Running it again changes nothing. With a newer kit it updates the runtime files and adds only
 * the migrations the manifest does not list; installed migrations are never rewritten. It
 * refuses, writing nothing, where it would overwrite a file it did not write (or one edited
 * since): a `_switchyard/` without a manifest, an edited runtime file (`--force` overwrites
 * it), or an import-map key the project maps elsewhere (`--force` replaces the entry).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import {
  coreMigrations,
  KIT_VERSION,
  lockedSpecifiers,
  pinned,
  runtimeModules,
  sha256,
} from './_kit.ts';
import {
  atProjectRoot,
  commandName,
  denoCommand,
  findProject,
  supabaseCli,
  supabaseRemote,
  userCommand,
} from './_invocation.ts';
import { KIT_ROOT } from './_project.ts';
import { installExample } from './_example.ts';
import { runKeepAlive } from './keep_alive.ts';
import { databaseUrl, UsageError } from './_operator_cli.ts';
import { fromSqlError } from '../lib/sql/sql_errors.ts';
import { connectionFailure, connectionOrigin, openSql } from '../lib/sql/connection.ts';
import {
  migrationTimestamp,
  type Planned as PlannedFile,
  readOrNull,
  sqlFileNames,
  timestampsAfter,
} from './_util.ts';

/** Where the runtime goes, relative to the project. */
export const RUNTIME_DIR = 'supabase/functions/_switchyard';

/** The installer's record, relative to the project. */
export const MANIFEST_PATH = `${RUNTIME_DIR}/manifest.json`;

/** The shared import map of the project's functions, relative to the project. */
export const FUNCTIONS_DENO_JSON = 'supabase/functions/deno.json';

const REGISTRY = 'supabase/functions/_shared/registry.ts';

/** The first words of every installed migration: how a lost manifest is noticed. */
const MIGRATION_MARK = '-- Switchyard SQL core';

/**
 * The installer cannot proceed: the message names the file and what to do.
 *
 * @example
 * ```ts
 * import { InstallError } from './install.ts';
 * console.assert(new InstallError('x').name === 'InstallError');
 * ```
 */
export class InstallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InstallError';
  }
}

/**
 * One installed migration, as the manifest records it.
 *
 * @example
 * ```ts
 * import type { InstalledMigration } from './install.ts';
 * const m: InstalledMigration = {
 *   kit: '20261201000300_tables.sql',
 *   sha256: 'ab…',
 *   installedAs: '20270105120002_switchyard_tables.sql',
 * };
 * ```
 */
export interface InstalledMigration {
  /** The kit's file name in its `supabase/migrations/`. */
  kit: string;
  /** SHA-256 of the kit's file when it was installed. */
  sha256: string;
  /** The file name in the project's `supabase/migrations/`. */
  installedAs: string;
}

/**
 * `supabase/functions/_switchyard/manifest.json`.
 *
 * @example
 * ```ts
 * import { MANIFEST_PATH, type InstallManifest } from './install.ts';
 * const manifest: InstallManifest = JSON.parse(await Deno.readTextFile(`project/${MANIFEST_PATH}`));
 * console.log(manifest.version, manifest.migrations.length);
 * ```
 */
export interface InstallManifest {
  kit: 'switchyard';
  /** The kit release last installed. */
  version: string;
  /** Every file the installer wrote under `_switchyard/` → SHA-256 of what it wrote. */
  runtime: Record<string, string>;
  /** The SQL core migrations, in the kit's order. */
  migrations: InstalledMigration[];
  /** The entries the installer put in `supabase/functions/deno.json` (paths relative to it). */
  imports: Record<string, string>;
}

/**
 * Options of {@linkcode install}.
 *
 * @example
 * ```ts
 * import type { InstallOptions } from './install.ts';
 * const options: InstallOptions = { projectDir: '../my-app' };
 * ```
 */
export interface InstallOptions {
  /** The project root (holds `supabase/config.toml`). */
  projectDir: string;
  /** The kit to install from (default: this checkout; tests use a newer copy). */
  kitDir?: string;
  /** Overwrite edited runtime files and import-map entries the project maps elsewhere. */
  force?: boolean;
  /** The clock for migration timestamps (tests). */
  now?: Date;
}

/**
 * What one run did, file by file (paths relative to the project).
 *
 * @example
 * ```ts
 * import type { InstallResult } from './install.ts';
 * const result: InstallResult = {
 *   version: '0.1.0',
 *   previousVersion: null,
 *   changed: false,
 *   files: [],
 *   notes: [],
 * };
 * ```
 */
export interface InstallResult {
  version: string;
  /** The kit version the project had before this run (its manifest's), null on a first install. */
  previousVersion: string | null;
  /** Whether any file was written or removed. */
  changed: boolean;
  files: { path: string; action: 'created' | 'updated' | 'unchanged' | 'removed' | 'kept' }[];
  /** Things the user should know (a kit migration changed after its release, …). */
  notes: string[];
}

/** A planned write; null content: remove the file. */
type Planned = PlannedFile<string | null>;

/** `20261201000300_tables.sql` → `switchyard_tables.sql` (no doubled prefix). */
function installedName(kitName: string): string {
  const rest = kitName.replace(/^\d{14}_/, '');
  return rest.startsWith('switchyard_') ? rest : `switchyard_${rest}`;
}

/**
 * An installed migration: the header, the lock preamble (`cli/templates/migration_locks.sql`:
 * every lock up front, all or none, so a push under load never deadlocks with running workers)
 * and the kit's file as released.
 */
function migrationText(kitName: string, version: string, locks: string, text: string): string {
  return `${MIGRATION_MARK} ${version}: supabase/migrations/${kitName} of the kit, copied by\n` +
    '-- `npx switchyard install`. Never edit it: released migrations never change, and a newer kit\n' +
    '-- adds its changes as new migrations.\n' + locks + text;
}

const RUNTIME_README = (version: string) =>
  `# Switchyard ${version} runtime

Written by \`npx switchyard install\` from the Switchyard kit: the modules a queue function, an
app and a page load (\`mod.ts\`, \`client.ts\`, \`errors.ts\`, \`browser.ts\` and what they import).
Do not edit these files: run the installer of a newer kit to update them (it refuses to overwrite
a file edited here unless you pass \`--force\`).

- \`manifest.json\` records what the installer wrote: each file's SHA-256, each SQL core
  migration with the name it was installed as in \`supabase/migrations/\`, and the import-map
  entries it added to \`supabase/functions/deno.json\`. Keep it: without it the installer cannot
  tell which migrations are already installed.
- Queue functions import this directory as \`switchyard\` (\`"switchyard": "../_switchyard/mod.ts"\`
  in their deno.json, written by \`npx switchyard scaffold-queue\`).
`;

function parseManifest(text: string): InstallManifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new InstallError(`${MANIFEST_PATH} is not JSON: ${(e as Error).message}`);
  }
  const m = value as Partial<InstallManifest> | null;
  if (
    m?.kit !== 'switchyard' || typeof m.version !== 'string' || !Array.isArray(m.migrations) ||
    typeof m.runtime !== 'object' || m.runtime === null || typeof m.imports !== 'object' ||
    m.imports === null
  ) {
    throw new InstallError(
      `${MANIFEST_PATH} is not a Switchyard install manifest (kit, version, runtime, ` +
        'migrations, imports): restore it from version control',
    );
  }
  return m as InstallManifest;
}

/** The kit's import map: its deno.json `imports` and the file its `importMap` names. */
async function kitImports(kitDir: string): Promise<Record<string, string>> {
  const imports: Record<string, string> = {};
  const config = JSON.parse(await Deno.readTextFile(join(kitDir, 'deno.json'))) as {
    imports?: Record<string, string>;
    importMap?: string;
  };
  if (config.importMap) {
    const map = JSON.parse(await Deno.readTextFile(resolve(kitDir, config.importMap))) as {
      imports?: Record<string, string>;
    };
    Object.assign(imports, map.imports ?? {});
  }
  Object.assign(imports, config.imports ?? {});
  return imports;
}

/**
 * The import-map entries of an installed runtime, relative to `supabase/functions/`: the kit
 * itself — `switchyard`, each entry of the package the runtime holds by its export name
 * (`switchyard/client`, `switchyard/testing`: the specifiers a Node app imports from the npm
 * package, so code reads the same in both) and `switchyard/` for any of its modules — and every
 * npm package its modules import, pinned to the kit's `deno.lock`.
 */
async function runtimeImports(
  kitDir: string,
  files: string[],
  bare: string[],
): Promise<Record<string, string>> {
  const map = await kitImports(kitDir);
  const locked = await lockedSpecifiers(join(kitDir, 'deno.lock'));
  const imports: Record<string, string> = { switchyard: './_switchyard/mod.ts' };
  const { exports } = JSON.parse(await Deno.readTextFile(join(kitDir, 'deno.json'))) as {
    exports?: Record<string, string>;
  };
  for (const [name, target] of Object.entries(exports ?? {})) {
    const path = target.replace(/^\.\/lib\//, '');
    if (name === '.' || !name.startsWith('./') || !files.includes(path)) continue;
    imports[`switchyard/${name.slice(2)}`] = `./_switchyard/${path}`;
  }
  imports['switchyard/'] = './_switchyard/';
  for (const name of bare) {
    const value = map[name];
    if (value === undefined) {
      throw new InstallError(`the kit's runtime imports "${name}", which its import map lacks`);
    }
    imports[name] = pinned(value, locked);
  }
  return imports;
}

/**
 * Installs the kit into a project, or updates it. See the module docs.
 *
 * @example
 * ```ts
 * import { install } from './install.ts';
 *
 * const result = await install({ projectDir: '../my-app' });
 * for (const file of result.files) console.log(file.action, file.path);
 * ```
 */
export async function install(options: InstallOptions): Promise<InstallResult> {
  const projectDir = resolve(options.projectDir);
  const kitDir = resolve(options.kitDir ?? KIT_ROOT);
  const force = options.force ?? false;
  const abs = (path: string) => join(projectDir, path);
  if ((await readOrNull(abs('supabase/config.toml'))) === null) {
    throw new InstallError(
      `${abs('supabase/config.toml')} is missing: run \`supabase init\` in ${projectDir} first ` +
        '(or pass --project DIR of an existing Supabase project)',
    );
  }
  if (resolve(projectDir) === kitDir) {
    throw new InstallError('this is the kit itself: pass --project DIR of another project');
  }

  // The record of earlier runs.
  const manifestText = await readOrNull(abs(MANIFEST_PATH));
  const previous = manifestText === null ? null : parseManifest(manifestText);
  const migrationsDir = abs('supabase/migrations');
  const projectMigrations = await sqlFileNames(migrationsDir);
  if (previous === null) {
    let runtimeDirExists = true;
    try {
      await Deno.stat(abs(RUNTIME_DIR));
    } catch {
      runtimeDirExists = false;
    }
    if (runtimeDirExists) {
      throw new InstallError(
        `${RUNTIME_DIR}/ exists but has no manifest.json, so the installer did not write it ` +
          '(or its record is lost): move the directory away, or restore manifest.json; nothing ' +
          'was written',
      );
    }
    const ours: string[] = [];
    for (const name of projectMigrations) {
      const text = await Deno.readTextFile(join(migrationsDir, name));
      if (text.startsWith(MIGRATION_MARK)) ours.push(name);
    }
    if (ours.length > 0) {
      throw new InstallError(
        `supabase/migrations/ already holds Switchyard's SQL core (${ours.length} files from ` +
          `${ours[0]}) but ` +
          `${MANIFEST_PATH} is missing: restore it from version control, so the installer adds ` +
          'only new migrations; nothing was written',
      );
    }
  }

  const version = KIT_VERSION;
  const { files, bare } = await runtimeModules(kitDir);
  const imports = await runtimeImports(kitDir, files, bare);
  const plans: Planned[] = [];
  const conflicts: string[] = [];
  const notes: string[] = [];

  // 1. The runtime, the README; files recorded earlier and no longer shipped are removed.
  const runtime: Record<string, string> = {};
  const wanted = new Map<string, string>();
  for (const file of files) {
    wanted.set(file, await Deno.readTextFile(join(kitDir, 'lib', file)));
  }
  wanted.set('README.md', RUNTIME_README(version));
  for (const [file, content] of wanted) {
    const path = `${RUNTIME_DIR}/${file}`;
    const existing = await readOrNull(abs(path));
    runtime[file] = await sha256(content);
    if (existing !== null && existing !== content) {
      const recorded = previous?.runtime[file];
      if (recorded === undefined || recorded !== (await sha256(existing))) {
        conflicts.push(`${path} (edited since the installer wrote it)`);
      }
    }
    plans.push({ path, content, existing });
  }
  for (const [file, recorded] of Object.entries(previous?.runtime ?? {})) {
    if (wanted.has(file)) continue;
    const path = `${RUNTIME_DIR}/${file}`;
    const existing = await readOrNull(abs(path));
    if (existing === null) continue;
    if ((await sha256(existing)) !== recorded) {
      conflicts.push(`${path} (no longer part of the kit, and edited since it was written)`);
    }
    plans.push({ path, content: null, existing });
  }

  // 2. The registry, only when absent.
  const registryExisting = await readOrNull(abs(REGISTRY));
  if (registryExisting === null) {
    plans.push({
      path: REGISTRY,
      content: await Deno.readTextFile(join(kitDir, 'cli', 'templates', 'registry.ts')),
      existing: null,
    });
  }

  // 3. The functions' shared import map.
  const denoJsonc = await readOrNull(abs('supabase/functions/deno.jsonc'));
  const entriesText = JSON.stringify(imports, null, 2);
  if (denoJsonc !== null) {
    throw new InstallError(
      'supabase/functions/deno.jsonc exists: the installer edits only deno.json; add these ' +
        `entries to its "imports" by hand, then rerun:\n${entriesText}`,
    );
  }
  const denoJsonText = await readOrNull(abs(FUNCTIONS_DENO_JSON));
  let denoJson: Record<string, unknown> = {};
  if (denoJsonText !== null) {
    try {
      const parsed = JSON.parse(denoJsonText);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw 0;
      denoJson = parsed;
    } catch {
      throw new InstallError(
        `${FUNCTIONS_DENO_JSON} is not a JSON object (comments?): add these entries to its ` +
          `"imports" by hand, then rerun:\n${entriesText}`,
      );
    }
    if ('importMap' in denoJson) {
      throw new InstallError(
        `${FUNCTIONS_DENO_JSON} names an import map file ("importMap"): add these entries to ` +
          `that file by hand and remove nothing else, then rerun:\n${entriesText}`,
      );
    }
  }
  const currentImports =
    (typeof denoJson.imports === 'object' && denoJson.imports !== null
      ? denoJson.imports
      : {}) as Record<string, string>;
  const nextImports = { ...currentImports };
  for (const [key, value] of Object.entries(imports)) {
    const current = currentImports[key];
    if (current === value) continue;
    if (current !== undefined && current !== previous?.imports[key] && !force) {
      conflicts.push(
        `the "${key}" entry of ${FUNCTIONS_DENO_JSON} (maps to ${
          JSON.stringify(current)
        }, the kit needs ${JSON.stringify(value)})`,
      );
    }
    nextImports[key] = value;
  }
  const nextDenoJson = `${JSON.stringify({ ...denoJson, imports: nextImports }, null, 2)}\n`;
  plans.push({
    path: FUNCTIONS_DENO_JSON,
    content: denoJsonText !== null && JSON.stringify(nextImports) === JSON.stringify(currentImports)
      ? denoJsonText
      : nextDenoJson,
    existing: denoJsonText,
  });

  // 4. Migrations: recorded ones stay as they are; new ones go after the project's newest.
  const installed: InstalledMigration[] = [];
  const newestName = projectMigrations.filter((n) => /^\d{14}_/.test(n)).pop();
  const kitMigrations = await coreMigrations(kitDir);
  const toInstall = kitMigrations.filter((n) => !previous?.migrations.some((m) => m.kit === n));
  let at = toInstall.length === 0 ? new Date() : await timestampsAfter({
    newest: newestName?.slice(0, 14),
    newestName,
    count: toInstall.length,
    now: options.now ?? new Date(),
    what: `the kit's ${toInstall.length} new migration(s)`,
    refuse: (message) => new InstallError(message),
  });
  const locks = await Deno.readTextFile(
    join(kitDir, 'cli', 'templates', 'migration_locks.sql'),
  );
  for (const name of kitMigrations) {
    const text = await Deno.readTextFile(join(kitDir, 'supabase', 'migrations', name));
    const hash = await sha256(text);
    const recorded = previous?.migrations.find((m) => m.kit === name);
    if (recorded) {
      installed.push(recorded);
      if (recorded.sha256 !== hash) {
        notes.push(
          `the kit's ${name} changed after it was installed here as ${recorded.installedAs}; ` +
            'installed migrations are never rewritten (a released migration must not change: ' +
            'the kit should ship the change as a new migration)',
        );
      }
      continue;
    }
    const installedAs = `${migrationTimestamp(at)}_${installedName(name)}`;
    at = new Date(at.getTime() + 1000);
    installed.push({ kit: name, sha256: hash, installedAs });
    plans.push({
      path: `supabase/migrations/${installedAs}`,
      content: migrationText(name, version, locks, text),
      existing: null,
    });
  }
  for (const m of previous?.migrations ?? []) {
    if (!installed.includes(m)) installed.push(m); // a migration the kit dropped: keep its record
  }

  // 5. The manifest, last: it describes what is on disk.
  const manifest: InstallManifest = {
    kit: 'switchyard',
    version,
    runtime,
    migrations: installed,
    imports,
  };
  const manifestContent = `${JSON.stringify(manifest, null, 2)}\n`;
  plans.push({ path: MANIFEST_PATH, content: manifestContent, existing: manifestText });

  if (conflicts.length > 0 && !force) {
    throw new InstallError(
      `refusing to overwrite ${conflicts.join(', ')}: nothing was written. Rerun with --force ` +
        'to overwrite',
    );
  }

  const result: InstallResult['files'] = [];
  for (const plan of plans) {
    const path = abs(plan.path);
    if (plan.content === null) {
      await Deno.remove(path);
      result.push({ path: plan.path, action: 'removed' });
    } else if (plan.existing === plan.content) {
      result.push({ path: plan.path, action: 'unchanged' });
    } else {
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.writeTextFile(path, plan.content);
      result.push({ path: plan.path, action: plan.existing === null ? 'created' : 'updated' });
    }
  }
  if (registryExisting !== null) result.push({ path: REGISTRY, action: 'kept' });
  return {
    version,
    previousVersion: previous?.version ?? null,
    changed: result.some((f) => f.action !== 'unchanged' && f.action !== 'kept'),
    files: result,
    notes,
  };
}

/** The queues of the project's scaffolded queue functions (their index.ts names them). */
async function scaffoldedQueues(projectDir: string): Promise<string[]> {
  const queues: string[] = [];
  try {
    for await (const entry of Deno.readDir(join(projectDir, 'supabase', 'functions'))) {
      if (!entry.isDirectory) continue;
      const text = await readOrNull(
        join(projectDir, 'supabase', 'functions', entry.name, 'index.ts'),
      );
      const m = text && /^ \* Queue function for "([a-z][a-z0-9_]*)", written by/m.exec(text);
      if (m) queues.push(m[1]);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return queues.sort();
}

const USAGE = `usage: ${commandName('install')} [--project DIR] [--force] [--example]

Adds Switchyard to the Supabase project (made by \`supabase init\`): the runtime in
supabase/functions/_switchyard/, the SQL core in supabase/migrations/ (after the project's own),
supabase/functions/_shared/registry.ts when absent, and the import-map entries in
supabase/functions/deno.json. Rerun it after updating the kit: it adds only new migrations.

  --project DIR  the project root (holds supabase/config.toml); default: the project you are
                 in (the nearest directory upward with supabase/config.toml)
  --force        overwrite kit files edited in the project and import-map entries mapped elsewhere
  --example      also an example: the flow greet (supabase/functions/_shared/flows/greet.ts) in
                 the registry, its tests (greet_test.ts beside it, on the test engine), its
                 queue function greetings-worker, its compiled migration, and example.ts, a
                 client script that starts it and prints its typed output
  --keep-alive   then set up the keep-alive in the database of DATABASE_URL, as
                 \`${
  commandName('keep-alive')
}\` does (its options: --url URL [--bearer-from-env NAME]
                 [--debounce N] [--schedule CRON] [--without-pg-net]); the migrations must be
                 applied first (it checks, and says what is missing)
  -h, --help     this text`;

/** The command line of this script: its exit code. */
export async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        project: { type: 'string' },
        force: { type: 'boolean', default: false },
        example: { type: 'boolean', default: false },
        'keep-alive': { type: 'boolean', default: false },
        url: { type: 'string' },
        'bearer-from-env': { type: 'string' },
        debounce: { type: 'string' },
        schedule: { type: 'string' },
        'without-pg-net': { type: 'boolean' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  const v = parsed.values;
  const keepAliveArgs = [
    ...(v.url === undefined ? [] : ['--url', v.url]),
    ...(v['bearer-from-env'] === undefined ? [] : ['--bearer-from-env', v['bearer-from-env']]),
    ...(v.debounce === undefined ? [] : ['--debounce', v.debounce]),
    ...(v.schedule === undefined ? [] : ['--schedule', v.schedule]),
    ...(v['without-pg-net'] ? ['--without-pg-net'] : []),
  ];
  if (!v['keep-alive'] && keepAliveArgs.length > 0) {
    console.error(`error: ${keepAliveArgs[0]} is an option of --keep-alive\n\n${USAGE}`);
    return 2;
  }
  const code = await installAndReport(parsed.values.project, v.force, v.example);
  if (code !== 0 || !v['keep-alive']) return code;
  return await keepAlive(keepAliveArgs);
}

/** `--keep-alive`: the keep-alive command's own work, on DATABASE_URL (cli/keep_alive.ts). */
async function keepAlive(args: string[]): Promise<number> {
  console.log('\nkeep-alive:');
  let sql: ReturnType<typeof openSql> | undefined;
  try {
    sql = openSql(databaseUrl(), { max: 1, origin: connectionOrigin() });
    await runKeepAlive(sql, args);
    return 0;
  } catch (e) {
    const err = sql ? connectionFailure(fromSqlError(e), sql) as Error : e as Error;
    console.error(`error: ${err.message}`);
    return e instanceof UsageError ? 2 : 1;
  } finally {
    await sql?.end({ timeout: 2 }).catch(() => {});
  }
}

async function installAndReport(
  project: string | undefined,
  force: boolean,
  withExample: boolean,
): Promise<number> {
  try {
    const projectDir = findProject(project);
    const result = await install({ projectDir, force });
    for (const note of result.notes) console.error(`note: ${note}`);
    if (withExample) {
      const example = await installExample(projectDir, (m) => new InstallError(m));
      if (result.changed) console.log(`Switchyard ${result.version} -> ${projectDir}`);
      const written = example.files.filter((f) => f.action !== 'unchanged');
      for (const f of written) console.log(`${f.action.padEnd(9)} ${f.path}`);
      if (!result.changed && written.length === 0) {
        console.log(`nothing to do: Switchyard ${result.version} and its example are installed`);
      }
      console.log(
        `\nnext, test the flow (no database needed):\n` +
          `  ${
            atProjectRoot(
              denoCommand('test -A --config supabase/functions/deno.json supabase/functions/'),
            )
          }\n` +
          `then run it against a PostgreSQL (DATABASE_URL):\n` +
          `  ${userCommand('db:push')}\n` +
          `  ${
            atProjectRoot(denoCommand('run -A --config supabase/functions/deno.json example.ts'))
          }`,
      );
      return 0;
    }
    if (!result.changed) {
      console.log(`nothing to do: Switchyard ${result.version} is installed in ${projectDir}`);
      return 0;
    }
    const runtime = result.files.filter((f) =>
      f.path.startsWith(`${RUNTIME_DIR}/`) && f.path !== MANIFEST_PATH
    );
    const counts = new Map<string, number>();
    for (const f of runtime) counts.set(f.action, (counts.get(f.action) ?? 0) + 1);
    console.log(`Switchyard ${result.version} -> ${projectDir}`);
    console.log(
      `${RUNTIME_DIR}/ (the runtime): ${
        [...counts].map(([action, n]) => `${n} files ${action}`).join(', ')
      }`,
    );
    for (const f of result.files) {
      if (f.path.startsWith(`${RUNTIME_DIR}/`) && f.path !== MANIFEST_PATH) continue;
      if (f.action === 'unchanged') continue;
      console.log(`${f.action.padEnd(9)} ${f.path}`);
    }
    const cli = await supabaseCli(projectDir);
    if (result.previousVersion === null) {
      console.log(
        `\nnext: define flows in ${REGISTRY}, then \`${
          userCommand('scaffold-queue', ['<queue>'])
        }\`; apply the migrations with ${
          supabaseRemote(cli, 'db push', { aside: "the README's deploy steps" })
        }`,
      );
      return 0;
    }
    const queues = await scaffoldedQueues(projectDir);
    console.log(
      `\nupgraded from ${result.previousVersion}; next (docs/guide/upgrading.md), in this order:\n` +
        (queues.length === 0
          ? `  1. ${userCommand('scaffold-queue', ['<queue>'])} --force  (each queue ` +
            'function: its deno.json pins the new versions; registrations are kept)\n'
          : queues.map((q, i) =>
            `  ${i === 0 ? '1.' : '  '} ${userCommand('scaffold-queue', [q])} --force\n`
          ).join('')) +
        `  2. ${
          supabaseRemote(cli, 'db push', {
            aside: 'the migrations first: running functions keep working on them',
          })
        }\n` +
        `  3. ${cli.command} functions deploy${
          cli.major !== null && cli.major >= 3 ? ' --yes' : ''
        }   (the new runtime, after the migrations${
          cli.major === null ? '; Supabase CLI 3: --yes' : ''
        })`,
    );
    return 0;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
