/**
 * Commands run as a new user runs them, for the adoption tests: this Deno with a clean
 * environment, and a project made by the real Supabase CLI (`supabase init`, offline).
 *
 * @module
 */
import assert from 'node:assert/strict';
import { SUPABASE_CLI } from '../../lib/sql/migrate.ts';
import { deno, type Output, runCommand } from './process.ts';

export type { Output };

/** No colours, no telemetry: the environment every command here adds. */
const QUIET = { NO_COLOR: '1', DO_NOT_TRACK: '1', SUPABASE_TELEMETRY_DISABLED: '1' };

/** Runs this Deno with `args` in `cwd` (no colours, no telemetry, `env` added). */
export function run(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<Output> {
  return deno(args, { cwd, env: { ...QUIET, ...env } });
}

/** Asserts a command succeeded, showing its output when not. */
export const ok = (o: Output, what: string): void =>
  assert.equal(o.code, 0, `${what} failed:\n${o.stdout}\n${o.stderr}`);

/** A Supabase CLI whose `supabase init` makes the adoption tests' projects. */
export interface SupabaseCli {
  name: string;
  /** `supabase init`, as a program and its arguments. */
  init: string[];
}

/**
 * The Supabase CLIs a new project can come from: CLI 2 (the kit's pinned one, through Deno's npm
 * support) and CLI 3 (`npx supabase@3.1.0`, the newest 3.x npm serves: Deno cannot install CLI
 * 3's platform packages).
 */
export const SUPABASE_CLIS: readonly SupabaseCli[] = [
  { name: 'CLI 2', init: [Deno.execPath(), 'run', '-A', SUPABASE_CLI, 'init'] },
  { name: 'CLI 3', init: ['npx', '-y', 'supabase@3.1.0', 'init'] },
];

/** `supabase init` in a new temp dir, with the real CLI (default CLI 2); returns the directory. */
export async function supabaseInit(
  prefix: string,
  cli: SupabaseCli = SUPABASE_CLIS[0],
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  ok(
    await runCommand(cli.init[0], cli.init.slice(1), { cwd: dir, env: QUIET }),
    `supabase init (${cli.name})`,
  );
  return dir;
}

/** A two-step flow on the shared queue `greetings`, as a project's `_shared/flows/greet.ts`. */
export const GREET_FLOW = `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const greetV1 = new Flow<{ name: string }>({ slug: 'greetV1' })
  .step({ slug: 'compose' }, (input) => ({ text: \`Hello, \${input.name}!\` }))
  .step({ slug: 'deliver', dependsOn: ['compose'] }, (input) => input.compose.text.length);

export const greet = defineDeployedFlow(
  routeFlow(greetV1, { queues: { compose: 'greetings', deliver: 'greetings' } }),
  { alias: 'greet' },
);
`;

/** The registry of {@linkcode GREET_FLOW}, as a project's `_shared/registry.ts`. */
export const GREET_REGISTRY = `import { greet } from './flows/greet.ts';

export const registry = [greet] as const;
`;
