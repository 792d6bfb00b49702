/**
 * `deno task release-manifest [--version X.Y.Z] [--commit REV] [--check]`: (re)writes the
 * release record `releases/<version>/manifest.json`: the release's git commit and every SQL
 * core migration of `supabase/migrations/` with its SHA-256. A release is that record, never a
 * copy of files: the upgrade tests take a release's SQL and runtime from its commit
 * (docs/design/local-runs.md). A copy left by an earlier kit (`releases/<version>/migrations/`)
 * is removed.
 *
 * From a release on, its migrations never change: `tests/unit/tools/release_test.ts` fails when a file
 * listed in a manifest differs from it (and says to add a new migration instead). Run this
 * when cutting a release (the default version is the kit's, `KIT_VERSION`), or to refresh the
 * current release's snapshot before it is published. `--check` writes nothing and exits 1 when
 * the snapshot is out of date.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { coreMigrations, isCoreMigration, KIT_VERSION, sha256 } from '../cli/_kit.ts';
import { KIT_ROOT } from '../cli/_project.ts';

/**
 * `releases/<version>/manifest.json`.
 *
 * @example
 * ```ts
 * import type { ReleaseManifest } from './release_manifest.ts';
 * const manifest: ReleaseManifest = { version: '0.1.0', commit: '867b4da…', migrations: [] };
 * ```
 */
export interface ReleaseManifest {
  version: string;
  /**
   * The git commit whose tree is the release (its SQL core and its runtime, `lib/`); the tag
   * `v<version>` marks it. The upgrade test installs a release from it.
   */
  commit: string;
  /** The released SQL core, in the order it runs. */
  migrations: { file: string; sha256: string }[];
}

/** The releases' directory of the kit. */
export const RELEASES_DIR: string = join(KIT_ROOT, 'releases');

/**
 * Every release snapshot, oldest first (by semantic version).
 *
 * @example
 * ```ts
 * import { releases } from './release_manifest.ts';
 * for (const r of await releases()) console.log(r.version, r.migrations.length);
 * ```
 */
export async function releases(dir: string = RELEASES_DIR): Promise<ReleaseManifest[]> {
  const out: ReleaseManifest[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isDirectory || !/^\d+\.\d+\.\d+$/.test(entry.name)) continue;
      out.push(JSON.parse(await Deno.readTextFile(join(dir, entry.name, 'manifest.json'))));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const key = (v: string) => v.split('.').map(Number);
  return out.sort((a, b) => {
    const [x, y] = [key(a.version), key(b.version)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
}

/**
 * Everything that breaks the release discipline in a kit checkout, one message each: a released
 * migration that changed or is gone, and an unreleased one that sorts before a released one.
 * Empty when the discipline holds. CI runs it in `tests/unit/tools/release_test.ts`.
 *
 * @example
 * ```ts
 * import { releaseProblems } from './release_manifest.ts';
 * for (const problem of await releaseProblems()) console.error(problem);
 * ```
 */
export async function releaseProblems(
  kitDir: string = KIT_ROOT,
  releasesDir: string = join(kitDir, 'releases'),
): Promise<string[]> {
  const problems: string[] = [];
  const all = await releases(releasesDir);
  for (const release of all) {
    for (const { file, sha256: released } of release.migrations) {
      let now: string;
      try {
        now = await sha256(await Deno.readTextFile(join(kitDir, 'supabase', 'migrations', file)));
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
        problems.push(
          `supabase/migrations/${file} was released in ${release.version} and is gone: released ` +
            'migrations are never removed (databases have applied them); restore it',
        );
        continue;
      }
      if (now !== released) {
        problems.push(
          `supabase/migrations/${file} changed after it was released in ${release.version} ` +
            `(sha256 ${now.slice(0, 12)}…, released ${released.slice(0, 12)}…): released ` +
            'migrations never change, because a database that applied one never runs it again. ' +
            `Restore the released file (git show ${
              release.commit.slice(0, 12)
            }:supabase/migrations/` +
            `${file} > supabase/migrations/${file}) and add a new migration with a later timestamp ` +
            'instead',
        );
      }
    }
  }
  const released = new Set(all.flatMap((r) => r.migrations.map((m) => m.file)));
  const last = [...released].sort().pop();
  if (last !== undefined) {
    for (const file of await coreMigrations(kitDir)) {
      if (!released.has(file) && file < last) {
        problems.push(
          `supabase/migrations/${file} is new but sorts before the released ${last}: installed ` +
            'projects apply new migrations after the released ones, so give it a later timestamp',
        );
      }
    }
  }
  return problems;
}

/**
 * The record of `version` as it would be written now: file path (relative to
 * `releases/<version>/`, only `manifest.json`) → content.
 *
 * @example
 * ```ts
 * import { snapshot } from './release_manifest.ts';
 * console.log([...(await snapshot('0.1.0')).keys()]);
 * ```
 */
export async function snapshot(
  version: string,
  kitDir: string = KIT_ROOT,
  commit = '',
): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const manifest: ReleaseManifest = { version, commit, migrations: [] };
  for (const file of await coreMigrations(kitDir)) {
    const text = await Deno.readTextFile(join(kitDir, 'supabase', 'migrations', file));
    manifest.migrations.push({ file, sha256: await sha256(text) });
  }
  files.set('manifest.json', `${JSON.stringify(manifest, null, 2)}\n`);
  return files;
}

const USAGE = `usage: deno task release-manifest [--version X.Y.Z] [--commit REV] [--check]

(Re)writes releases/<version>/manifest.json (the release's commit and the SHA-256 of every SQL
core migration of supabase/migrations); a copy an earlier kit left there is removed.
Default version: ${KIT_VERSION}. Cutting a release: commit the release, then record its commit
with --commit and tag it (git tag -a v<version> <commit>).

  --version X.Y.Z  the release to write
  --commit REV     the release's commit (kept from the existing manifest when omitted)
  --check          write nothing; exit 1 when the snapshot differs from supabase/migrations
  -h, --help       this text`;

/**
 * Runs git in the kit's checkout: whether it succeeded, and what it printed.
 *
 * @example
 * ```ts
 * import { git } from './release_manifest.ts';
 * console.log((await git(['rev-parse', 'HEAD'])).out.trim());
 * ```
 */
export async function git(args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  const out = await new Deno.Command('git', {
    args,
    cwd: KIT_ROOT,
    stdout: 'piped',
    stderr: 'piped',
  }).output();
  const dec = new TextDecoder();
  return { ok: out.success, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

/**
 * The SQL core migrations (file names, sorted) in the tree of a commit.
 *
 * @example
 * ```ts
 * import { commitMigrations } from './release_manifest.ts';
 * console.log((await commitMigrations('HEAD')).length);
 * ```
 */
export async function commitMigrations(commit: string): Promise<string[]> {
  const { out } = await git(['ls-tree', '--name-only', commit, 'supabase/migrations/']);
  return out.split('\n').map((p) => p.replace('supabase/migrations/', '')).filter(isCoreMigration)
    .sort();
}

/** The full hash of a git revision of the kit's checkout. */
async function resolveCommit(rev: string): Promise<string> {
  const { ok, out } = await git(['rev-parse', '--verify', `${rev}^{commit}`]);
  if (!ok) throw new Error(`--commit "${rev}" is not a commit of this checkout`);
  return out.trim();
}

/**
 * The upgrade steps of the release being cut (`supabase/upgrades/unreleased/`, already in its
 * assembled migration) move to `supabase/upgrades/<version>/`, a record: the next release's
 * steps start empty (docs/design/code-layout.md#the-sql-source-and-its-migrations).
 */
async function releaseUpgradeSteps(version: string): Promise<void> {
  const from = join(KIT_ROOT, 'supabase', 'upgrades', 'unreleased');
  const to = join(KIT_ROOT, 'supabase', 'upgrades', version);
  try {
    await Deno.stat(from);
  } catch {
    return;
  }
  await Deno.rename(from, to);
  console.log(`moved    supabase/upgrades/unreleased/ to supabase/upgrades/${version}/`);
}

async function main(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        version: { type: 'string', default: KIT_VERSION },
        commit: { type: 'string' },
        check: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const version = values.version!;
  if (!/^\d+\.\d+\.\d+$/.test(version)) {
    console.error(`error: --version "${version}" is invalid: use X.Y.Z`);
    return 2;
  }
  const dir = join(RELEASES_DIR, version);
  let commit: string;
  try {
    commit = values.commit === undefined
      ? (JSON.parse(await Deno.readTextFile(join(dir, 'manifest.json'))) as ReleaseManifest)
        .commit ?? ''
      : await resolveCommit(values.commit);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      console.error(`error: ${(e as Error).message}`);
      return 1;
    }
    commit = '';
  }
  const wanted = await snapshot(version, KIT_ROOT, commit);
  if (values.commit !== undefined) {
    // The commit must be the release: its SQL core is exactly what the record lists.
    const listed = (JSON.parse(wanted.get('manifest.json')!) as ReleaseManifest).migrations;
    const atCommit = await commitMigrations(commit);
    if (atCommit.join('\n') !== listed.map((m) => m.file).join('\n')) {
      console.error(
        `error: commit ${commit.slice(0, 12)} has ${atCommit.length} SQL core migrations, ` +
          `supabase/migrations has ${listed.length}: record the commit the release was cut from, ` +
          'from a checkout whose supabase/migrations is that release',
      );
      return 1;
    }
  }
  const present = new Map<string, string>();
  try {
    present.set('manifest.json', await Deno.readTextFile(join(dir, 'manifest.json')));
    for await (const e of Deno.readDir(join(dir, 'migrations'))) {
      present.set(`migrations/${e.name}`, await Deno.readTextFile(join(dir, 'migrations', e.name)));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  if (!values.check) await releaseUpgradeSteps(version);
  const changed = [...wanted].filter(([p, text]) => present.get(p) !== text).map(([p]) => p);
  const removed = [...present.keys()].filter((p) => !wanted.has(p));
  if (changed.length === 0 && removed.length === 0) {
    const n = (JSON.parse(wanted.get('manifest.json')!) as ReleaseManifest).migrations.length;
    console.log(`releases/${version}/ is up to date (${n} migrations)`);
    return 0;
  }
  if (values.check) {
    console.error(
      `releases/${version}/ is out of date: ${[...changed, ...removed].join(', ')}; run ` +
        '`deno task release-manifest`',
    );
    return 1;
  }
  await Deno.mkdir(dir, { recursive: true });
  for (const p of removed) await Deno.remove(join(dir, p));
  if (removed.length > 0) await Deno.remove(join(dir, 'migrations')).catch(() => {});
  for (const p of changed) await Deno.writeTextFile(join(dir, p), wanted.get(p)!);
  for (const p of changed) {
    console.log(`${present.has(p) ? 'updated' : 'created'}  releases/${version}/${p}`);
  }
  for (const p of removed) console.log(`removed  releases/${version}/${p}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
