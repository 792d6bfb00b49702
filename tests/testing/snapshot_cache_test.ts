/**
 * The migrated core's snapshot cached on disk
 * (docs/design/clock.md#speed-and-what-the-engine-is-not,
 * lib/testing/snapshot_cache.ts), across real processes: the first writes it whole, the next
 * starts from it without building (the file is not rewritten), a file that is not a snapshot is
 * built over, and `off` leaves no cache anywhere.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../cli/_project.ts';
import { deno } from '../_helpers/process.ts';

const SCRIPT = `import { defineDeployedFlow, Flow } from '${KIT_ROOT}/lib/mod.ts';
import { createTestEngine } from '${KIT_ROOT}/lib/testing.ts';

const v1 = new Flow<{ n: number }>({ slug: 'cacheV1' }).step({ slug: 'double' }, (i) => i.n * 2);
{
  await using engine = await createTestEngine({
    registry: [defineDeployedFlow(v1, { alias: 'c' })] as const,
  });
  const run = await engine.start('c', { n: 21 });
  await engine.runUntilIdle();
  console.log(JSON.stringify(await engine.output(run)));
}
// The closed engine's idle database would hold the process for PGlite's own timer
// (docs/design/clock.md#the-test-engine).
Deno.exit(0);
`;

/** Runs the script in a process of its own with `env`; its output. */
async function engineProcess(script: string, env: Record<string, string>): Promise<string> {
  const out = await deno(['run', '-A', '--config', join(KIT_ROOT, 'deno.json'), script], { env });
  assert.equal(out.code, 0, `the engine's process failed:\n${out.stderr}`);
  return out.stdout.trim();
}

async function cacheFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  return names.sort();
}

Deno.test('a snapshot cached by one process starts the next; a bad one is built over; off caches nothing', async () => {
  const tmp = await Deno.makeTempDir({ prefix: 'switchyard-cache-test-' });
  try {
    const script = join(tmp, 'engine.ts');
    await Deno.writeTextFile(script, SCRIPT);
    const cache = join(tmp, 'cache');

    // The first process builds the core and caches its snapshot, whole.
    assert.equal(await engineProcess(script, { SWITCHYARD_TEST_CACHE: cache }), '{"double":42}');
    const files = await cacheFiles(cache);
    assert.equal(files.length, 1, `one cache file, no partial one: ${files}`);
    assert.match(files[0], /^test-engine-[0-9a-f]{32}\.tar$/);
    const path = join(cache, files[0]);
    const written = await Deno.stat(path);
    assert.ok(written.size > 1_000_000, `a data directory, not ${written.size} bytes`);

    // The next starts from it: the same run, and the file is not written again.
    assert.equal(await engineProcess(script, { SWITCHYARD_TEST_CACHE: cache }), '{"double":42}');
    assert.deepEqual(await cacheFiles(cache), files);
    assert.equal((await Deno.stat(path)).mtime?.getTime(), written.mtime?.getTime());

    // A file that is no snapshot: the engine builds, and the file becomes the snapshot again.
    await Deno.writeTextFile(path, 'not a tarball');
    assert.equal(await engineProcess(script, { SWITCHYARD_TEST_CACHE: cache }), '{"double":42}');
    assert.equal((await Deno.stat(path)).size, written.size);
    assert.deepEqual(await cacheFiles(cache), files);

    // off: no cache, not even in the default folder ($XDG_CACHE_HOME/switchyard; Deno's own
    // cache stays where it is).
    const xdg = join(tmp, 'xdg');
    await Deno.mkdir(xdg);
    const info = await deno(['info', '--json']);
    const { denoDir } = JSON.parse(info.stdout) as { denoDir: string };
    assert.equal(
      await engineProcess(script, {
        SWITCHYARD_TEST_CACHE: 'off',
        XDG_CACHE_HOME: xdg,
        DENO_DIR: denoDir,
      }),
      '{"double":42}',
    );
    assert.deepEqual(await cacheFiles(xdg), []);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
