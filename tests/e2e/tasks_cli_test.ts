/**
 * `deno task` as a user meets it: every command answers `--help` with its usage (and starts
 * nothing), and `deno task test` on a machine without PostgreSQL server binaries, or without
 * Chromium for a browser test, says exactly what to install. The plans behind those messages are
 * checked without processes in tests/unit/tools/tasks_test.ts.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../cli/_project.ts';
import { BROWSER_TEST } from '../../tools/_provision.ts';
import { deno } from '../_helpers/process.ts';

const config = JSON.parse(await Deno.readTextFile(join(KIT_ROOT, 'deno.json'))) as {
  tasks: Record<string, string | { description?: string; command?: string }>;
};

function task(args: string[], env?: Record<string, string>) {
  return deno(['task', '-q', ...args], {
    cwd: KIT_ROOT,
    // With env: exactly that environment (no DATABASE_URL inherited).
    env: { NO_COLOR: '1', ...env },
    clearEnv: env !== undefined,
  });
}

Deno.test('every command answers --help with its usage', async () => {
  // check and ci are chains of deno subcommands, whose --help is Deno's own.
  const commands = Object.keys(config.tasks).filter((name) => !['check', 'ci'].includes(name));
  const results = await Promise.all(commands.map((name) => task([name, '--help'])));
  commands.forEach((name, i) => {
    const { code, stdout, stderr } = results[i];
    assert.equal(code, 0, `deno task ${name} --help: ${stdout}${stderr}`);
    assert.match(stdout, /usage: /, `deno task ${name} --help prints its usage`);
    assert.ok(stdout.includes(name === 'db:push' ? 'db:push' : name), `usage names ${name}`);
  });
});

Deno.test('deno task test without server binaries says exactly what to install', async () => {
  const missing = await Deno.makeTempDir({ prefix: 'switchyard-no-pg-' });
  try {
    const env = Deno.env.toObject();
    delete env.DATABASE_URL;
    const { code, stderr } = await task(['test', 'tests/unit/tools/release_test.ts'], {
      ...env,
      PG_BIN: missing,
    });
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`PostgreSQL server binaries not found in ${missing}`));
    assert.match(stderr, /apt-get install -y postgresql-15 postgresql-15-cron/);
  } finally {
    await Deno.remove(missing, { recursive: true });
  }
});

Deno.test('deno task test of the browser test without chromium says exactly what to install', async () => {
  const missing = join(await Deno.makeTempDir({ prefix: 'switchyard-no-chromium-' }), 'chromium');
  try {
    const env = Deno.env.toObject();
    delete env.DATABASE_URL;
    const { code, stderr } = await task(['test', BROWSER_TEST], { ...env, CHROMIUM: missing });
    assert.equal(code, 1, 'the browser test fails (never skips)');
    assert.ok(
      stderr.includes(
        `[test] the browser test will fail: chromium not found at ${missing} (the dashboard's ` +
          `browser test, ${BROWSER_TEST}, needs it): point CHROMIUM at a Chromium binary`,
      ),
      stderr,
    );
  } finally {
    await Deno.remove(join(missing, '..'), { recursive: true });
  }
});

Deno.test('deno task test --tier unit needs no server; another tier is refused by name', async () => {
  const missing = await Deno.makeTempDir({ prefix: 'switchyard-no-pg-' });
  try {
    const env = Deno.env.toObject();
    delete env.DATABASE_URL;
    const unit = await task(['test', '--tier', 'unit', 'tests/unit/cli/env_file_test.ts'], {
      ...env,
      PG_BIN: missing,
    });
    assert.equal(unit.code, 0, unit.stderr);
    assert.match(unit.stderr, /^\[test\] tier unit: 1 file\(s\)$/m);
    assert.doesNotMatch(unit.stderr, /PostgreSQL|cluster/, 'no server was looked for');
    assert.match(unit.stdout, /ok \| \d+ passed \| 0 failed/);
    assert.match(
      unit.stderr,
      /^\[test\] slowest files \(the sum of their tests' durations\):\n\[test\] +\d+\.\d s {2}tests\/unit\/cli\/env_file_test\.ts$/m,
    );
    const other = await task(['test', '--tier', 'unit', 'tests/sql/prune_test.ts'], {
      ...env,
      PG_BIN: missing,
    });
    assert.equal(other.code, 2);
    assert.match(
      other.stderr,
      /^error: tests\/sql\/prune_test\.ts is in tier db, not unit \(tests\/tiers\.ts\): run it with --tier db$/m,
    );
    const unknown = await task(['test', '--tier', 'fast'], { ...env, PG_BIN: missing });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^error: --tier "fast" is not a tier: use one of unit, db, e2e$/m);
  } finally {
    await Deno.remove(missing, { recursive: true });
  }
});
