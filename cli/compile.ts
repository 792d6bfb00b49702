/**
 * `deno task compile [--project DIR] [--check]` (`npx switchyard compile` from the npm package;
 * without `--project`, the project the user is in, `cli/_invocation.ts`): writes the registry's flows into a migration,
 * so a flow can be started right after `supabase db push`, before any queue function has run
 * (docs/design/worker.md#compiling-at-deploy-and-in-local-development), and is the gate before the
 * push.
 *
 * It loads `supabase/functions/_shared/registry.ts` as a queue function does (in an installed
 * project with the project's import map, against the installed runtime) and writes
 * `supabase/migrations/<timestamp>_switchyard_flows.sql` with what a worker's start-up compiles:
 * `select switchyard.ensure_flow(<shape>)` for each concrete flow, then
 * `select switchyard.declare_alias(<alias>, <versions>)` for each alias, in registry order.
 * `declare_alias` records what the registry declares and moves the alias to its target when
 * that strands no started run of a retired version and no live worker lacks the target
 * (docs/design/versions.md, Declared aliases): so the migrations, replayed on any database in
 * order, leave each alias where the current registry puts it.
 *
 * Migrations are never rewritten (a database may have applied them): it reads what the project's
 * earlier `*_switchyard_flows.sql` migrations compiled, and a new migration holds only the flows
 * that are new or whose runtime options changed, and the aliases whose version lists changed (or
 * that earlier migrations only set `where not exists`, before declarations). A flow the earlier
 * migrations compiled with another shape (steps, dependencies, kinds, conditions, queues) is
 * refused here, before the push that would refuse it (`SY004`): exit 1, nothing written, the
 * differences named by step, the next free slug in the flow's own naming and the commands to go
 * on (cli/_shape_change.ts decides as the SQL core does). A queue the registry routes steps
 * to with no queue function in `supabase/functions/` gets a warning naming the scaffold command
 * to run (`npx switchyard scaffold-queue <queue>`, as the user runs the kit). Nothing new: it writes nothing and says so. The timestamp
 * is one second after the newest migration and never after now (as the scaffold's). `--check`
 * writes nothing and exits 1 when a migration is due, a shape change is refused or a queue has no
 * function (for CI).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join, relative, resolve } from 'node:path';
import { migrationTimestamp, readOrNull, sqlFileNames, timestampsAfter } from './_util.ts';
import {
  commandName,
  findProject,
  supabaseCli,
  supabaseRemote,
  userCommand,
} from './_invocation.ts';
import { REGISTRY_PATH, registryPlan, ScaffoldError } from './scaffold_queue.ts';
import { nextSlug, shapeChange } from './_shape_change.ts';
import { defaultFunctionName } from '../lib/worker/worker.ts';

/** The file name ending of the migrations this command writes. */
export const FLOWS_MIGRATION_SUFFIX = '_switchyard_flows.sql';

/** Options of {@linkcode compileFlows}. */
export interface CompileOptions {
  /** The project (its `supabase/` directory holds the registry and the migrations). */
  projectDir: string;
  /** Write nothing; report what would be written. */
  check?: boolean;
  /**
   * How the commands it prints name the project (`--project` as given); default: as the user
   * named the project {@linkcode findProject} found, else `projectDir`.
   */
  projectArg?: string;
  /** The clock for the migration timestamp (tests). */
  now?: Date;
}

/** What {@linkcode compileFlows} did or would do. */
export interface CompileResult {
  /** The migration written (or due with `check`), relative to the project; null when none. */
  path: string | null;
  /**
   * Concrete flows it compiles: new ones, and ones whose runtime options changed since the
   * earlier migration that compiled them (applied at push, recorded).
   */
  flows: { slug: string; change: 'new' | 'options'; earlier?: string; differences?: string[] }[];
  /** Aliases it declares, each with its versions (the last is the target). */
  aliases: [string, string[]][];
  /** Versions earlier migrations declared under an alias that the registry no longer lists. */
  retired: [string, string[]][];
  /** Concrete flows the project's earlier migrations already compile as they are now. */
  unchanged: string[];
  /** Problems that do not stop the migration (a routed queue with no queue function). */
  warnings: string[];
}

/** The commands a {@linkcode ShapeChangeError} tells to run, as the user types them. */
export interface RefusalCommands {
  /** `npx switchyard compile` (with `--project` where needed). */
  compile: string;
  /** `npx switchyard drain`. */
  drain: string;
  /** `npx switchyard serve`. */
  serve: string;
  /** The push and the deploy: `supabase db push --linked, then supabase functions deploy`. */
  deploy: string;
}

/** A shape change of an already compiled concrete flow, refused before the push. */
export class ShapeChangeError extends ScaffoldError {
  /** Each refused flow: the migration that compiled it, what changed, the slug to use instead. */
  readonly refused: { slug: string; earlier: string; differences: string[]; next: string }[];
  /** The warnings of the same run (a routed queue with no queue function). */
  readonly warnings: string[];
  /** Creates the refusal with the message a user reads (see {@linkcode compileFlows}). */
  constructor(
    refused: { slug: string; earlier: string; differences: string[]; next: string }[],
    commands: RefusalCommands,
    aliasOf: (slug: string) => string | null,
    warnings: string[] = [],
  ) {
    const lines = refused.flatMap((r) => {
      const alias = aliasOf(r.slug);
      return [
        `flow ${r.slug} is compiled by ${r.earlier} with another shape; ${REGISTRY_PATH} now ` +
        'changes:',
        ...r.differences.map((d) => `  - ${d}`),
        `A compiled concrete flow never changes its steps, dependencies, kinds, conditions or ` +
        `queues (a database may hold runs of it; \`supabase db push\` would refuse it, SY004); ` +
        `only runtime options may change. Deploy the change as a new version, ${r.next}:`,
        `  1. give the changed flow the slug '${r.next}' (new Flow({ slug: '${r.next}', … })) and ` +
        `keep ${r.slug} as ${r.earlier} compiled it, for its runs`,
        `  2. list ${r.next} after ${r.slug} in ${REGISTRY_PATH}` +
        (alias === null ? '' : ` (alias ${alias})`) +
        `; remove ${r.slug} once \`${commands.drain}\` shows it drained`,
        `  3. ${commands.compile}`,
        `  4. ${commands.deploy}`,
      ];
    });
    super(
      [
        ...lines,
        'Nothing was written. (In local development a worker recompiles a changed shape: ' +
        `${commands.serve}.)`,
      ].join('\n'),
    );
    this.name = 'ShapeChangeError';
    this.refused = refused;
    this.warnings = warnings;
  }
}

/** A SQL string literal (standard_conforming_strings, which Supabase and PostgreSQL default to). */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

const ENSURE = /^select switchyard\.ensure_flow\('((?:[^']|'')*)'::jsonb\);$/;
// Before declarations (0.3.0 and earlier): `select switchyard.sync_alias(...)` followed by
// `  where not exists (…that alias…);`, which activates only an alias a database lacks.
const SYNC = /^select switchyard\.sync_alias\('((?:[^']|'')*)', array\[(.*)\]::text\[\]\)$/;
const DECLARE = /^select switchyard\.declare_alias\('((?:[^']|'')*)', array\[(.*)\]::text\[\]\);$/;

/**
 * What the earlier flows migrations compiled: slug → [shape, file]; alias → its versions (as SQL)
 * and whether a declaration (rather than a `where not exists` sync) stated them.
 */
async function compiledSoFar(migrationsDir: string, names: string[]) {
  const flows = new Map<string, { shape: unknown; file: string }>();
  const aliases = new Map<string, { versions: string; declared: boolean }>();
  for (const name of names.filter((n) => n.endsWith(FLOWS_MIGRATION_SUFFIX))) {
    const text = await Deno.readTextFile(join(migrationsDir, name));
    for (const line of text.split('\n')) {
      const ensure = ENSURE.exec(line);
      if (ensure) {
        const shape = JSON.parse(ensure[1].replaceAll("''", "'"));
        flows.set(shape.slug, { shape, file: name });
      }
      const sync = SYNC.exec(line);
      if (sync) aliases.set(sync[1].replaceAll("''", "'"), { versions: sync[2], declared: false });
      const declare = DECLARE.exec(line);
      if (declare) {
        aliases.set(declare[1].replaceAll("''", "'"), { versions: declare[2], declared: true });
      }
    }
  }
  return { flows, aliases };
}

/**
 * The routed queues of the plan that no function in `supabase/functions/` polls: a function
 * directory named as the scaffold names it, or any function whose `index.ts` names the queue as
 * its `queueName`.
 */
async function queuesWithoutFunction(
  projectDir: string,
  placements: { kind: string; flow: string; queues: string[] }[],
): Promise<Map<string, string[]>> {
  const functionsDir = join(projectDir, 'supabase', 'functions');
  const dirs = new Set<string>();
  const sources: string[] = [];
  try {
    for await (const entry of Deno.readDir(functionsDir)) {
      if (!entry.isDirectory) continue;
      const source = await readOrNull(join(functionsDir, entry.name, 'index.ts'));
      if (source === null) continue;
      dirs.add(entry.name);
      sources.push(source);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const missing = new Map<string, string[]>();
  for (const p of placements.filter((p) => p.kind === 'routed')) {
    for (const queue of p.queues) {
      const named = new RegExp(`queueName:\\s*(['"\`])${queue}\\1`);
      if (dirs.has(defaultFunctionName(queue)) || sources.some((s) => named.test(s))) continue;
      missing.set(queue, [...(missing.get(queue) ?? []), p.flow]);
    }
  }
  return missing;
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

  const result: CompileResult = {
    path: null,
    flows: [],
    aliases: [],
    retired: [],
    unchanged: [],
    warnings: [],
  };
  const refused: ConstructorParameters<typeof ShapeChangeError>[0] = [];
  const taken = [...earlier.flows.keys(), ...plan.placements.map((p) => p.flow)];
  const statements: string[] = [];
  for (const p of plan.placements) {
    const before = earlier.flows.get(p.flow);
    const change = before ? shapeChange(before.shape, p.shape) : null;
    if (change?.kind === 'same') {
      result.unchanged.push(p.flow);
      continue;
    }
    if (change?.kind === 'shape') {
      refused.push({
        slug: p.flow,
        earlier: join('supabase', 'migrations', before!.file),
        differences: change.differences,
        next: nextSlug(p.flow, taken),
      });
      continue;
    }
    result.flows.push(
      change
        ? {
          slug: p.flow,
          change: 'options',
          earlier: before!.file,
          differences: change.differences,
        }
        : { slug: p.flow, change: 'new' },
    );
    statements.push(`select switchyard.ensure_flow(${literal(JSON.stringify(p.shape))}::jsonb);`);
  }
  // How the commands this prints name the project.
  const named = { project: options.projectArg ?? projectDir };
  for (const [queue, flows] of await queuesWithoutFunction(projectDir, plan.placements)) {
    result.warnings.push(
      `queue ${queue} has no queue function in supabase/functions/ (${
        flows.join(', ')
      } route steps to it): its tasks would wait with no worker. Write it: ` +
        userCommand('scaffold-queue', [queue], named),
    );
  }
  if (refused.length > 0) {
    const aliasOf = (slug: string) =>
      plan.aliases.find(([, versions]) => versions.includes(slug))?.[0] ?? null;
    const cli = await supabaseCli(projectDir);
    throw new ShapeChangeError(
      refused,
      {
        compile: userCommand('compile', [], named),
        drain: userCommand('drain'),
        serve: userCommand('serve', [], named),
        deploy: `${supabaseRemote(cli, 'db push')}, then ${cli.command} functions deploy`,
      },
      aliasOf,
      result.warnings,
    );
  }
  for (const [alias, versions] of plan.aliases) {
    const before = earlier.aliases.get(alias);
    if (before?.declared && before.versions === versionsSql(versions)) continue;
    result.aliases.push([alias, versions]);
    const left = [...(before?.versions ?? '').matchAll(/'((?:[^']|'')*)'/g)]
      .map((m) => m[1].replaceAll("''", "'")).filter((v) => !versions.includes(v));
    if (left.length > 0) result.retired.push([alias, left]);
    statements.push(
      `select switchyard.declare_alias(${literal(alias)}, array[${
        versionsSql(versions)
      }]::text[]);`,
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
    `-- The flows of ${REGISTRY_PATH}, written by \`npx switchyard compile\`: what a`,
    "-- worker's start-up compiles (ensure_flow for each concrete flow), then declare_alias for each",
    '-- alias: it records the versions the registry declares and moves the alias to the last one',
    '-- unless that strands started runs of a retired version or hands live workers a version they',
    '-- lack (select * from switchyard.alias_status() says why; the first worker with this registry',
    '-- then moves it). So a flow can be started right after `supabase db push`. Never edit or',
    '-- rewrite it (a database may have applied it); a changed registry gets a new one.',
    ...result.flows.map((f) =>
      f.change === 'new'
        ? `-- new flow ${f.slug}`
        : `-- flow ${f.slug}: runtime options changed since ${f.earlier} (${
          f.differences!.join('; ')
        })`
    ),
  ];
  await Deno.writeTextFile(path, [...header, ...statements, ''].join('\n'));
  return result;
}

const USAGE = `usage: ${commandName('compile')} [--project DIR] [--check]

Writes the flows of the project's ${REGISTRY_PATH} into a migration
(supabase/migrations/<timestamp>${FLOWS_MIGRATION_SUFFIX}), as a worker's start-up compiles them,
so they can be started right after \`supabase db push\`, and declares each alias's versions so
every database converges to the registry. Only new flows, runtime option changes and changed
aliases; nothing new, nothing written. A changed shape of a compiled flow is refused (exit 1,
nothing written) with what changed and the slug to deploy it under; a routed queue with no
queue function is warned about.

  --project DIR  the Supabase project; default: the project you are in (the nearest directory
                 upward with supabase/config.toml)
  --check        write nothing; exit 1 when a migration is due, a shape change is refused or a
                 queue has no function (for CI)
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
    const projectDir = findProject(values.project);
    const result = await compileFlows({ projectDir, check: values.check });
    for (const w of result.warnings) console.error(`warning: ${w}`);
    if (result.path === null) {
      console.log(
        `nothing to do: the migrations compile every flow of the registry as it is ` +
          `(${result.unchanged.length} flows)`,
      );
      return values.check && result.warnings.length > 0 ? 1 : 0;
    }
    console.log(`${values.check ? 'due' : 'created'}   ${result.path}`);
    for (const f of result.flows) {
      console.log(
        f.change === 'new'
          ? `  flow ${f.slug}`
          : `  flow ${f.slug}: runtime options changed since ${f.earlier} (${
            f.differences!.join('; ')
          }): applied at push to tasks created from then on, and recorded ` +
            '(select * from switchyard.flow_option_history())',
      );
    }
    for (const [alias, versions] of result.aliases) {
      console.log(
        `  alias ${alias} -> ${versions[versions.length - 1]}` +
          (versions.length > 1 ? ` (keeps ${versions.slice(0, -1).join(', ')} for drain)` : ''),
      );
    }
    for (const [alias, left] of result.retired) {
      console.log(
        `  alias ${alias}: ${left.join(', ')} leave(s) the registry. Retire a version only once ` +
          `\`${userCommand('drain')}\` shows it drained on every database: where it still has ` +
          'started runs ' +
          'nothing in this registry can finish them, so the worker refuses to start (and an ' +
          'alias still on it stays) until it is listed again',
      );
    }
    if (values.check) return 1;
    const cli = await supabaseCli(projectDir);
    console.log(
      `\nnext: apply it with ${supabaseRemote(cli, 'db push')}, or against DATABASE_URL with ` +
        `${userCommand('db:push')}; flows start at once. An alias ` +
        'moves at push unless that would strand started runs of a version the registry no ' +
        'longer lists, or hand live workers a version they lack: then the first worker with ' +
        'this registry moves it (select * from switchyard.alias_status() says which and why)',
    );
    return 0;
  } catch (e) {
    if (e instanceof ShapeChangeError) {
      for (const w of e.warnings) console.error(`warning: ${w}`);
    }
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
