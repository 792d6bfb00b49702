/**
 * Commands run as a new user runs them, for the adoption tests: this Deno with a clean
 * environment, and a project made by the real Supabase CLI (`supabase init`, offline).
 *
 * @module
 */
import assert from 'node:assert/strict';
import { SUPABASE_CLI } from '../../lib/ops.ts';

/** A finished command's exit code and output. */
export interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs this Deno with `args` in `cwd` (no colours, no telemetry, `env` added). */
export async function run(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<Output> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdin: 'null',
    stdout: 'piped',
    stderr: 'piped',
    env: { NO_COLOR: '1', DO_NOT_TRACK: '1', SUPABASE_TELEMETRY_DISABLED: '1', ...env },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Asserts a command succeeded, showing its output when not. */
export const ok = (o: Output, what: string): void =>
  assert.equal(o.code, 0, `${what} failed:\n${o.stdout}\n${o.stderr}`);

/** `supabase init` in a new temp dir, with the real CLI; returns the directory. */
export async function supabaseInit(prefix: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  const init = await run(['run', '-A', SUPABASE_CLI, 'init'], dir);
  ok(init, 'supabase init');
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
