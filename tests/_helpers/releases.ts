/**
 * Releases as users have them: the kit's whole tree at a release's recorded commit
 * (`releases/<version>/manifest.json`), taken from git history, so an upgrade test runs that
 * release's own SQL, scripts and runtime, never today's `lib/` against yesterday's SQL.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { sha256 } from '../../cli/_kit.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { commitMigrations, git, type ReleaseManifest } from '../../tools/release_manifest.ts';
import { deno, type Output, runCommand } from './process.ts';

/**
 * Writes the kit as it was at `release.commit` into `dir` (created when missing) and checks
 * that its SQL core is exactly what the manifest lists. Throws, naming the commit and the fix,
 * when the checkout lacks the commit (a shallow clone).
 */
export async function extractRelease(release: ReleaseManifest, dir: string): Promise<void> {
  if (!/^[0-9a-f]{40}$/.test(release.commit ?? '')) {
    throw new Error(
      `releases/${release.version}/manifest.json records no commit (${release.commit}): ` +
        'record it with `deno task release-manifest --version ' + release.version +
        ' --commit <rev>`',
    );
  }
  const has = await git(['cat-file', '-e', `${release.commit}^{commit}`]);
  if (!has.ok) {
    throw new Error(
      `release ${release.version}'s commit ${release.commit} is not in this checkout's history ` +
        '(a shallow clone?): run `git fetch --unshallow` (or clone without --depth)',
    );
  }
  await Deno.mkdir(dir, { recursive: true });
  // The tree as a tar file beside it, then unpacked into it.
  const tarFile = `${dir.replace(/\/+$/, '')}.tar`;
  try {
    const archive = await runCommand(
      'git',
      ['archive', '--format=tar', `--output=${tarFile}`, release.commit],
      { cwd: KIT_ROOT },
    );
    if (archive.code !== 0) {
      throw new Error(`git archive ${release.commit} failed: ${archive.stderr}`);
    }
    const tar = await runCommand('tar', ['-x', '-f', tarFile, '-C', dir]);
    if (tar.code !== 0) throw new Error(`tar -x of ${release.commit} failed: ${tar.stderr}`);
  } finally {
    await Deno.remove(tarFile).catch(() => {});
  }
  const core = await commitMigrations(release.commit);
  const listed = release.migrations.map((m) => m.file);
  if (core.join('\n') !== listed.join('\n')) {
    throw new Error(
      `release ${release.version} at ${release.commit} has migrations ${core.join(', ')}, ` +
        `its manifest lists ${listed.join(', ')}`,
    );
  }
  for (const { file, sha256: hash } of release.migrations) {
    const text = await Deno.readTextFile(join(dir, 'supabase', 'migrations', file));
    if ((await sha256(text)) !== hash) {
      throw new Error(
        `release ${release.version}: ${file} at ${release.commit} differs from its manifest hash`,
      );
    }
  }
}

/** `deno task -q <args>` in a kit checkout (`cwd`), as a user types it; it must succeed. */
export async function kitTask(
  cwd: string,
  args: string[],
  env: Record<string, string>,
): Promise<Output> {
  const result = await deno(['task', '-q', ...args], { cwd, env: { NO_COLOR: '1', ...env } });
  assert.equal(
    result.code,
    0,
    `deno task ${args.join(' ')} in ${cwd} failed:\n${result.stdout}\n${result.stderr}`,
  );
  return result;
}
