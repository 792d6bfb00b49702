/**
 * `supabaseCli` (cli/_invocation.ts) reads a project's npm CLI version from the `supabase`
 * package's manifest, the package `node_modules/.bin/supabase` links into, instead of starting
 * the CLI (over a CPU second each time): the executable here fails if it is ever run. A bin that
 * is no link into a `supabase` package is asked for `--version` instead (tests/e2e/invocation_test.ts
 * runs that path against the real CLIs); no process is started here.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { npmPackageVersion, supabaseCli } from '../../../cli/_invocation.ts';

async function project(manifest: Record<string, unknown>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: 'sy-supabase-manifest-' });
  const pkg = join(root, 'node_modules', 'supabase');
  await Deno.mkdir(join(pkg, 'dist'), { recursive: true });
  await Deno.writeTextFile(join(pkg, 'package.json'), JSON.stringify(manifest));
  // Run, it would say nothing and fail: a version can only come from the manifest.
  await Deno.writeTextFile(join(pkg, 'dist', 'supabase.js'), '#!/bin/sh\nexit 3\n');
  await Deno.chmod(join(pkg, 'dist', 'supabase.js'), 0o755);
  await Deno.mkdir(join(root, 'node_modules', '.bin'));
  await Deno.symlink(
    '../supabase/dist/supabase.js',
    join(root, 'node_modules', '.bin', 'supabase'),
  );
  return root;
}

Deno.test('the npm CLI version comes from the supabase package manifest, the CLI never started', async () => {
  const root = await project({ name: 'supabase', version: '2.122.1' });
  try {
    assert.deepEqual(await supabaseCli(join(root, 'supabase', 'functions')), {
      command: 'npx supabase',
      version: '2.122.1',
      major: 2,
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test('a manifest of another package, or an odd version, is not taken for the CLI version', async () => {
  for (
    const manifest of [{ name: 'not-supabase', version: '2.0.0' }, {
      name: 'supabase',
      version: 'latest',
    }]
  ) {
    const root = await project(manifest);
    try {
      // Null: supabaseCli asks the executable for --version instead.
      assert.equal(npmPackageVersion(join(root, 'node_modules', '.bin', 'supabase')), null);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  }
  assert.equal(npmPackageVersion('/no/such/bin/supabase'), null);
});
