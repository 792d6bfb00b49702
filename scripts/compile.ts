/**
 * `deno task compile [--project DIR] [--check]`: writes the registry's flows into a migration,
 * so a flow can be started right after `supabase db push`, before any queue function has run
 * (docs/ARCHITECTURE.md §4.1).
 *
 * It loads `supabase/functions/_shared/registry.ts` as a queue function does (in an installed
 * project with the project's import map, against the installed runtime) and writes
 * `supabase/migrations/<timestamp>_switchyard_flows.sql` with what a worker's start-up compiles:
 * `select switchyard.ensure_flow(<shape>)` for each concrete flow, then
 * `select switchyard.sync_alias(<alias>, <versions>)` for each alias that the database does not
 * have yet, in registry order (an existing alias moves when the first worker with the new
 * registry starts, as before, so running workers deployed earlier are never handed a version
 * they lack). The same SQL functions, so a worker started later verifies what the migration compiled, and a
 * migration whose shape a database already holds differently is refused at push as a worker
 * would be refused (SY004: a concrete flow never changes; a change of runtime options only is
 * applied).
 *
 * Migrations are never rewritten (a database may have applied them): it reads what the project's
 * earlier `*_switchyard_flows.sql` migrations compiled, and a new migration holds only the flows
 * that are new or differ and the aliases whose versions changed. Nothing new: it writes nothing
 * and says so. The timestamp is one second after the newest migration and never after now (as
 * the scaffold's). `--check` writes nothing and exits 1 when a migration is due (for CI).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join, relative, resolve } from 'node:path';
import { migrationTimestamp, readOrNull, sqlFileNames, timestampsAfter } from './_util.ts';
import { projectPath } from './_kit.ts';
import { REGISTRY_PATH, registryPlan, ScaffoldError } from './scaffold_queue.ts';

/** The file name ending of the migrations this command writes. */
export const FLOWS_MIGRATION_SUFFIX = '_switchyard_flows.sql';

/** Options of {@linkcode compileFlows}. */
export interface CompileOptions {
  /** The project (its `supabase/` directory holds the registry and the migrations). */
  projectDir: string;
  /** Write nothing; report what would be written. */
  check?: boolean;
  /** The clock for the migration timestamp (tests). */
  now?: Date;
}

/** What {@linkcode compileFlows} did or would do. */
export interface CompileResult {
  /** The migration written (or due with `check`), relative to the project; null when none. */
  path: string | null;
  /** Concrete flows it compiles: new ones, and ones whose earlier compiled shape differs. */
  flows: { slug: string; change: 'new' | 'changed'; earlier?: string }[];
  /** Aliases it syncs, each with its versions (the last is the target). */
  aliases: [string, string[]][];
  /** Concrete flows the project's earlier migrations already compile as they are now. */
  unchanged: string[];
}

/** A SQL string literal (standard_conforming_strings, which Supabase and PostgreSQL default to). */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

const ENSURE = /^select switchyard\.ensure_flow\('((?:[^']|'')*)'::jsonb\);$/;
const SYNC = /^select switchyard\.sync_alias\('((?:[^']|'')*)', array\[(.*)\]::text\[\]\)$/;

/** What the earlier flows migrations compiled: slug → [shape JSON, file]; alias → versions. */
async function compiledSoFar(migrationsDir: string, names: string[]) {
  const flows = new Map<string, { json: string; file: string }>();
  const aliases = new Map<string, string>();
  for (const name of names.filter((n) => n.endsWith(FLOWS_MIGRATION_SUFFIX))) {
    const text = await Deno.readTextFile(join(migrationsDir, name));
    for (const line of text.split('\n')) {
      const ensure = ENSURE.exec(line);
      if (ensure) {
        const shape = JSON.parse(ensure[1].replaceAll("''", "'"));
        flows.set(shape.slug, { json: JSON.stringify(shape), file: name });
      }
      const sync = SYNC.exec(line);
      if (sync) aliases.set(sync[1].replaceAll("''", "'"), sync[2]);
    }
  }
  return { flows, aliases };
}

const versionsSql = (versions: string[]) => versions.map(literal).join(', ');

/**
 * Compiles the registry's flows into a migration (see the module docs).
 *
 * @example
 * ```ts
 * import { compileFlows } from './compile.ts';
 *
 * const result = await compileFlows({ projectDir: '../my-app', check: true });
 * console.log(result.path ?? 'up to date', result.flows);
 * ```
 */
export async function compileFlows(options: CompileOptions): Promise<CompileResult> {
  const projectDir = resolve(options.projectDir);
  const migrationsDir = join(projectDir, 'supabase', 'migrations');
  if ((await readOrNull(join(projectDir, 'supabase', 'config.toml'))) === null) {
    throw new ScaffoldError(
      `${join(projectDir, 'supabase', 'config.toml')} is missing: run compile in a Supabase ` +
        'project (supabase init) or pass --project DIR',
    );
  }
  const plan = await registryPlan(projectDir);
  const names = await sqlFileNames(migrationsDir);
  const earlier = await compiledSoFar(migrationsDir, names);

  const result: CompileResult = { path: null, flows: [], aliases: [], unchanged: [] };
  const statements: string[] = [];
  for (const p of plan.placements) {
    const json = JSON.stringify(p.shape);
    const before = earlier.flows.get(p.flow);
    if (before?.json === json) {
      result.unchanged.push(p.flow);
      continue;
    }
    result.flows.push(
      before ? { slug: p.flow, change: 'changed', earlier: before.file } : {
        slug: p.flow,
        change: 'new',
      },
    );
    statements.push(`select switchyard.ensure_flow(${literal(json)}::jsonb);`);
  }
  for (const [alias, versions] of plan.aliases) {
    if (earlier.aliases.get(alias) === versionsSql(versions)) continue;
    result.aliases.push([alias, versions]);
    // Only an alias no database has yet is activated at push. An existing one moves when the
    // first worker with this registry starts, as before: workers deployed earlier, still
    // polling, must never be handed a version they lack (an unsupported batch pauses them).
    statements.push(
      `select switchyard.sync_alias(${literal(alias)}, array[${versionsSql(versions)}]::text[])`,
      `  where not exists (select 1 from switchyard.aliases a where a.alias = ${literal(alias)});`,
    );
  }
  if (statements.length === 0) return result;

  const newestName = names.filter((n) => /^\d{14}_/.test(n)).pop();
  const at = await timestampsAfter({
    newest: newestName?.slice(0, 14),
    newestName,
    count: 1,
    now: options.now ?? new Date(),
    what: 'the flows migration',
    refuse: (message) => new ScaffoldError(message),
  });
  const path = join(migrationsDir, `${migrationTimestamp(at)}${FLOWS_MIGRATION_SUFFIX}`);
  result.path = relative(projectDir, path);
  if (options.check) return result;
  const header = [
    `-- The flows of ${REGISTRY_PATH}, written by \`deno task compile\`: what a`,
    "-- worker's start-up compiles (ensure_flow for each concrete flow, then sync_alias for each",
    '-- alias the database does not have yet: an existing alias moves when the first worker with',
    '-- this registry starts), so a flow can be started right after `supabase db push`. Never',
    '-- edit or rewrite it (a database may have applied it); a changed registry gets a new one.',
    ...result.flows.map((f) =>
      f.change === 'new' ? `-- new flow ${f.slug}` : `-- flow ${f.slug} differs from ${f.earlier}`
    ),
  ];
  await Deno.writeTextFile(path, [...header, ...statements, ''].join('\n'));
  return result;
}

const USAGE = `usage: deno task compile [--project DIR] [--check]

Writes the flows of DIR/${REGISTRY_PATH} into a migration
(supabase/migrations/<timestamp>${FLOWS_MIGRATION_SUFFIX}), as a worker's start-up compiles them,
so they can be started right after \`supabase db push\`. Only new or changed flows and aliases;
nothing new, nothing written.

  --project DIR  the Supabase project (default: the current directory)
  --check        write nothing; exit 1 when a migration is due
  -h, --help     this text`;

/** The command line of this script: its exit code. */
export async function main(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        project: { type: 'string' },
        check: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  try {
    const result = await compileFlows({
      projectDir: values.project === undefined ? '.' : projectPath(values.project),
      check: values.check,
    });
    if (result.path === null) {
      console.log(
        `nothing to do: the migrations compile every flow of the registry as it is ` +
          `(${result.unchanged.length} flows)`,
      );
      return 0;
    }
    console.log(`${values.check ? 'due' : 'created'}   ${result.path}`);
    for (const f of result.flows) {
      console.log(
        f.change === 'new'
          ? `  flow ${f.slug}`
          : `  flow ${f.slug}: differs from what ${f.earlier} ` +
            'compiled. A change of runtime options is applied at push; any other change is ' +
            'refused there (SY004), a concrete flow never changes: deploy it under a new slug, or ' +
            `delete ${f.earlier} if no shared database applied it`,
      );
    }
    for (const [alias, versions] of result.aliases) {
      console.log(
        `  alias ${alias} -> ${versions[versions.length - 1]} (when new; an existing alias ` +
          'moves when the first worker with this registry starts)',
      );
    }
    if (values.check) return 1;
    console.log('\nnext: apply it (supabase db push, or deno task db:push); flows start at once');
    return 0;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
