/**
 * Adoption, as a new user does it (docs/design/local-runs.md): a project made by the real
 * Supabase CLI (`supabase init`, offline) → `deno task install --project DIR` → a flow in the
 * registry → `deno task scaffold-queue --project DIR` → the function type-checks there, loads
 * only files under the project root and pins exact runtime versions → `supabase db push
 * --db-url` to a fresh database → the function, started from the project, completes a run.
 * Then the installer's refusals, and a newer kit that adds only its new migrations.
 */
import assert from 'node:assert/strict';
import { join, relative } from 'node:path';
import postgres from 'postgres';
import {
  ensurePgmq,
  pgmqModeFromEnv,
  SUPABASE_CLI,
  withLocalSslMode,
} from '../../lib/sql/migrate.ts';
import {
  coreMigrations,
  isExact,
  KIT_VERSION,
  lockedSpecifiers,
  moduleGraph,
  pinned,
} from '../../cli/_kit.ts';
import { copyProject, KIT_ROOT } from '../../cli/_project.ts';
import {
  FUNCTIONS_DENO_JSON,
  install,
  InstallError,
  type InstallManifest,
  MANIFEST_PATH,
} from '../../cli/install.ts';
import { ScaffoldError, scaffoldQueue } from '../../cli/scaffold_queue.ts';
import { installExample } from '../../cli/_example.ts';
import { canConnect, freePort, migrationTimestamp } from '../../cli/_util.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';
import { GREET_FLOW, GREET_REGISTRY, ok, run, supabaseInit } from '../_helpers/project.ts';
import { spawnDeno, type Spawned } from '../_helpers/process.ts';

const SECRET = 'install-test-secret-5b7d';
const FUNCTION = 'greetings-worker';

/** Every file under `dir`, path → content. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      if (e.isDirectory) await walk(p);
      else files.set(relative(dir, p), await Deno.readTextFile(p));
    }
  };
  await walk(dir);
  return files;
}

Deno.test('supabase init → install → scaffold → type-check, files under the root → db push → a run completes', async () => {
  const project = await supabaseInit('switchyard-adopt-');
  const database = `sy_adopt_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  let fn: Spawned | undefined;
  try {
    // Install, as the README says, from the kit's checkout.
    const first = await run(['task', '-q', 'install', '--project', project], KIT_ROOT);
    ok(first, 'install');
    assert.match(first.stdout, new RegExp(`Switchyard ${KIT_VERSION.replaceAll('.', '\\.')} -> `));
    assert.match(first.stdout, /created\s+supabase\/functions\/_shared\/registry\.ts/);
    assert.match(first.stdout, /created\s+supabase\/functions\/deno\.json/);
    const manifest: InstallManifest = JSON.parse(
      await Deno.readTextFile(join(project, MANIFEST_PATH)),
    );
    assert.equal(manifest.version, KIT_VERSION);
    assert.deepEqual(manifest.migrations.map((m) => m.kit), await coreMigrations());
    assert.ok(await Deno.stat(join(project, 'supabase/functions/_switchyard/mod.ts')));
    // The client for apps (createClient) is runtime: a function may start and follow runs.
    assert.ok(manifest.runtime['client.ts'] && manifest.runtime['sql/client_queries.ts']);
    // So are the run event stream (an Edge Function of one's own) and followRun for pages.
    for (const file of ['platform/run_event_stream.ts', 'browser.js', 'browser.d.ts']) {
      assert.ok(manifest.runtime[file], `${file} is part of the runtime`);
    }
    for (const devOnly of ['ops.ts', 'sql/migrate.ts', 'ops/format.ts']) {
      assert.equal(manifest.runtime[devOnly], undefined, `${devOnly} is not part of the runtime`);
    }
    const installed = manifest.migrations.map((m) => m.installedAs);
    assert.deepEqual([...installed].sort(), installed, 'installed in the kit order');
    const shared = JSON.parse(await Deno.readTextFile(join(project, FUNCTIONS_DENO_JSON)));
    const locked = await lockedSpecifiers(join(KIT_ROOT, 'deno.lock'));
    // The runtime loads supabase-js (for a handler's ctx.supabase) and the OpenTelemetry API
    // (its spans, docs/design/observability.md) besides postgres.js; its test engine PGlite and
    // pglite-socket. Each package entry the runtime holds is mapped by its name.
    assert.deepEqual(shared.imports, {
      switchyard: './_switchyard/mod.ts',
      'switchyard/browser': './_switchyard/browser.ts',
      'switchyard/client': './_switchyard/client.ts',
      'switchyard/errors': './_switchyard/errors.ts',
      'switchyard/testing': './_switchyard/testing.ts',
      'switchyard/': './_switchyard/',
      '@electric-sql/pglite': pinned('npm:@electric-sql/pglite@0', locked),
      '@electric-sql/pglite-socket': pinned('npm:@electric-sql/pglite-socket@0', locked),
      '@opentelemetry/api': pinned('npm:@opentelemetry/api@1', locked),
      postgres: pinned('npm:postgres@3', locked),
      '@supabase/supabase-js': pinned('npm:@supabase/supabase-js@2', locked),
    });
    const before = await snapshot(project);
    const again = await run(['task', '-q', 'install', '--project', project], KIT_ROOT);
    ok(again, 'second install');
    assert.match(again.stdout, /nothing to do/);
    assert.deepEqual(await snapshot(project), before, 'a second install changes nothing');

    // A flow, then its queue function.
    await Deno.mkdir(join(project, 'supabase/functions/_shared/flows'));
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/flows/greet.ts'),
      GREET_FLOW,
    );
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/registry.ts'),
      GREET_REGISTRY,
    );
    const scaffold = await run(
      ['task', '-q', 'scaffold-queue', 'greetings', '--project', project],
      KIT_ROOT,
    );
    ok(scaffold, 'scaffold-queue');
    const fnDir = join(project, 'supabase/functions', FUNCTION);
    const denoJson = JSON.parse(await Deno.readTextFile(join(fnDir, 'deno.json')));
    assert.deepEqual(denoJson, {
      imports: {
        switchyard: '../_switchyard/mod.ts',
        '@opentelemetry/api': pinned('npm:@opentelemetry/api@1', locked),
        postgres: pinned('npm:postgres@3', locked),
        '@supabase/supabase-js': pinned('npm:@supabase/supabase-js@2', locked),
      },
    });
    for (const value of Object.values<string>(denoJson.imports)) {
      assert.ok(isExact(value), `${value} is an exact version`);
    }
    const config = await Deno.readTextFile(join(project, 'supabase/config.toml'));
    assert.match(config, /^\[functions\.greetings-worker\]$/m);
    assert.match(config, /import_map = "\.\/functions\/greetings-worker\/deno\.json"/);
    const rescaffold = await run(
      ['task', '-q', 'scaffold-queue', 'greetings', '--project', project],
      KIT_ROOT,
    );
    ok(rescaffold, 'second scaffold');
    assert.match(rescaffold.stdout, /nothing to do/);

    // Deployable: type-checks with the function's own deno.json; every local module it loads
    // lies under the project root (what supabase functions deploy uploads).
    const check = await run(
      ['check', '--no-lock', '--config', join(fnDir, 'deno.json'), join(fnDir, 'index.ts')],
      project,
    );
    ok(check, 'deno check of the generated function');
    const graph = await moduleGraph(join(fnDir, 'index.ts'), { config: join(fnDir, 'deno.json') });
    const local = graph.filter((m) => m.local !== null).map((m) => m.local!);
    assert.ok(local.length > 20, 'the function loads the installed runtime');
    const outside = local.filter((p) => relative(project, p).startsWith('..'));
    assert.deepEqual(outside, [], 'every local module lies under the project root');
    assert.ok(local.some((p) => p.endsWith('/supabase/functions/_switchyard/mod.ts')));
    const packages = graph.filter((m) => m.local === null).map((m) => m.specifier);
    assert.deepEqual(
      packages.map((s) => s.replace(/^npm:\/?/, '').replace(/@[^@]*$/, '')),
      ['@opentelemetry/api', '@supabase/supabase-js', 'postgres'],
      `only runtime packages: ${packages.join(', ')}`,
    );

    // supabase db push --db-url to a fresh database (PGMQ as the server offers it: PGMQ_MODE).
    await admin.unsafe(`create database "${database}"`);
    const url = urlFor(database);
    await ensurePgmq(url, pgmqModeFromEnv());
    const push = await run(
      ['run', '-A', SUPABASE_CLI, 'db', 'push', '--db-url', withLocalSslMode(url), '--yes'],
      project,
    );
    ok(push, 'supabase db push');
    const applied = [...(push.stdout + push.stderr).matchAll(/Applying migration (\S+)\.\.\./g)]
      .map((m) => m[1]);
    const register = [...Deno.readDirSync(join(project, 'supabase/migrations'))]
      .map((e) => e.name).filter((n) => n.endsWith('_register_greetings_worker.sql'));
    assert.deepEqual(applied, [...installed, ...register]);

    // The function, started from the project with its own deno.json, completes a run.
    const port = freePort();
    fn = spawnDeno([
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
        SUPABASE_DB_URL: 'postgresql://postgres:x@127.0.0.1:1/postgres',
        SWITCHYARD_WORKER_SECRET: SECRET,
        SWITCHYARD_MAX_POLL_SECONDS: String(FAST.maxPollSeconds),
        SWITCHYARD_POLL_INTERVAL_MS: String(FAST.pollIntervalMs),
        SWITCHYARD_HEARTBEAT_INTERVAL_MS: String(FAST.heartbeatIntervalMs),
        NO_COLOR: '1',
      },
      stdout: 'null',
    });
    await waitFor('the function to listen', () => canConnect(port), { timeoutMs: 60_000 });
    const denied = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST' });
    assert.equal(denied.status, 401);
    await denied.body?.cancel();
    const started = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${SECRET}` },
    });
    const body = await started.json();
    assert.equal(started.status, 200, `${JSON.stringify(body)}\n${fn.stderr}`);
    assert.equal(body.functionName, FUNCTION);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const [{ id }] = await sql<{ id: string }[]>`
        select switchyard.start_flow('greet', '{"name": "Ada"}'::jsonb) as id`;
      const done = await waitFor('the run to complete', async () => {
        const [row] = await sql<{ status: string; output: unknown }[]>`
          select status, output from switchyard.runs where run_id = ${id}::uuid`;
        return row?.status === 'completed' ? row : null;
      });
      assert.deepEqual(done.output, { deliver: 'Hello, Ada!'.length });
      const [registered] = await sql<{ queue_name: string }[]>`
        select queue_name from switchyard.worker_functions where function_name = ${FUNCTION}`;
      assert.equal(registered?.queue_name, 'greetings');
    } finally {
      await sql.end();
    }
    const stopped = await fn.stop('SIGTERM', 60_000);
    fn = undefined;
    assert.equal(stopped.code, 0, `the function stops cleanly on SIGTERM:\n${stopped.stderr}`);
  } finally {
    if (fn) await fn.stop('SIGKILL');
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test('the installer refuses to overwrite what it did not write, and writes nothing', async () => {
  const project = await supabaseInit('switchyard-refuse-');
  try {
    // No Supabase project.
    const empty = await Deno.makeTempDir();
    await assert.rejects(
      install({ projectDir: empty }),
      /supabase\/config\.toml is missing: run `supabase init`/,
    );
    await Deno.remove(empty, { recursive: true });

    // A _switchyard/ the installer did not write.
    await Deno.mkdir(join(project, 'supabase/functions/_switchyard'), { recursive: true });
    await Deno.writeTextFile(join(project, 'supabase/functions/_switchyard/mod.ts'), '// mine\n');
    let before = await snapshot(project);
    await assert.rejects(
      install({ projectDir: project }),
      (e: Error) => e instanceof InstallError && /has no manifest\.json/.test(e.message),
    );
    assert.deepEqual(await snapshot(project), before);
    await Deno.remove(join(project, 'supabase/functions/_switchyard'), { recursive: true });

    // An import-map key the project maps elsewhere.
    await Deno.writeTextFile(
      join(project, FUNCTIONS_DENO_JSON),
      JSON.stringify({ imports: { switchyard: './vendor/switchyard/mod.ts', zod: 'npm:zod@3' } }),
    );
    before = await snapshot(project);
    await assert.rejects(
      install({ projectDir: project }),
      (e: Error) =>
        e instanceof InstallError &&
        /the "switchyard" entry of supabase\/functions\/deno\.json/.test(e.message) &&
        /nothing was written/.test(e.message),
    );
    assert.deepEqual(await snapshot(project), before);

    // Without the conflict, the project's own entries stay.
    await Deno.writeTextFile(
      join(project, FUNCTIONS_DENO_JSON),
      JSON.stringify({ imports: { zod: 'npm:zod@3' }, lint: { rules: {} } }),
    );
    const result = await install({ projectDir: project });
    assert.ok(result.changed);
    const shared = JSON.parse(await Deno.readTextFile(join(project, FUNCTIONS_DENO_JSON)));
    assert.equal(shared.imports.zod, 'npm:zod@3');
    assert.equal(shared.imports.switchyard, './_switchyard/mod.ts');
    assert.deepEqual(shared.lint, { rules: {} });

    // An edited runtime file is refused, then overwritten with --force.
    const edited = join(project, 'supabase/functions/_switchyard/errors.ts');
    const original = await Deno.readTextFile(edited);
    await Deno.writeTextFile(edited, `${original}// patched by hand\n`);
    before = await snapshot(project);
    await assert.rejects(
      install({ projectDir: project }),
      /_switchyard\/errors\.ts \(edited since the installer wrote it\)/,
    );
    assert.deepEqual(await snapshot(project), before);
    const forced = await install({ projectDir: project, force: true });
    assert.deepEqual(
      forced.files.filter((f) => f.action !== 'unchanged' && f.action !== 'kept').map((f) =>
        f.path
      ),
      ['supabase/functions/_switchyard/errors.ts'],
    );
    assert.equal(await Deno.readTextFile(edited), original);

    // A lost manifest with the migrations still there.
    await Deno.remove(join(project, 'supabase/functions/_switchyard'), { recursive: true });
    before = await snapshot(project);
    await assert.rejects(
      install({ projectDir: project }),
      /already holds Switchyard's SQL core \(\d+ files from .*\) but .*manifest\.json is missing/,
    );
    assert.deepEqual(await snapshot(project), before);
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});

const kits: string[] = [];
/** A copy of the kit with one more migration and one changed runtime file. */
async function newerKit(): Promise<string> {
  const kit = await copyProject('switchyard-newer-kit-');
  kits.push(kit);
  await Deno.mkdir(join(kit, 'cli/templates'), { recursive: true });
  for (const template of ['registry.ts', 'migration_locks.sql']) {
    await Deno.copyFile(
      join(KIT_ROOT, 'cli/templates', template),
      join(kit, 'cli/templates', template),
    );
  }
  await Deno.copyFile(join(KIT_ROOT, 'deno.lock'), join(kit, 'deno.lock'));
  await Deno.writeTextFile(
    join(kit, 'supabase/migrations/20991231000000_upgrade_probe.sql'),
    'create function switchyard.upgrade_probe() returns int language sql as $$ select 1 $$;\n',
  );
  const flow = join(kit, 'lib/dsl/json.ts');
  await Deno.writeTextFile(flow, `${await Deno.readTextFile(flow)}// a newer kit\n`);
  return kit;
}

Deno.test("a newer kit updates the runtime and adds only its new migrations, after the project's", async () => {
  const project = await supabaseInit('switchyard-upgrade-kit-');
  try {
    const first = await install({ projectDir: project, now: new Date('2027-01-05T12:00:00Z') });
    const manifest = (): Promise<InstallManifest> =>
      Deno.readTextFile(join(project, MANIFEST_PATH)).then(JSON.parse);
    const installed = (await manifest()).migrations;
    // One second apart, the last the second before the run's (never after now).
    assert.equal(installed.at(-1)?.installedAs.slice(0, 14), '20270105115959');
    assert.equal(
      installed[0].installedAs,
      `${
        migrationTimestamp(new Date(Date.parse('2027-01-05T12:00:00Z') - installed.length * 1000))
      }` +
        '_switchyard_schema.sql',
    );
    assert.ok(first.changed);
    // The project's own work lands after the kit's.
    await Deno.writeTextFile(
      join(project, 'supabase/migrations/20270201000000_my_table.sql'),
      'create table my_table (id int);\n',
    );
    const migrationsBefore = [...Deno.readDirSync(join(project, 'supabase/migrations'))].length;
    const kit = await newerKit();
    // A clock before the project's newest migration: the kit's would be named after now.
    await assert.rejects(
      install({ projectDir: project, kitDir: kit, now: new Date('2027-01-10T00:00:00Z') }),
      (e: Error) =>
        e instanceof InstallError &&
        e.message.includes('supabase/migrations/20270201000000_my_table.sql') &&
        /nothing was written/.test(e.message),
    );
    assert.equal(
      [...Deno.readDirSync(join(project, 'supabase/migrations'))].length,
      migrationsBefore,
    );
    const result = await install({
      projectDir: project,
      kitDir: kit,
      now: new Date('2027-02-01T00:00:02Z'),
    });
    const changed = result.files.filter((f) => f.action !== 'unchanged' && f.action !== 'kept');
    assert.deepEqual(changed.map((f) => `${f.action} ${f.path}`).sort(), [
      'created supabase/migrations/20270201000001_switchyard_upgrade_probe.sql',
      'updated supabase/functions/_switchyard/dsl/json.ts',
      `updated ${MANIFEST_PATH}`,
    ]);
    assert.equal(
      [...Deno.readDirSync(join(project, 'supabase/migrations'))].length,
      migrationsBefore + 1,
    );
    const after = await manifest();
    assert.deepEqual(after.migrations.slice(0, installed.length), installed, 'records kept');
    assert.equal(after.migrations.at(-1)?.kit, '20991231000000_upgrade_probe.sql');
    const again = await install({ projectDir: project, kitDir: kit });
    assert.equal(again.changed, false);
    // A released migration the kit changed afterwards is never rewritten; the user is told.
    const tables = join(kit, 'supabase/migrations/20261201000300_tables.sql');
    await Deno.writeTextFile(tables, `${await Deno.readTextFile(tables)}\n-- edited\n`);
    const noted = await install({ projectDir: project, kitDir: kit });
    assert.equal(noted.changed, false);
    assert.match(
      noted.notes.join('\n'),
      /20261201000300_tables\.sql changed after it was installed/,
    );
  } finally {
    await Deno.remove(project, { recursive: true });
    for (const kit of kits.splice(0)) await Deno.remove(kit, { recursive: true });
  }
});

Deno.test('scaffold-queue in a project without the kit says to install it first', async () => {
  const project = await supabaseInit('switchyard-no-kit-');
  try {
    await Deno.mkdir(join(project, 'supabase/functions/_shared'), { recursive: true });
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/registry.ts'),
      GREET_REGISTRY,
    );
    await assert.rejects(
      scaffoldQueue({ projectDir: project, queueName: 'greetings' }),
      (e: Error) =>
        e instanceof ScaffoldError &&
        /Switchyard is not installed in .*: run `npx -y deno@2 task install --project /.test(
          e.message,
        ),
    );
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test('--example replaces the empty registry an earlier kit wrote (other comments), never one with a flow', async () => {
  const project = await supabaseInit('switchyard-example-registry-');
  const registry = join(project, 'supabase/functions/_shared/registry.ts');
  try {
    await install({ projectDir: project });
    const empty = await Deno.readTextFile(registry);
    // An earlier kit's words in the comments, the same code.
    const earlier = empty.replaceAll('npx switchyard', 'deno task').replace(
      'Edit this list',
      'Change this list',
    );
    assert.notEqual(earlier, empty);
    await Deno.writeTextFile(registry, GREET_REGISTRY);
    await assert.rejects(
      installExample(project, (m) => new InstallError(m)),
      /--example would overwrite supabase\/functions\/_shared\/registry\.ts, which the project has/,
    );
    assert.equal(await Deno.readTextFile(registry), GREET_REGISTRY, 'nothing was written');
    await Deno.writeTextFile(registry, earlier);
    const { files } = await installExample(project, (m) => new InstallError(m));
    assert.deepEqual(
      files.find((f) => f.path === 'supabase/functions/_shared/registry.ts'),
      { path: 'supabase/functions/_shared/registry.ts', action: 'updated' },
    );
    assert.match(
      await Deno.readTextFile(registry),
      /import \{ greet \} from '\.\/flows\/greet\.ts'/,
    );
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});
