/**
 * The one `switchyard` command (cli/cli.ts, docs/design/local-runs.md#the-switchyard-command): its
 * help lists
 * every command; from a checkout it installs into a project made by the real `supabase init`,
 * pushes it and runs operator commands with their arguments; and what `deno task build-cli`
 * embeds in the binary exists.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { COMMANDS } from '../../cli/cli.ts';
import { EMBEDDED, writeRuntimeList } from '../../tools/build_cli.ts';
import { coreMigrations, KIT_VERSION, RUNTIME_LIST, runtimeModules } from '../../cli/_kit.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { type InstallManifest, MANIFEST_PATH } from '../../cli/install.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { ok, run, supabaseInit } from '../_helpers/project.ts';

const CLI = join(KIT_ROOT, 'cli', 'cli.ts');

/** What an install must have written into `project`. */
async function assertInstalled(project: string, kitLib: (file: string) => Promise<string>) {
  const manifest: InstallManifest = JSON.parse(
    await Deno.readTextFile(join(project, MANIFEST_PATH)),
  );
  assert.equal(manifest.version, KIT_VERSION);
  assert.deepEqual(manifest.migrations.map((m) => m.kit), await coreMigrations());
  const migrations = [...Deno.readDirSync(join(project, 'supabase', 'migrations'))]
    .map((e) => e.name);
  for (const m of manifest.migrations) assert.ok(migrations.includes(m.installedAs), m.installedAs);
  const { files } = await runtimeModules();
  for (const file of files) {
    assert.equal(
      await Deno.readTextFile(join(project, 'supabase/functions/_switchyard', file)),
      await kitLib(file),
      `runtime file ${file}`,
    );
  }
  assert.match(
    await Deno.readTextFile(join(project, 'supabase/functions/_shared/registry.ts')),
    /registry/,
  );
  const denoJson = JSON.parse(
    await Deno.readTextFile(join(project, 'supabase/functions/deno.json')),
  );
  assert.equal(denoJson.imports.switchyard, './_switchyard/mod.ts');
}

const libFile = (file: string) => Deno.readTextFile(join(KIT_ROOT, 'lib', file));

Deno.test('switchyard --help lists every command; --version; an unknown command exits 2', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'sy-cli-help-' });
  try {
    const help = await run(['run', '-A', CLI, '--help'], dir);
    ok(help, 'switchyard --help');
    for (const name of Object.keys(COMMANDS)) {
      assert.match(help.stdout, new RegExp(`^  ${name.replace(':', '\\:')} +\\S`, 'm'), name);
    }
    for (
      const name of ['install', 'scaffold-queue', 'db:push', 'compile', 'pause', 'fence', 'doctor']
    ) {
      assert.ok(name in COMMANDS, name);
    }
    const version = await run(['run', '-A', CLI, '--version'], dir);
    assert.equal(version.stdout.trim(), `switchyard ${KIT_VERSION}`);
    const unknown = await run(['run', '-A', CLI, 'instal'], dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command "instal": use one of install, /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('switchyard from a checkout: install, db:push, operator commands with their arguments', async () => {
  const project = await supabaseInit('sy-cli-project-');
  const database = `sy_cli_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    ok(await run(['run', '-A', CLI, 'install', '--project', project], project), 'install');
    await assertInstalled(project, libFile);

    await admin.unsafe(`create database "${database}"`);
    const env = { DATABASE_URL: urlFor(database) };
    const push = await run(['run', '-A', CLI, 'db:push', '--project', project], project, env);
    ok(push, 'switchyard db:push');
    assert.match(push.stdout, /migrations applied/);
    const db = postgres(urlFor(database), { max: 1, onnotice: () => {} });
    try {
      const [{ version }] = await db`select switchyard.core_version() as version`;
      assert.ok(version, 'the SQL core is applied');
    } finally {
      await db.end();
    }

    // Operator commands get their own arguments (not the dispatcher's).
    const pause = await run(['run', '-A', CLI, 'pause'], project, env);
    assert.equal(pause.code, 2, pause.stderr);
    assert.match(pause.stderr, /missing <function>: name the queue function to pause/);
    const unknownFn = await run(['run', '-A', CLI, 'pause', 'nope-worker'], project, env);
    assert.equal(unknownFn.code, 1, unknownFn.stdout + unknownFn.stderr);
    assert.match(unknownFn.stderr, /nope-worker/);
    ok(await run(['run', '-A', CLI, 'drain'], project, env), 'switchyard drain');
    // doctor on the fresh project: the migrations applied, the registry compiled, nothing wrong.
    const doctor = await run(['run', '-A', CLI, 'doctor', '--project', project], project, env);
    ok(doctor, 'switchyard doctor');
    assert.match(doctor.stdout, /no problem found in /);
  } finally {
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
    await Deno.remove(project, { recursive: true });
  }
});

// The compiled binary itself is not run here: `deno compile` downloads its base runtime
// (denort) from Deno's server, which this environment cannot reach and no registry offers
// (npm's deno packages carry the full deno only; docs/design/local-runs.md#the-switchyard-command).
// What the build
// embeds is checked without it, and a build on a full deno is refused.
Deno.test('deno task build-cli embeds files that exist, and the runtime list the binary reads', async () => {
  const list = await writeRuntimeList();
  assert.deepEqual(JSON.parse(await Deno.readTextFile(list)), await runtimeModules());
  assert.ok(list.endsWith(RUNTIME_LIST));
  // deno compile refuses a missing --include: every entry exists.
  for (const entry of EMBEDDED) await Deno.stat(join(KIT_ROOT, entry));
});

Deno.test('deno task build-cli refuses a DENORT_BIN that is a full deno (the binary would run as deno)', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-build-cli-' });
  try {
    const output = join(dir, 'switchyard');
    const out = await run(['task', '-q', 'build-cli', '--output', output], KIT_ROOT, {
      DENORT_BIN: Deno.execPath(),
    });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.match(
      out.stderr,
      new RegExp(
        `does not run as switchyard \\(its --help printed "A modern JavaScript and TypeScript runtime"\\): DENORT_BIN=${
          Deno.execPath().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        } is not a denort`,
      ),
    );
    await assert.rejects(Deno.stat(output), Deno.errors.NotFound, 'the clone of deno is removed');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
