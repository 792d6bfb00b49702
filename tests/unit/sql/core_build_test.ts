/**
 * `lib/sql/core_build.ts`, what a test engine loads (docs/design/clock.md#the-test-engine), is the
 * fresh
 * build of `supabase/schemas/` and the PGMQ-compatible layer, as `deno task sql:assemble` writes
 * it; a source changed without assembling again is named.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CORE_BUILD_SQL, PGMQ_COMPAT_SQL } from '../../../lib/sql/core_build.ts';
import {
  CORE_BUILD_MODULE,
  coreBuildProblems,
  freshBuild,
  SCHEMAS,
} from '../../../tools/sql_source.ts';
import { copyTree, KIT_ROOT } from '../../../cli/_project.ts';

Deno.test('lib/sql/core_build.ts holds the fresh build of the source and the PGMQ-compatible layer', async () => {
  assert.deepEqual(await coreBuildProblems(), []);
  assert.equal(CORE_BUILD_SQL, await freshBuild());
  assert.equal(PGMQ_COMPAT_SQL, await Deno.readTextFile(join(KIT_ROOT, 'pgmq_compat/pgmq.sql')));
});

Deno.test('a source changed without sql:assemble is named, and so is a missing module', async () => {
  const kit = await Deno.makeTempDir({ prefix: 'switchyard-core-build-' });
  try {
    for (const part of [SCHEMAS, 'pgmq_compat', 'lib/sql']) {
      await copyTree(join(KIT_ROOT, part), join(kit, part));
    }
    assert.deepEqual(await coreBuildProblems(kit), []);
    const fn = join(kit, SCHEMAS, 'functions', 'rules', 'clock_now.sql');
    await Deno.writeTextFile(
      fn,
      (await Deno.readTextFile(fn)).replace('select pg_catalog.now()', 'select  pg_catalog.now()'),
    );
    assert.deepEqual(await coreBuildProblems(kit), [
      `${CORE_BUILD_MODULE} is not the fresh build of the source: run \`deno task sql:assemble\``,
    ]);
    await Deno.remove(join(kit, CORE_BUILD_MODULE));
    assert.match((await coreBuildProblems(kit))[0], /core_build\.ts is missing/);
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});
