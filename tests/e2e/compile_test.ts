/**
 * Flows startable right after deploy
 * (docs/design/worker.md#compiling-at-deploy-and-in-local-development), as a new user does it: a
 * project made by the real `supabase init` → `deno task install` → a flow in the registry →
 * `deno task scaffold-queue` → `deno task compile` → `supabase db push` → an app starts the flow
 * with the typed client while no worker has ever run → a queue function started afterwards
 * finishes the run and the app prints its typed output.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import {
  ensurePgmq,
  pgmqModeFromEnv,
  SUPABASE_CLI,
  withLocalSslMode,
} from '../../lib/sql/migrate.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { freePort } from '../../cli/_util.ts';
import { canConnect } from '../../cli/_util.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';
import { GREET_FLOW, GREET_REGISTRY, ok, run, supabaseInit } from '../_helpers/project.ts';
import { spawnDeno, type Spawned } from '../_helpers/process.ts';

const SECRET = 'compile-test-secret-91c2';

// Type-checked when run (--check): output() is typed from the registry, so the expect-error
// line is an error only while the output really is typed (a number, not any).
const APP = `import { createClient } from 'switchyard/client.ts';
import { registry } from './supabase/functions/_shared/registry.ts';

const client = createClient(registry, { connectionString: Deno.env.get('DATABASE_URL') });
const run = await client.start('greet', { name: 'Ada' });
console.log(\`started \${run.runId}\`);
const output = await run.output({ timeoutMs: 60_000 });
const length: number = output.deliver;
// @ts-expect-error deliver is a number
const wrong: string = output.deliver;
console.log(\`deliver: \${length}\`, typeof wrong);
await client.close();
`;

Deno.test('install → compile → db push → a start before any worker ran → a worker finishes it, typed', async () => {
  const project = await supabaseInit('switchyard-compile-');
  const database = `sy_compile_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  const children: Spawned[] = [];
  try {
    ok(await run(['task', '-q', 'install', '--project', project], KIT_ROOT), 'install');
    await Deno.mkdir(join(project, 'supabase/functions/_shared/flows'));
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/flows/greet.ts'),
      GREET_FLOW,
    );
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/registry.ts'),
      GREET_REGISTRY,
    );
    ok(
      await run(['task', '-q', 'scaffold-queue', 'greetings', '--project', project], KIT_ROOT),
      'scaffold-queue',
    );
    const compiled = await run(['task', '-q', 'compile', '--project', project], KIT_ROOT);
    ok(compiled, 'compile');
    const written = compiled.stdout.match(
      /^created\s+(supabase\/migrations\/(\d{14})_switchyard_flows\.sql)$/m,
    );
    assert.ok(written, compiled.stdout);
    assert.match(compiled.stdout, /^ {2}flow greetV1$/m);
    assert.match(compiled.stdout, /^ {2}alias greet -> greetV1$/m);
    const migration = await Deno.readTextFile(join(project, written[1]));
    assert.match(migration, /^select switchyard\.ensure_flow\('\{"slug":"greetV1",.*'::jsonb\);$/m);
    assert.match(
      migration,
      /^select switchyard\.declare_alias\('greet', array\['greetV1'\]::text\[\]\);$/m,
    );
    const names = [...Deno.readDirSync(join(project, 'supabase/migrations'))].map((e) => e.name)
      .sort();
    assert.equal(names[names.length - 1], written[1].split('/').pop(), 'it sorts last');
    const again = await run(['task', '-q', 'compile', '--project', project], KIT_ROOT);
    ok(again, 'second compile');
    assert.match(again.stdout, /nothing to do/);
    const check = await run(['task', '-q', 'compile', '--project', project, '--check'], KIT_ROOT);
    assert.equal(check.code, 0, 'nothing is due');

    await admin.unsafe(`create database "${database}"`);
    const url = urlFor(database);
    await ensurePgmq(url, pgmqModeFromEnv());
    const push = await run(
      ['run', '-A', SUPABASE_CLI, 'db', 'push', '--db-url', withLocalSslMode(url), '--yes'],
      project,
    );
    ok(push, 'supabase db push');
    assert.match(
      push.stdout + push.stderr,
      new RegExp(`Applying migration ${written[2]}_switchyard_flows`),
    );

    // The app starts the flow: no worker has ever run against this database.
    await Deno.writeTextFile(join(project, 'app.ts'), APP);
    const app = spawnDeno(
      ['run', '--check', '-A', '--config', 'supabase/functions/deno.json', 'app.ts'],
      { cwd: project, env: { DATABASE_URL: url, NO_COLOR: '1', SWITCHYARD_LOG: 'error' } },
    );
    children.push(app);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const started = await waitFor('the app to start a run', async () => {
        const [row] = await sql<{ run_id: string; status: string }[]>`
          select run_id, status from switchyard.runs where started_as = 'greet'`;
        return row ?? null;
      }, { timeoutMs: 60_000 });
      assert.equal(started.status, 'started');
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from switchyard.workers`;
      assert.equal(n, 0, 'no worker ran before the first start');

      // Then the queue function, started from the project, finishes it.
      const port = freePort();
      const fnDir = join(project, 'supabase/functions/greetings-worker');
      const fn = spawnDeno([
        'run',
        '-A',
        '--no-lock',
        '--config',
        join(fnDir, 'deno.json'),
        join(fnDir, 'index.ts'),
      ], {
        cwd: project,
        env: {
          PORT: String(port),
          HOSTNAME: '127.0.0.1',
          SWITCHYARD_DB_URL: url,
          SWITCHYARD_WORKER_SECRET: SECRET,
          SWITCHYARD_MAX_POLL_SECONDS: String(FAST.maxPollSeconds),
          SWITCHYARD_POLL_INTERVAL_MS: String(FAST.pollIntervalMs),
          SWITCHYARD_HEARTBEAT_INTERVAL_MS: String(FAST.heartbeatIntervalMs),
          NO_COLOR: '1',
        },
        stdout: 'null',
        stderr: 'null',
      });
      children.push(fn);
      await waitFor('the function to listen', () => canConnect(port), { timeoutMs: 60_000 });
      const res = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${SECRET}` },
      });
      assert.equal(res.status, 200, await res.text());
      const { code, stdout, stderr } = await app.wait();
      assert.equal(code, 0, `${stdout}\n${stderr}`);
      assert.match(stdout, new RegExp(`^started ${started.run_id}$`, 'm'));
      assert.match(
        stdout,
        /^deliver: 11 number$/m,
        'the typed output: the length of "Hello, Ada!"',
      );

      // A new version: compiled at push, but the existing alias stays until a worker with the
      // new registry starts (the running worker, live, lacks greetV2 and must never be handed
      // it: the declaration is recorded, the move deferred).
      await Deno.writeTextFile(
        join(project, 'supabase/functions/_shared/flows/greet.ts'),
        GREET_FLOW.replace(
          'export const greet =',
          `const greetV2 = new Flow<{ name: string }>({ slug: 'greetV2' })
  .step({ slug: 'compose' }, (input) => ({ text: \`Hi, \${input.name}!\` }));

export const greet2 = defineDeployedFlow(
  routeFlow(greetV2, { queues: { compose: 'greetings' } }),
  { alias: 'greet' },
);

export const greet =`,
        ),
      );
      await Deno.writeTextFile(
        join(project, 'supabase/functions/_shared/registry.ts'),
        GREET_REGISTRY.replace('import { greet }', 'import { greet, greet2 }').replace(
          '[greet]',
          '[greet, greet2]',
        ),
      );
      const v2 = await run(['task', '-q', 'compile', '--project', project], KIT_ROOT);
      ok(v2, 'compile of v2');
      assert.match(v2.stdout, /^ {2}flow greetV2$/m);
      assert.doesNotMatch(v2.stdout, /flow greetV1/, 'greetV1 is compiled already');
      ok(
        await run(
          ['run', '-A', SUPABASE_CLI, 'db', 'push', '--db-url', withLocalSslMode(url), '--yes'],
          project,
        ),
        'supabase db push of v2',
      );
      const [alias] = await sql`select flow_slug from switchyard.aliases where alias = 'greet'`;
      assert.equal(alias.flow_slug, 'greetV1', 'the push does not hand the live worker greetV2');
      const [status] = await sql`select state, reason from switchyard.alias_status()
        where alias = 'greet'`;
      assert.equal(status.state, 'pending');
      assert.match(
        status.reason,
        /^live workers lack greetV2: greetings-worker \(queue greetings\)$/,
      );
      const [compiledV2] = await sql`select count(*)::int as n from switchyard.steps
        where flow_slug = 'greetV2'`;
      assert.equal(compiledV2.n, 1, 'greetV2 is compiled');
    } finally {
      await sql.end();
    }
  } finally {
    for (const child of children) await child.stop('SIGKILL');
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
    await Deno.remove(project, { recursive: true });
  }
});
