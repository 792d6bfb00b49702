/**
 * The kit's npm package as the tests install it: built from this checkout (`buildNpm`, whose Node
 * entries are a whole TypeScript compile of `lib/`'s graph) and packed (`npm pack`), once per test
 * run. `deno task test` (tools/test.ts) names a folder of the run's own in
 * `SWITCHYARD_TEST_NPM_PACKAGE`, removed when the run ends: the first test file that asks builds
 * the package there under a file lock, and every other file of the run — the README's files, one
 * per Supabase CLI, and the Node app's test, side by side in processes of their own — waits for
 * that lock and installs the same tarball. The checkout does not change during a run, so the
 * tarball is the one each file would have built. Without the variable (a file run by plain `deno
 * test`) the package is built in a temporary folder of this process.
 *
 * The build's own checks (a type error in `lib/`, a declaration naming a runtime's types) fail
 * whichever file builds it, and every file that waited fails with the same error.
 *
 * @module
 */
import { join } from 'node:path';
import { buildNpm, npmPack } from '../../tools/build_npm.ts';

/** The variable naming the run's package folder. */
export const NPM_PACKAGE_ENV = 'SWITCHYARD_TEST_NPM_PACKAGE';

let packed: Promise<string> | undefined;

/** The tarball of the kit's npm package, built and packed once per run; its path. */
export function packedKit(): Promise<string> {
  packed ??= pack();
  return packed;
}

async function pack(): Promise<string> {
  const shared = Deno.env.get(NPM_PACKAGE_ENV);
  if (!shared) {
    const dir = await Deno.makeTempDir({ prefix: 'switchyard-npm-package-' });
    globalThis.addEventListener('unload', () => Deno.removeSync(dir, { recursive: true }));
    await buildNpm(join(dir, 'package'));
    return await npmPack(join(dir, 'package'), dir);
  }
  await Deno.mkdir(shared, { recursive: true });
  const lock = await Deno.open(join(shared, '.lock'), { create: true, write: true });
  try {
    // Exclusive: one file builds while the others wait here, across processes.
    await lock.lock(true);
    const record = join(shared, 'packed.json');
    const done = await Deno.readTextFile(record).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    });
    if (done !== null) {
      const { failed, tarball } = JSON.parse(done) as { failed?: string; tarball?: string };
      if (failed) {
        throw new Error(`building the npm package failed in another test file: ${failed}`);
      }
      return tarball!;
    }
    try {
      await buildNpm(join(shared, 'package'));
      const tarball = await npmPack(join(shared, 'package'), shared);
      await Deno.writeTextFile(record, JSON.stringify({ tarball }));
      return tarball;
    } catch (e) {
      await Deno.writeTextFile(record, JSON.stringify({ failed: (e as Error).message }));
      throw e;
    }
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}
