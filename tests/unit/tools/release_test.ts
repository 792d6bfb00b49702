/**
 * Release discipline for SQL (docs/design/local-runs.md): a migration listed in a release
 * manifest (`releases/<version>/manifest.json`) never changes and never goes away; changes go
 * into new migrations, which sort after every released one. A release is a record (its commit,
 * its migrations and their hashes), never a copy: the commit it names holds exactly that SQL
 * core. No database needed.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_VERSION, sha256 } from '../../../cli/_kit.ts';
import { KIT_ROOT } from '../../../cli/_project.ts';
import {
  commitMigrations,
  git,
  releaseProblems,
  releases,
  RELEASES_DIR,
} from '../../../tools/release_manifest.ts';

const all = await releases();

Deno.test('the kit version has a release snapshot', () => {
  assert.ok(
    all.some((r) => r.version === KIT_VERSION),
    `releases/${KIT_VERSION}/manifest.json is missing: run \`deno task release-manifest\``,
  );
});

Deno.test('released migrations are unchanged, and new ones sort after them', async () => {
  const problems = await releaseProblems();
  assert.deepEqual(problems, [], `\n${problems.join('\n\n')}`);
});

Deno.test('an edited, a removed and an early migration each fail with what to do instead', async () => {
  const kit = await Deno.makeTempDir({ prefix: 'switchyard-release-' });
  try {
    const migrations = join(kit, 'supabase/migrations');
    await Deno.mkdir(migrations, { recursive: true });
    const release = all.at(-1)!;
    for (const { file } of release.migrations) {
      await Deno.copyFile(join(KIT_ROOT, 'supabase/migrations', file), join(migrations, file));
    }
    await Deno.mkdir(join(kit, 'releases'));
    const snapshot = join(RELEASES_DIR, release.version);
    await Deno.mkdir(join(kit, 'releases', release.version));
    await Deno.copyFile(
      join(snapshot, 'manifest.json'),
      join(kit, 'releases', release.version, 'manifest.json'),
    );
    assert.deepEqual(await releaseProblems(kit), []);

    const [edited, removed] = [release.migrations[1].file, release.migrations[2].file];
    await Deno.writeTextFile(
      join(migrations, edited),
      `${await Deno.readTextFile(join(migrations, edited))}\n-- edited in place\n`,
    );
    await Deno.remove(join(migrations, removed));
    const early = `${release.migrations[0].file.slice(0, 14)}_early.sql`;
    await Deno.writeTextFile(join(migrations, early), 'select 1;\n');
    const problems = await releaseProblems(kit);
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(
      problems.find((p) => p.includes(edited)) ?? '',
      /changed after it was released in .*add a new migration with a later timestamp instead/,
    );
    assert.match(problems.find((p) => p.includes(removed)) ?? '', /is gone: .*restore it/);
    assert.match(problems.find((p) => p.includes(early)) ?? '', /sorts before the released/);
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});

Deno.test('each release names its commit, whose SQL core is the release, and its tag marks it', async () => {
  for (const release of all) {
    assert.match(release.commit ?? '', /^[0-9a-f]{40}$/, `releases/${release.version} commit`);
    assert.ok(
      (await git(['cat-file', '-e', `${release.commit}^{commit}`])).ok,
      `release ${release.version}'s commit ${release.commit} is not in this checkout's history ` +
        '(a shallow clone?): run `git fetch --unshallow`',
    );
    assert.deepEqual(
      await commitMigrations(release.commit),
      release.migrations.map((m) => m.file),
      release.version,
    );
    for (const { file, sha256: hash } of release.migrations) {
      const text = (await git(['show', `${release.commit}:supabase/migrations/${file}`])).out;
      assert.equal(await sha256(text), hash, `${release.version}: ${file} at ${release.commit}`);
    }
    // The tag is there when the clone fetched tags; then it marks the recorded commit.
    const tag = await git([
      'rev-parse',
      '--verify',
      '--quiet',
      `refs/tags/v${release.version}^{commit}`,
    ]);
    if (tag.ok) assert.equal(tag.out.trim(), release.commit, `tag v${release.version}`);
  }
});
