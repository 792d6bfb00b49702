/**
 * `deno task scaffold-webhook <function_name> --alias <alias> [--secret-env NAME] [--force]
 * [--project DIR]` (`npx switchyard scaffold-webhook` from the npm package): writes a signed
 * webhook's Edge Function (docs/design/ingestion.md#signed-webhooks), which starts one run of the
 * alias for
 * each verified delivery.
 *
 * For function `orders-webhook` it writes, inside the project's `supabase/` directory:
 *
 * - `functions/orders-webhook/index.ts`: `serveWebhook({ alias, secretEnv })` from the kit's
 *   runtime (`lib/platform/webhook.ts`);
 * - `functions/orders-webhook/deno.json`: the function's import map, as `scaffold-queue` writes
 *   it (the project's copy of the kit; in an installed project only the entries the runtime
 *   loads, pinned);
 * - a `[functions.orders-webhook]` section in `config.toml` (`verify_jwt = false`: a sender has
 *   no Supabase JWT, the function checks the signature itself).
 *
 * No migration: the webhook starts runs of an alias a worker compiles. The alias must be one the
 * project's registry deploys (`supabase/functions/_shared/registry.ts`, loaded as `compile`
 * loads it; an alias or a flow slug): an unknown one is refused naming the aliases it knows,
 * unless `--force`. The function's `index.ts` names the function, recorded in each run's origin
 * (docs/design/origins.md). The shared secret is
 * read at run time from `--secret-env` (default `SWITCHYARD_WEBHOOK_SECRET`; set it with
 * `supabase secrets set`, which refuses names starting with `SUPABASE_`). Idempotent as
 * `scaffold-queue` is: a second run changes nothing, and a file edited by hand is never
 * overwritten without `--force` (then nothing at all is written).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join, relative, resolve } from 'node:path';
import { functionSection, setFunctionSection } from './_functions_config.ts';
import { type Planned, readOrNull } from './_util.ts';
import { KIT_ROOT } from './_project.ts';
import { commandName, findProject, supabaseCli } from './_invocation.ts';
import {
  functionImportMap,
  kitCopy,
  REGISTRY_PATH,
  registryPlan,
  ScaffoldError,
  type Template,
  writePlanned,
} from './scaffold_queue.ts';

const TEMPLATES_DIR = join(KIT_ROOT, 'cli', 'templates');
const TEMPLATES = {
  index: 'webhook_function/index.ts',
  denoJson: 'webhook_function/deno.json',
  config: 'webhook_config.toml',
} as const;

/** The words the templates hold where the scaffold writes a value. */
const WORDS = ['ALIAS_NAME', 'SECRET_ENV_NAME', 'FUNCTION_NAME'] as const;

/**
 * Options of {@linkcode scaffoldWebhook}.
 *
 * @example
 * ```ts
 * import type { WebhookScaffoldOptions } from './scaffold_webhook.ts';
 *
 * const options: WebhookScaffoldOptions = {
 *   projectDir: '.',
 *   functionName: 'orders-webhook',
 *   alias: 'orders',
 * };
 * ```
 */
export interface WebhookScaffoldOptions {
  /** The project root (holds `supabase/`). */
  projectDir: string;
  /** The Edge Function's name: lower-case letters, digits and dashes, starting with a letter. */
  functionName: string;
  /** The alias each delivery starts a run of. */
  alias: string;
  /** The variable holding the shared secret (default `SWITCHYARD_WEBHOOK_SECRET`). */
  secretEnv?: string;
  /**
   * Overwrite files whose content differs from what the scaffold writes, and write the function
   * even when `alias` is not in the project's registry (yet).
   */
  force?: boolean;
}

/**
 * What one run did, file by file (paths relative to the project directory).
 *
 * @example
 * ```ts
 * import type { WebhookScaffoldResult } from './scaffold_webhook.ts';
 *
 * const result: WebhookScaffoldResult = { functionName: 'w', changed: false, files: [] };
 * ```
 */
export interface WebhookScaffoldResult {
  functionName: string;
  changed: boolean;
  files: { path: string; action: 'created' | 'updated' | 'unchanged' }[];
}

async function template(dir: string, name: string): Promise<Template> {
  const abs = resolve(dir, name);
  try {
    return {
      path: relative(KIT_ROOT, abs).replaceAll('\\', '/'),
      text: (await Deno.readTextFile(abs)).replaceAll('\r\n', '\n'),
    };
  } catch (e) {
    throw new ScaffoldError(`cannot read the scaffold's template ${abs}: ${(e as Error).message}`);
  }
}

/**
 * Replaces every occurrence of each word; `required` words must occur, and no word may remain:
 * a template edited out of step with the scaffold fails loudly instead of writing a wrong file.
 */
function substitute(
  t: Template,
  values: Record<(typeof WORDS)[number], string>,
  required: readonly (typeof WORDS)[number][],
): string {
  let out = t.text;
  for (const word of WORDS) {
    if (required.includes(word) && !out.includes(word)) {
      throw new ScaffoldError(`the scaffold's template ${t.path} must contain ${word}: fix it`);
    }
    out = out.replaceAll(word, values[word]);
  }
  return out;
}

/**
 * Refuses an alias the project's registry does not deploy (loaded as `compile` loads it): a
 * webhook of an unknown alias would answer every delivery 500 `start_failed`. The registry's
 * aliases and its flow slugs are known (a webhook may start a concrete version).
 */
async function checkAlias(projectDir: string, alias: string): Promise<void> {
  let known: string[];
  try {
    const plan = await registryPlan(projectDir);
    known = [...new Set([...plan.aliases.map(([a]) => a), ...plan.placements.map((p) => p.flow)])];
  } catch (e) {
    const message = (e as Error).message;
    if (!/the worker registry is empty/.test(message)) {
      throw new ScaffoldError(
        `cannot check --alias ${JSON.stringify(alias)} against ${REGISTRY_PATH}: ${message}; ` +
          'fix the registry, or pass --force to write the function anyway',
      );
    }
    known = [];
  }
  if (known.includes(alias)) return;
  throw new ScaffoldError(
    `--alias ${JSON.stringify(alias)} is unknown (alias_unknown): a webhook starts runs of an ` +
      `alias (or flow slug) that ${REGISTRY_PATH} deploys, and it knows ${
        known.length === 0 ? 'none yet' : known.sort().join(', ')
      }; add the flow to the registry first, or pass --force to write the function anyway`,
  );
}

/**
 * Writes (or verifies) a signed webhook's Edge Function. See the module docs.
 *
 * @example
 * ```ts
 * import { scaffoldWebhook } from './scaffold_webhook.ts';
 *
 * const result = await scaffoldWebhook({
 *   projectDir: '.',
 *   functionName: 'orders-webhook',
 *   alias: 'orders',
 * });
 * for (const file of result.files) console.log(file.action, file.path);
 * ```
 */
export async function scaffoldWebhook(
  options: WebhookScaffoldOptions,
): Promise<WebhookScaffoldResult> {
  const { functionName, alias, force = false } = options;
  const secretEnv = options.secretEnv ?? 'SWITCHYARD_WEBHOOK_SECRET';
  if (!/^[a-z][a-z0-9_-]{0,62}$/.test(functionName)) {
    throw new ScaffoldError(
      `function name ${JSON.stringify(functionName)} is invalid: use 1 to 63 lower-case ` +
        'letters, digits, dashes and underscores, starting with a letter',
    );
  }
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(alias)) {
    throw new ScaffoldError(
      `--alias ${JSON.stringify(alias)} is invalid: name an alias of the registry (letters, ` +
        'digits and underscores, not starting with a digit)',
    );
  }
  if (!/^[A-Z_][A-Z0-9_]{0,99}$/.test(secretEnv) || secretEnv.startsWith('SUPABASE_')) {
    throw new ScaffoldError(
      `--secret-env ${JSON.stringify(secretEnv)} is invalid: use upper-case letters, digits ` +
        'and underscores, not starting with SUPABASE_ (supabase secrets set refuses those)',
    );
  }
  const projectDir = resolve(options.projectDir);
  const supabaseDir = join(projectDir, 'supabase');
  const configPath = join(supabaseDir, 'config.toml');
  const config = await readOrNull(configPath);
  if (config === null) {
    throw new ScaffoldError(
      `${configPath} is missing: run the scaffold in a Supabase project (supabase init) or pass --project DIR`,
    );
  }
  if (!force) await checkAlias(projectDir, alias);
  const copy = await kitCopy(projectDir);
  const functionDir = join(supabaseDir, 'functions', functionName);
  const values = { ALIAS_NAME: alias, SECRET_ENV_NAME: secretEnv, FUNCTION_NAME: functionName };
  const index = substitute(await template(TEMPLATES_DIR, TEMPLATES.index), values, [
    'ALIAS_NAME',
    'SECRET_ENV_NAME',
    'FUNCTION_NAME',
  ]);
  const section = substitute(await template(TEMPLATES_DIR, TEMPLATES.config), values, [
    'FUNCTION_NAME',
  ]).replace(/\n$/, '');
  const denoJson = await functionImportMap(
    await template(TEMPLATES_DIR, TEMPLATES.denoJson),
    projectDir,
    functionDir,
    copy,
    join(copy.libDir, 'mod.ts'),
  );
  const rel = (p: string) => relative(projectDir, p);
  const currentSection = functionSection(config, functionName);
  const plans: Planned[] = [
    {
      path: rel(join(functionDir, 'index.ts')),
      content: index,
      existing: await readOrNull(join(functionDir, 'index.ts')),
    },
    {
      path: rel(join(functionDir, 'deno.json')),
      content: denoJson,
      existing: await readOrNull(join(functionDir, 'deno.json')),
    },
    {
      path: rel(configPath),
      content: currentSection === section
        ? config
        : setFunctionSection(config, functionName, section),
      existing: config,
    },
  ];
  const files = await writePlanned(projectDir, plans, {
    configPath: rel(configPath),
    functionName,
    sectionEdited: currentSection !== null && currentSection !== section,
    force,
  }) as WebhookScaffoldResult['files'];
  return {
    functionName,
    changed: files.some((f) => f.action !== 'unchanged'),
    files,
  };
}

const USAGE = `usage: ${
  commandName('scaffold-webhook')
} <function_name> --alias <alias> [--secret-env NAME] [--force] [--project DIR]

  --alias ALIAS      the alias each verified delivery starts a run of: one the project's
                     registry deploys (checked; --force writes the function anyway)
  --secret-env NAME  the variable holding the shared secret (default SWITCHYARD_WEBHOOK_SECRET)
  --project DIR      the Supabase project; default: the project you are in`;

/** The command line of this script: its exit code. */
export async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        alias: { type: 'string' },
        'secret-env': { type: 'string' },
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
  if (parsed.positionals.length !== 1 || parsed.values.alias === undefined) {
    console.error(`error: give exactly one function name and --alias\n${USAGE}`);
    return 2;
  }
  try {
    const projectDir = findProject(parsed.values.project);
    const result = await scaffoldWebhook({
      projectDir,
      functionName: parsed.positionals[0],
      alias: parsed.values.alias,
      secretEnv: parsed.values['secret-env'],
      force: parsed.values.force,
    });
    if (!result.changed) {
      console.log(`nothing to do: ${result.functionName} is up to date`);
      return 0;
    }
    for (const f of result.files) console.log(`${f.action.padEnd(9)} ${f.path}`);
    const cli = await supabaseCli(projectDir);
    const secret = parsed.values['secret-env'] ?? 'SWITCHYARD_WEBHOOK_SECRET';
    console.log(
      `\nnext: \`${cli.command} secrets set ${secret}=<the shared secret>\`, then ` +
        `\`${cli.command} functions deploy ${result.functionName}\``,
    );
    return 0;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
