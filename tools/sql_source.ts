/**
 * The SQL core's one current source and the migration assembled from it
 * (docs/design/code-layout.md#the-sql-source-and-its-migrations).
 *
 * `supabase/schemas/` is the only place SQL is edited: the schema, composite types, tables
 * (`tables/<NNN>_<name>.sql`, numbered), one file per function in the folder of its area
 * (`functions/<area>/<name>.sql`, the areas of {@linkcode AREAS}; supabase/schemas/README.md),
 * views, triggers, then the one privilege rule and the run-event exposure.
 * `supabase/upgrades/unreleased/` holds the hand-written steps the next release needs besides
 * redefinitions (ALTER TABLE, a new index, a backfill, a drop): `before/<NNN>_<name>.sql` run
 * before the redefinitions, `after/<NNN>_<name>.sql` after them, each phase in the order of its
 * numbers.
 *
 * `supabase/migrations/` keeps every released migration as released, plus at most one
 * unreleased migration, sorted last, which `deno task sql:assemble` writes: the upgrade steps,
 * every function and view of the source whose definition differs from the one the released
 * migrations leave, and the privilege rule and exposure (applied by every migration, so any
 * upgraded database has exactly a fresh one's privileges).
 *
 * ```sh
 * deno task sql:assemble            # (re)write the unreleased migration
 * deno task sql:assemble --check    # fail when it differs from what it would write
 * deno task sql:assemble --build    # print the script that builds a fresh database
 * ```
 *
 * @module
 */
import { basename, join } from 'node:path';
import { helpOption } from '../cli/_help.ts';
import { coreMigrations } from '../cli/_kit.ts';
import { KIT_ROOT } from '../cli/_project.ts';
import { definesOf, splitStatements } from './_sql_text.ts';
import { sqlFileNames } from '../cli/_util.ts';
import { releases } from './release_manifest.ts';

/** The source folder, relative to the kit. */
export const SCHEMAS = 'supabase/schemas';
/** The upgrade steps of the next release, relative to the kit. */
export const UPGRADES = 'supabase/upgrades/unreleased';
/** The suffix of the unreleased migration's file name. */
export const UNRELEASED_SUFFIX = '_core.sql';

/**
 * The areas of `supabase/schemas/functions/`, one folder each, in the order a fresh build reads
 * them (a function still comes after those it needs when it is created): the rules everything
 * uses, the queue catalog, flows, runs, then the claim path (claim, completion), waits, flow
 * control, schedules, workers, maintenance and the dashboard. Every function file sits in
 * exactly one of these folders (supabase/schemas/README.md says what each holds).
 */
export const AREAS: readonly string[] = [
  'rules',
  'queues',
  'flows',
  'runs',
  'claim',
  'completion',
  'waits',
  'flow_control',
  'schedules',
  'row_triggers',
  'workers',
  'maintenance',
  'dashboard',
];

/** A numbered file name (`010_clock_defaults.sql`): its number declares its place. */
const NUMBERED = /^(\d{3})_[a-z0-9_]+\.sql$/;

/** One file of the source, in the order a fresh build runs it. */
export interface SourceFile {
  /** Its path relative to the kit, e.g. `supabase/schemas/functions/runs/start_flow.sql`. */
  readonly path: string;
  readonly text: string;
}

async function readSource(kitDir: string, rel: string): Promise<SourceFile> {
  return { path: rel, text: await Deno.readTextFile(join(kitDir, rel)) };
}

/** The tables the source creates (names without schema). */
function tableNames(files: SourceFile[]): Set<string> {
  const names = new Set<string>();
  for (const f of files) {
    for (const s of splitStatements(f.text)) {
      const d = definesOf(s.body);
      if (d.kind === 'table' && d.action === 'create') names.add(d.name);
    }
  }
  return names;
}

/** `names` (numbered files) in the order of their numbers. */
function byNumber(names: string[]): string[] {
  const number = (n: string) => Number(NUMBERED.exec(n)?.[1] ?? Infinity);
  return [...names].sort((a, b) => number(a) - number(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The function files of the source, area by area ({@linkcode AREAS}), by file name within. */
async function functionFiles(kitDir: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  for (const area of AREAS) {
    for (const name of await sqlFileNames(join(kitDir, SCHEMAS, 'functions', area))) {
      files.push(await readSource(kitDir, `${SCHEMAS}/functions/${area}/${name}`));
    }
  }
  return files;
}

/**
 * The path of the file that defines `switchyard.<name>` (`supabase/schemas/functions/<area>/
 * <name>.sql`), or null when no area holds it.
 *
 * @example
 * ```ts
 * import { functionSourcePath } from './sql_source.ts';
 * console.log(await functionSourcePath('start_tasks')); // supabase/schemas/functions/claim/start_tasks.sql
 * ```
 */
export async function functionSourcePath(
  name: string,
  kitDir: string = KIT_ROOT,
): Promise<string | null> {
  for (const area of AREAS) {
    const path = `${SCHEMAS}/functions/${area}/${name}.sql`;
    try {
      if ((await Deno.stat(join(kitDir, path))).isFile) return path;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return null;
}

/**
 * The upgrade steps of one phase (`before` or `after`) of the next release, in the order of their
 * numbers (`010_clock_defaults.sql` runs before `020_…`).
 */
export async function upgradeSteps(
  phase: 'before' | 'after',
  kitDir: string = KIT_ROOT,
): Promise<SourceFile[]> {
  const names = byNumber(await sqlFileNames(join(kitDir, UPGRADES, phase)));
  return await Promise.all(names.map((n) => readSource(kitDir, `${UPGRADES}/${phase}/${n}`)));
}

/** Whether a function's arguments or result name one of `tables` (a row type). */
function usesRowType(functionText: string, tables: Set<string>): boolean {
  const body = splitStatements(functionText).find((s) => s.body)?.body ?? '';
  const header = body.slice(0, body.search(/\bas\s+\$|\$[A-Za-z_]*\$/i));
  for (const m of header.matchAll(/switchyard\.([a-z_][a-z0-9_]*)/gi)) {
    if (tables.has(m[1].toLowerCase())) return true;
  }
  return false;
}

/**
 * The source functions that must exist before a function is created: those its signature calls
 * (a parameter's default), and, for a function written in SQL, those its body calls (PostgreSQL
 * checks a SQL function's body when it is created, a migration with check_function_bodies on).
 */
function creationCalls(functionText: string, functions: Set<string>): string[] {
  const body = splitStatements(functionText).find((s) => s.body)?.body ?? '';
  const sqlBody = /\blanguage\s+sql\b/i.test(body);
  const checked = sqlBody ? body : body.slice(0, body.search(/\bas\s+\$|\$[A-Za-z_]*\$/i));
  const called = [...checked.matchAll(/switchyard\.([a-z_][a-z0-9_]*)\s*\(/gi)]
    .map((m) => m[1].toLowerCase());
  // The first match is the function's own name.
  return called.slice(1).filter((n) => functions.has(n));
}

/**
 * `files` (functions, by file name) with each one after the functions it needs when it is
 * created ({@linkcode creationCalls}): a parameter's default such as `now_at timestamptz default
 * switchyard.clock_now()`, a SQL function's body.
 */
function afterCreationCalls(files: SourceFile[]): SourceFile[] {
  const nameOf = (f: SourceFile) => f.path.slice(f.path.lastIndexOf('/') + 1, -4);
  const names = new Set(files.map(nameOf));
  const out: SourceFile[] = [];
  const placed = new Set<string>();
  const place = (f: SourceFile, path: string[]) => {
    const name = nameOf(f);
    if (placed.has(name) || path.includes(name)) return;
    for (const called of creationCalls(f.text, names)) {
      const g = files.find((x) => nameOf(x) === called);
      if (g) place(g, [...path, name]);
    }
    placed.add(name);
    out.push(f);
  };
  for (const f of files) place(f, []);
  return out;
}

/**
 * Every file of the source in the order a fresh build runs them: schema, types, the functions
 * whose signature names no table, the tables (by number), the functions whose arguments or
 * result are a table's row type, views, triggers, privileges, exposure. Within each group of
 * functions, area by area ({@linkcode AREAS}) and by file name within one, except that a
 * function comes after those it needs when it is created.
 */
export async function sourceFiles(kitDir: string = KIT_ROOT): Promise<SourceFile[]> {
  const at = (rel: string) => readSource(kitDir, `${SCHEMAS}/${rel}`);
  const tables = await Promise.all(
    byNumber(await sqlFileNames(join(kitDir, SCHEMAS, 'tables'))).map((n) => at(`tables/${n}`)),
  );
  const functions = await functionFiles(kitDir);
  const names = tableNames(tables);
  const late = afterCreationCalls(functions.filter((f) => usesRowType(f.text, names)));
  const early = afterCreationCalls(functions.filter((f) => !late.includes(f)));
  return [
    await at('schema.sql'),
    await at('types.sql'),
    ...early,
    ...tables,
    ...late,
    await at('views.sql'),
    await at('triggers.sql'),
    await at('privileges.sql'),
    await at('exposure.sql'),
  ];
}

/**
 * The script that builds a fresh SQL core from the source (PGMQ must be there first).
 * Function bodies are checked when they run, not when they are created, as `pg_dump` does it.
 */
export async function freshBuild(kitDir: string = KIT_ROOT): Promise<string> {
  const parts = ["select pg_catalog.set_config('check_function_bodies', 'false', false);\n"];
  for (const f of await sourceFiles(kitDir)) parts.push(`-- ${f.path}\n${f.text.trim()}\n`);
  parts.push("select pg_catalog.set_config('check_function_bodies', 'true', false);\n");
  return parts.join('\n');
}

/** The module a test engine loads the SQL core from, relative to the kit. */
export const CORE_BUILD_MODULE = 'lib/sql/core_build.ts';

/** `text` inside a template literal: backslashes, backquotes and `${` escaped. */
function templateLiteral(text: string): string {
  return '`' + text.replaceAll('\\', '\\\\').replaceAll('`', '\\`').replaceAll('${', '\\${') + '`';
}

/**
 * The text of `lib/sql/core_build.ts`: the fresh build ({@linkcode freshBuild}) and the
 * PGMQ-compatible layer as strings, what a test engine (`switchyard/testing`) loads into a
 * database of its own, so the package needs no file of `supabase/` at run time.
 *
 * @example
 * ```ts
 * import { CORE_BUILD_MODULE, coreBuildModule } from './sql_source.ts';
 * const stale = (await Deno.readTextFile(CORE_BUILD_MODULE)) !== (await coreBuildModule());
 * console.log(stale ? 'run deno task sql:assemble' : 'up to date');
 * ```
 */
export async function coreBuildModule(kitDir: string = KIT_ROOT): Promise<string> {
  const pgmq = await Deno.readTextFile(join(kitDir, 'pgmq_compat', 'pgmq.sql'));
  return `/**
 * The SQL core as a fresh build of \`supabase/schemas/\`
 * (docs/design/code-layout.md#the-sql-source-and-its-migrations), and the
 * PGMQ-compatible layer (\`pgmq_compat/pgmq.sql\`): what a test engine (\`switchyard/testing\`,
 * docs/design/clock.md) loads into a database of its own. Production applies
 * \`supabase/migrations/\` instead;
 * a database built from either is the same (tests/sql/source_test.ts).
 *
 * Generated by \`deno task sql:assemble\` (\`--check\` fails while it is out of date): edit the
 * source, not this file.
 *
 * @module
 */

/**
 * The script that builds the SQL core in a database that has PGMQ.
 *
 * @example
 * \`\`\`ts
 * import { CORE_BUILD_SQL } from './core_build.ts';
 * console.assert(CORE_BUILD_SQL.includes('create or replace function switchyard.clock_now()'));
 * \`\`\`
 */
export const CORE_BUILD_SQL: string =
  ${templateLiteral(await freshBuild(kitDir))};

/**
 * The PGMQ-compatible layer, for a database without the PGMQ extension (never Supabase).
 *
 * @example
 * \`\`\`ts
 * import { PGMQ_COMPAT_SQL } from './core_build.ts';
 * console.assert(PGMQ_COMPAT_SQL.includes('CREATE SCHEMA IF NOT EXISTS pgmq'));
 * \`\`\`
 */
export const PGMQ_COMPAT_SQL: string =
  ${templateLiteral(pgmq)};
`;
}

/** The migrations of the SQL core: released ones (in some release record) and the others. */
export async function coreMigrationFiles(
  kitDir: string = KIT_ROOT,
): Promise<{ released: string[]; unreleased: string[] }> {
  const all = await coreMigrations(kitDir);
  const released = new Set(
    (await releases(join(kitDir, 'releases'))).flatMap((r) => r.migrations.map((m) => m.file)),
  );
  return {
    released: all.filter((n) => released.has(n)),
    unreleased: all.filter((n) => !released.has(n)),
  };
}

function normalized(body: string): string {
  return body.split('\n').map((l) => l.trimEnd()).join('\n').trim();
}

/**
 * What the released migrations leave: the body of the last definition of every function and
 * view they create and do not drop afterwards, by name.
 */
export async function releasedDefinitions(
  kitDir: string = KIT_ROOT,
): Promise<Map<string, string>> {
  const defs = new Map<string, string>();
  for (const file of (await coreMigrationFiles(kitDir)).released) {
    const text = await Deno.readTextFile(join(kitDir, 'supabase', 'migrations', file));
    for (const s of splitStatements(text)) {
      const d = definesOf(s.body);
      if (d.kind !== 'function' && d.kind !== 'view') continue;
      const key = `${d.kind} ${d.name}`;
      if (d.action === 'create') defs.set(key, normalized(s.body));
      else if (d.action === 'drop') defs.delete(key);
    }
  }
  return defs;
}

/** The unreleased migration as `deno task sql:assemble` writes it, or null when nothing changed. */
export async function assemble(kitDir: string = KIT_ROOT): Promise<string | null> {
  const released = await releasedDefinitions(kitDir);
  const files = await sourceFiles(kitDir);
  const redefined: SourceFile[] = [];
  for (const f of files) {
    if (!f.path.startsWith(`${SCHEMAS}/functions/`) && f.path !== `${SCHEMAS}/views.sql`) continue;
    const changed = splitStatements(f.text).some((s) => {
      const d = definesOf(s.body);
      if (d.kind !== 'function' && d.kind !== 'view') return false;
      return released.get(`${d.kind} ${d.name}`) !== normalized(s.body);
    });
    if (changed) redefined.push(f);
  }
  const before = await upgradeSteps('before', kitDir);
  const after = await upgradeSteps('after', kitDir);
  if (redefined.length === 0 && before.length === 0 && after.length === 0) return null;
  const finishing = files.filter((f) =>
    f.path === `${SCHEMAS}/privileges.sql` || f.path === `${SCHEMAS}/exposure.sql`
  );
  const parts = [
    '-- The SQL core, unreleased: assembled by `deno task sql:assemble` from',
    `-- ${UPGRADES}/ and the files of ${SCHEMAS}/ whose definitions differ from what the`,
    '-- released migrations leave (docs/design/code-layout.md#the-sql-source-and-its-migrations).',
    '-- Do not edit: edit the source and assemble again. Released migrations are never edited.',
    '',
  ];
  for (const f of [...before, ...redefined, ...after, ...finishing]) {
    parts.push(`-- ${'-'.repeat(92)}\n-- ${f.path}\n\n${f.text.trim()}\n`);
  }
  return parts.join('\n');
}

/** Problems of `lib/sql/core_build.ts` against the source; empty when it is as assembled. */
export async function coreBuildProblems(kitDir: string = KIT_ROOT): Promise<string[]> {
  const module = await Deno.readTextFile(join(kitDir, CORE_BUILD_MODULE)).catch(() => null);
  if (module === await coreBuildModule(kitDir)) return [];
  return [
    `${CORE_BUILD_MODULE} is ${
      module === null ? 'missing' : 'not the fresh build of the source'
    }: run \`deno task sql:assemble\``,
  ];
}

/** Problems of `supabase/migrations/` against the source; empty when it is as assembled. */
export async function assemblyProblems(kitDir: string = KIT_ROOT): Promise<string[]> {
  const problems: string[] = [];
  const { released, unreleased } = await coreMigrationFiles(kitDir);
  const expected = await assemble(kitDir);
  if (unreleased.length > 1) {
    problems.push(
      `${unreleased.length} unreleased migrations (${unreleased.join(', ')}): at most one, ` +
        'written by `deno task sql:assemble`',
    );
  }
  const last = released[released.length - 1];
  for (const name of unreleased) {
    if (last && name <= last) {
      problems.push(`unreleased migration ${name} sorts before the released ${last}`);
    }
    if (!name.endsWith(UNRELEASED_SUFFIX)) {
      problems.push(`unreleased migration ${name} is not named <timestamp>${UNRELEASED_SUFFIX}`);
    }
  }
  if (expected === null && unreleased.length > 0) {
    problems.push(
      `unreleased migration ${unreleased[0]} exists but the source matches the released ` +
        'migrations: run `deno task sql:assemble` (it removes it)',
    );
  }
  if (expected !== null && unreleased.length === 0) {
    problems.push(
      'the source differs from the released migrations but there is no unreleased migration: ' +
        'run `deno task sql:assemble`',
    );
  }
  if (expected !== null && unreleased.length === 1) {
    const actual = await Deno.readTextFile(join(kitDir, 'supabase', 'migrations', unreleased[0]));
    if (actual !== expected) {
      const a = actual.split('\n');
      const b = expected.split('\n');
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      problems.push(
        `supabase/migrations/${unreleased[0]} is not what \`deno task sql:assemble\` writes: ` +
          `line ${i + 1} is ${JSON.stringify(a[i] ?? '(end of file)')}, assembled ` +
          `${JSON.stringify(b[i] ?? '(end of file)')}`,
      );
    }
  }
  return problems;
}

/**
 * The functions that read the clock (docs/design/clock.md): `clock_now`, the core's clock a
 * test engine may set, and `queue_now` and `queue_clock`, PGMQ's real clock. Nothing else in the
 * source calls now() or clock_timestamp() itself.
 */
export const CLOCK_FUNCTIONS: readonly string[] = ['clock_now', 'queue_now', 'queue_clock'];

/** `text` without its comments (`--` to the end of the line, `/* ... *\/`), strings kept. */
function withoutComments(text: string): string {
  let out = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (!quoted && c === '-' && text[i + 1] === '-') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
      continue;
    }
    if (!quoted && c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const skipped = text.slice(i, end < 0 ? text.length : end + 2);
      out += skipped.replace(/[^\n]/g, ' ');
      i += skipped.length - 1;
      continue;
    }
    if (c === "'") quoted = !quoted;
    out += c;
  }
  return out;
}

const RAW_CLOCK = new RegExp(
  [
    String.raw`\b(?:now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday)\s*\(`,
    String.raw`\b(?:current_timestamp|localtimestamp|current_date|current_time|localtime)\b`,
    String.raw`'(?:now|today|tomorrow|yesterday)'`,
  ].join('|'),
  'gi',
);

/**
 * Every read of the clock in the source outside {@linkcode CLOCK_FUNCTIONS} (code and the SQL in
 * its strings; comments aside), each named with its file and line: every time rule reads
 * `switchyard.clock_now()`, so a test engine's clock moves them all, and PGMQ's times are read
 * through `queue_now`/`queue_clock`.
 */
export async function clockProblems(kitDir: string = KIT_ROOT): Promise<string[]> {
  const problems: string[] = [];
  const own = new Set(CLOCK_FUNCTIONS.map((n) => `${n}.sql`));
  for (const f of await sourceFiles(kitDir)) {
    if (f.path.startsWith(`${SCHEMAS}/functions/`) && own.has(basename(f.path))) continue;
    const lines = withoutComments(f.text).split('\n');
    lines.forEach((line, i) => {
      for (const m of line.matchAll(RAW_CLOCK)) {
        problems.push(
          `${f.path}:${i + 1} reads the clock itself (${m[0].trim()}): use ` +
            'switchyard.clock_now() (a time rule or a recorded time), or switchyard.queue_now() / ' +
            "switchyard.queue_clock() for PGMQ's times (vt, enqueued_at, ranked_at)",
        );
      }
    });
  }
  return problems;
}

/** The `.sql` files under `dir` (relative to it), at any depth. */
async function sqlFilesUnder(dir: string, prefix = ''): Promise<string[]> {
  const found: string[] = [];
  try {
    for await (const entry of Deno.readDir(join(dir, prefix))) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory) found.push(...await sqlFilesUnder(dir, rel));
      else if (entry.name.endsWith('.sql')) found.push(rel);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return found.sort();
}

/** A migration's name or timestamp (`20261202001200_map_claim.sql`, `20261202000700`). */
const MIGRATION_NAME = /\b\d{14}(?:_[a-z0-9_]+(?:\.sql)?)?\b/;

/** Problems of numbered files (`<NNN>_<name>.sql`): a name without a number, a number twice. */
function numberingProblems(dir: string, names: string[]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const name of names) {
    const number = NUMBERED.exec(name)?.[1];
    if (!number) {
      problems.push(
        `${dir}/${name} has no number: name it <NNN>_<name>.sql (e.g. 010_clock_defaults.sql), ` +
          'the number declaring its place',
      );
      continue;
    }
    const other = seen.get(number);
    if (other) problems.push(`${dir}/${other} and ${dir}/${name} share the number ${number}`);
    seen.set(number, name);
  }
  return problems;
}

/**
 * Problems of the source's layout: each function defined once, in the file of its name in the
 * folder of one area ({@linkcode AREAS}); tables and upgrade steps numbered, no number twice;
 * every function and table file opens with a header comment saying what it holds and why, and no
 * file names a migration (the source says what and why; a migration's name is history).
 */
export async function layoutProblems(kitDir: string = KIT_ROOT): Promise<string[]> {
  const problems: string[] = [];
  const areas = new Set(AREAS);
  for (const rel of await sqlFilesUnder(join(kitDir, SCHEMAS, 'functions'))) {
    const parts = rel.split('/');
    if (parts.length !== 2 || !areas.has(parts[0])) {
      problems.push(
        `${SCHEMAS}/functions/${rel} is outside an area folder: move it to ` +
          `${SCHEMAS}/functions/<area>/${parts[parts.length - 1]}, the area one of ` +
          `${AREAS.join(', ')} (supabase/schemas/README.md)`,
      );
    }
  }
  problems.push(
    ...numberingProblems(
      `${SCHEMAS}/tables`,
      await sqlFileNames(join(kitDir, SCHEMAS, 'tables')),
    ),
  );
  for (const phase of ['before', 'after']) {
    const dir = `${UPGRADES}/${phase}`;
    problems.push(...numberingProblems(dir, await sqlFileNames(join(kitDir, dir))));
  }
  const seen = new Map<string, string>();
  const steps = [...await upgradeSteps('before', kitDir), ...await upgradeSteps('after', kitDir)];
  for (const f of [...await sourceFiles(kitDir), ...steps]) {
    const named = MIGRATION_NAME.exec(f.text);
    if (named) {
      const line = f.text.slice(0, named.index).split('\n').length;
      problems.push(
        `${f.path}:${line} names the migration ${named[0]}: say what the code does and why ` +
          '(a migration name is history, and goes stale)',
      );
    }
    const statements = splitStatements(f.text).filter((s) => s.body);
    const inFunctions = f.path.startsWith(`${SCHEMAS}/functions/`);
    const inTables = f.path.startsWith(`${SCHEMAS}/tables/`);
    const own = inFunctions ? basename(f.path, '.sql') : null;
    if ((inFunctions || inTables) && !/^--[ \t]*[^\s-]/.test(f.text)) {
      problems.push(
        `${f.path} has no header: open it with a comment saying what it holds and why`,
      );
    }
    if (inFunctions && statements.length !== 1) {
      problems.push(`${f.path} holds ${statements.length} statements: one create function only`);
    }
    for (const s of statements) {
      const d = definesOf(s.body);
      if (d.kind !== 'function') continue;
      if (d.action === 'drop') {
        // An upgrade step is where a drop belongs (a signature that changes, say).
        if (!f.path.startsWith(`${UPGRADES}/`)) {
          problems.push(
            `${f.path} drops function ${d.name}: drops are upgrade steps (${UPGRADES})`,
          );
        }
        continue;
      }
      const where = seen.get(d.name);
      if (where) problems.push(`function ${d.name} is defined twice: ${where} and ${f.path}`);
      seen.set(d.name, f.path);
      if (own !== d.name) {
        problems.push(
          `function ${d.name} is defined in ${f.path}: each function lives in ` +
            `${SCHEMAS}/functions/<area>/${d.name}.sql`,
        );
      }
    }
  }
  return problems;
}

async function main(args: string[]): Promise<number> {
  helpOption(
    `usage: deno task sql:assemble [--check | --build]

(Re)writes the unreleased migration of the SQL core from ${SCHEMAS}/ and ${UPGRADES}/
(docs/design/code-layout.md#the-sql-source-and-its-migrations). --check changes nothing and
fails when supabase/migrations/ is not what it would write or the source's layout is broken;
--build prints the script that builds a fresh SQL core from the source.`,
    args,
  );
  if (args.includes('--build')) {
    console.log(await freshBuild());
    return 0;
  }
  if (args.includes('--check')) {
    const problems = [
      ...await layoutProblems(),
      ...await clockProblems(),
      ...await assemblyProblems(),
      ...await coreBuildProblems(),
    ];
    for (const p of problems) console.error(`sql:assemble --check: ${p}`);
    if (problems.length === 0) console.log('sql:assemble --check: the source and migrations agree');
    return problems.length ? 1 : 0;
  }
  const layout = [...await layoutProblems(), ...await clockProblems()];
  if (layout.length) {
    for (const p of layout) console.error(`sql:assemble: ${p}`);
    return 1;
  }
  const module = join(KIT_ROOT, CORE_BUILD_MODULE);
  const moduleText = await coreBuildModule();
  if ((await Deno.readTextFile(module).catch(() => null)) !== moduleText) {
    await Deno.writeTextFile(module, moduleText);
    console.log(`sql:assemble: wrote ${CORE_BUILD_MODULE}`);
  }
  const dir = join(KIT_ROOT, 'supabase', 'migrations');
  const { released, unreleased } = await coreMigrationFiles();
  const text = await assemble();
  if (unreleased.length > 1) {
    console.error(
      `sql:assemble: ${unreleased.length} unreleased migrations: ${unreleased.join(', ')}`,
    );
    return 1;
  }
  if (text === null) {
    for (const name of unreleased) await Deno.remove(join(dir, name));
    console.log(
      'sql:assemble: the source matches the released migrations; no unreleased migration',
    );
    return 0;
  }
  let name = unreleased[0];
  if (!name) {
    const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
    const last = released[released.length - 1]?.slice(0, 14) ?? '0';
    name = `${stamp > last ? stamp : String(BigInt(last) + 1n)}${UNRELEASED_SUFFIX}`;
  }
  await Deno.writeTextFile(join(dir, name), text);
  console.log(`sql:assemble: wrote supabase/migrations/${name}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
