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
  const archive = new Deno.Command('git', {
    args: ['archive', '--format=tar', release.commit],
    cwd: KIT_ROOT,
    stdout: 'piped',
    stderr: 'piped',
  }).spawn();
  const tar = new Deno.Command('tar', { args: ['-x', '-C', dir], stdin: 'piped' }).spawn();
  await archive.stdout.pipeTo(tar.stdin);
  const [a, t] = await Promise.all([archive.output(), tar.status]);
  if (!a.success || !t.success) {
    throw new Error(
      `git archive ${release.commit} | tar -x failed: ${new TextDecoder().decode(a.stderr)}`,
    );
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

/** What a command printed. */
export interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

/** `deno task -q <args>` in a kit checkout (`cwd`), as a user types it; it must succeed. */
export async function kitTask(
  cwd: string,
  args: string[],
  env: Record<string, string>,
): Promise<Output> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ['task', '-q', ...args],
    cwd,
    env: { NO_COLOR: '1', ...env },
    stdin: 'null',
    stdout: 'piped',
    stderr: 'piped',
  }).output();
  const dec = new TextDecoder();
  const result = { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  assert.equal(
    result.code,
    0,
    `deno task ${args.join(' ')} in ${cwd} failed:\n${result.stdout}\n${result.stderr}`,
  );
  return result;
}
