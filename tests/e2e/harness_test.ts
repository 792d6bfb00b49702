/**
 * The test harness and the migration path: clusters are always removed (also
 * for failing and interrupted runs), and bad input gives one clear error.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { MigrationError } from '../../lib/errors.ts';
import { migrate, pgmqModeFromEnv } from '../../lib/sql/migrate.ts';
import { adminUrl } from '../_helpers/db.ts';
import { within } from '../_helpers/wait.ts';
import { exists, freePort } from '../../cli/_util.ts';
import { deno, envWithout, spawnDeno, Spawned } from '../_helpers/process.ts';

const root = new URL('../../', import.meta.url).pathname;

/** Is any process running whose command line mentions `text`? */
async function processMentions(text: string): Promise<boolean> {
  for await (const entry of Deno.readDir('/proc')) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmd = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmd.includes(text)) return true;
    } catch { /* exited */ }
  }
  return false;
}

function spawnHarness(file: string, env: Record<string, string>) {
  return spawnDeno(['run', '-A', 'tools/test.ts', file], { cwd: root, env, clearEnv: true });
}

/** Text without the terminal colours deno test prints. */
// deno-lint-ignore no-control-regex
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

const harnessEnv = () =>
  envWithout('DATABASE_URL', 'SWITCHYARD_TEST_ADMIN_URL', 'SWITCHYARD_TEST_TEMPLATE');

Deno.test('a failing run exits non-zero and leaves no PostgreSQL process or directory behind', async () => {
  const child = spawnHarness('tests/fixtures/harness_failing.ts', harnessEnv());
  const { code, stdout, stderr } = await within(
    120_000,
    'the failing harness run to exit',
    child.wait(),
  );
  assert.notEqual(code, 0, 'a failing test fails the run');
  const dir = stderr.match(/cluster dir: (\S+)/)?.[1];
  assert.ok(dir, `the harness announced its cluster dir:\n${stderr}`);
  assert.match(stdout + stderr, /deliberate failure/);
  assert.equal(await exists(dir), false, `${dir} was removed`);
  assert.equal(await processMentions(dir), false, 'no server process is left');
});

Deno.test('an interrupted run stops the cluster and removes its directory', async () => {
  const child = spawnHarness('tests/fixtures/harness_hanging.ts', harnessEnv());
  // The harness starts a cluster and migrates a template first: 45 s at CI's load, so the bound
  // is for a hung harness, not a slow one.
  await child.waitFor(/HANGING/, { timeoutMs: 300_000 });
  const dir = child.stderr.match(/cluster dir: (\S+)/)?.[1];
  assert.ok(dir);
  assert.equal(await exists(dir), true);
  child.signal('SIGINT'); // the harness alone, as Ctrl-C would
  const out = await within(60_000, 'the interrupted harness to exit', child.wait());
  assert.notEqual(out.code, 0);
  // The harness passed the SIGINT on: deno test named the test that was still running.
  assert.match(
    plain(out.stdout + out.stderr),
    /The following tests were pending:\s+this test waits until the run is interrupted => \.\/tests\/fixtures\/harness_hanging\.ts:\d+/,
  );
  assert.equal(await exists(dir), false, `${dir} was removed`);
  assert.equal(await processMentions(dir), false, 'no server process is left');
});

Deno.test('a hung test ends a bounded run (.ci/bounded, as in .ci/run) within the bound, naming the test', async () => {
  // The suite's own server (DATABASE_URL) spares a cluster start. The bound covers the
  // template migration and the fixture's type check (a few seconds alone) with room for the e2e
  // tier beside it (25 s was passed during the migration with four e2e files running, twice in
  // CI); the run must end within it plus the clean-up grace (.ci/bounded kills what is left 30 s
  // after the bound). The test takes the bound's time, in one of e2e's parallel slots.
  const BOUND_S = 75;
  const env: Record<string, string> = { ...harnessEnv(), DATABASE_URL: adminUrl() };
  env.SWITCHYARD_CI_DEADLINE = String(Math.floor(Date.now() / 1000) + BOUND_S);
  const started = Date.now();
  const child = new Spawned(
    'bash',
    [
      '.ci/bounded',
      Deno.execPath(),
      'run',
      '-A',
      'tools/test.ts',
      'tests/fixtures/harness_hanging.ts',
    ],
    { cwd: root, env, clearEnv: true },
  );
  const out = await within((BOUND_S + 60) * 1000, 'the bounded run to end', child.wait());
  const seconds = (Date.now() - started) / 1000;
  const text = plain(out.stdout + out.stderr);
  assert.equal(out.code, 124, text);
  assert.ok(out.stdout.includes('HANGING'), `the hung test had started:\n${text}`);
  assert.match(
    text,
    /The following tests were pending:\s+this test waits until the run is interrupted => \.\/tests\/fixtures\/harness_hanging\.ts:\d+/,
  );
  assert.match(out.stderr, /\[ci\] TIMED OUT: the test run passed its bound/);
  assert.ok(seconds < BOUND_S + 45, `ended ${seconds} s after the start (bound ${BOUND_S} s)`);
  // The harness still cleaned up: its template database is gone.
  const template = out.stderr.match(/migrated template (\S+)/)?.[1];
  assert.ok(template, out.stderr);
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${template}`;
    assert.equal(rows.length, 0, `${template} was dropped`);
  } finally {
    await admin.end();
  }
});

Deno.test('missing server binaries: the harness says which package to install', async () => {
  const env = { ...harnessEnv(), PG_BIN: '/nonexistent/postgresql/bin' };
  const out = await deno(['run', '-A', 'tools/test.ts', 'tests/fixtures/harness_failing.ts'], {
    cwd: root,
    env,
    clearEnv: true,
  });
  const text = out.stderr;
  assert.notEqual(out.code, 0);
  assert.match(text, /apt-get install -y postgresql-15/);
  assert.match(text, /\/nonexistent\/postgresql\/bin/);
});

Deno.test('db:push without DATABASE_URL fails with one clear error', async () => {
  const out = await deno(['run', '-A', 'cli/db_push.ts'], {
    cwd: root,
    env: envWithout('DATABASE_URL'),
    clearEnv: true,
  });
  assert.equal(out.code, 1);
  assert.match(out.stderr, /DATABASE_URL is not set/);
});

Deno.test('migrate() against an unreachable server names the server', async () => {
  const url = `postgres://postgres@127.0.0.1:${freePort()}/nowhere`;
  await assert.rejects(migrate(url), (e: unknown) => {
    assert.ok(e instanceof MigrationError);
    assert.match(e.message, /127\.0\.0\.1/);
    return true;
  });
});

Deno.test('a failing migration file is named and leaves no partial schema', async () => {
  const name = `sy_mig_${crypto.randomUUID().slice(0, 8)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const work = await Deno.makeTempDir({ prefix: 'switchyard-mig-' });
  try {
    await Deno.mkdir(`${work}/supabase/migrations`, { recursive: true });
    await Deno.writeTextFile(`${work}/supabase/config.toml`, 'project_id = "mig"\n');
    await Deno.writeTextFile(
      `${work}/supabase/migrations/20260101000000_good.sql`,
      'create table good_one (id int);\n',
    );
    await Deno.writeTextFile(
      `${work}/supabase/migrations/20260101000100_broken.sql`,
      'create table half_done (id int);\ncreate table broken (id int references nowhere);\n',
    );
    const url = new URL(adminUrl());
    url.pathname = `/${name}`;
    await assert.rejects(
      migrate(url.toString(), { workdir: work, pgmqMode: pgmqModeFromEnv() }),
      (e: unknown) => {
        assert.ok(e instanceof MigrationError);
        assert.match(e.message, /20260101000100_broken\.sql/);
        assert.match(e.message, /nowhere/);
        return true;
      },
    );
    const db = postgres(url.toString(), { max: 1, onnotice: () => {} });
    try {
      const tables = await db<{ t: string }[]>`
        select table_name as t from information_schema.tables
         where table_schema = 'public' order by 1`;
      assert.deepEqual(tables.map((r) => r.t), ['good_one'], 'the failed file left nothing');
    } finally {
      await db.end();
    }
  } finally {
    await Deno.remove(work, { recursive: true });
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
});
