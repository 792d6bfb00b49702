/**
 * `CHANGELOG.md` held to the release records (docs/design/local-runs.md): a section
 * `## <version> - <YYYY-MM-DD>` per release, newest first, each with an `### Upgrading`
 * subsection; the sections are exactly the recorded releases (`releases/<version>/`) plus at
 * most one newer, the release being prepared. `tests/unit/changelog_test.ts` runs
 * {@linkcode changelogProblems} on the kit's file with {@linkcode changelogFacts}.
 *
 * How the release being prepared is told apart: its version has no record. Until the kit's
 * version (`KIT_VERSION`, deno.json's `version`) is raised, the newest section may name the next
 * version (the next patch, minor or major of the newest record); once raised to a version
 * without a record, the newest section must be that version. A recorded release is dated by its
 * commit (UTC).
 *
 * @module
 */
import { join } from 'node:path';
import { coreMigrations, KIT_VERSION } from '../cli/_kit.ts';
import { KIT_ROOT } from '../cli/_project.ts';
import { git, releases } from './release_manifest.ts';

/**
 * What the changelog is checked against.
 *
 * @example
 * ```ts
 * import type { ChangelogFacts } from './_changelog.ts';
 * const facts: ChangelogFacts = {
 *   releases: [{ version: '0.1.0', date: '2026-12-01', migrations: ['20261201000100_a.sql'] }],
 *   kitVersion: '0.1.0',
 *   packageVersion: '0.1.0',
 *   migrations: ['20261201000100_a.sql'],
 * };
 * ```
 */
export interface ChangelogFacts {
  /**
   * The recorded releases, oldest first: version, the UTC date of its commit (null while the
   * record names no commit of this checkout) and its SQL core migrations.
   */
  releases: { version: string; date: string | null; migrations: string[] }[];
  /** `KIT_VERSION` of cli/_kit.ts. */
  kitVersion: string;
  /** deno.json's `version`. */
  packageVersion: string;
  /** The SQL core migrations of the checkout (the release being prepared has these). */
  migrations: string[];
}

/** One `## <version> - <date>` section. */
interface Section {
  version: string;
  date: string;
  line: number;
  /** `### <title>` → its text, trimmed. */
  subsections: Map<string, string>;
}

/** The subsections a release may have; `Upgrading` may say `from <the release before>`. */
const SUBSECTIONS = ['Breaking', 'Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'];

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;

function semver(version: string): [number, number, number] | null {
  const m = SEMVER.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function compareVersions(a: string, b: string): number {
  const [x, y] = [semver(a)!, semver(b)!];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** Whether `next` is the next patch, minor or major release after `previous`. */
function isSuccessor(previous: string, next: string): boolean {
  const [a, b] = [semver(previous)!, semver(next)!];
  return (b[0] === a[0] && b[1] === a[1] && b[2] === a[2] + 1) ||
    (b[0] === a[0] && b[1] === a[1] + 1 && b[2] === 0) ||
    (b[0] === a[0] + 1 && b[1] === 0 && b[2] === 0);
}

/** Whether `date` is a real calendar day written YYYY-MM-DD. */
function isDate(date: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return false;
  return new Date(`${date}T00:00:00Z`).toISOString().slice(0, 10) === date;
}

function parse(text: string, problems: string[]): Section[] {
  const sections: Section[] = [];
  let section: Section | null = null;
  let title: string | null = null;
  let body: string[] = [];
  let malformed = false;
  const lines = text.split('\n');
  for (let i = 0; i <= lines.length; i++) {
    const line = i < lines.length ? lines[i].trimEnd() : '## (end)';
    if (!line.startsWith('## ') && !line.startsWith('### ')) {
      body.push(line);
      continue;
    }
    if (section !== null && title !== null) section.subsections.set(title, body.join('\n').trim());
    title = null;
    body = [];
    if (i === lines.length) break;
    if (line.startsWith('### ')) {
      if (section === null) {
        // Under a malformed heading (already named) a subsection is no news.
        if (!malformed) {
          problems.push(`CHANGELOG.md line ${i + 1}: "${line}" comes before any release section`);
        }
        continue;
      }
      title = line.slice(4).trim();
      if (section.subsections.has(title)) {
        problems.push(`CHANGELOG.md line ${i + 1}: ${section.version} has a second "### ${title}"`);
      }
      continue;
    }
    const m = /^## (\S+) - (\S+)$/.exec(line);
    if (!m) {
      problems.push(
        `CHANGELOG.md line ${i + 1}: "${line}" is not a release heading: ` +
          'write "## <version> - <YYYY-MM-DD>", e.g. "## 0.4.0 - 2026-12-05"',
      );
      section = null;
      malformed = true;
      continue;
    }
    malformed = false;
    const [, version, date] = m;
    if (!semver(version)) {
      problems.push(
        `CHANGELOG.md line ${i + 1}: version "${version}" is not MAJOR.MINOR.PATCH (digits)`,
      );
    }
    if (!isDate(date)) {
      problems.push(
        `CHANGELOG.md line ${i + 1}: ${version}'s date "${date}" is not a day written YYYY-MM-DD`,
      );
    }
    section = { version, date, line: i + 1, subsections: new Map() };
    if (semver(version)) sections.push(section);
  }
  return sections;
}

/**
 * Everything in `text` (a CHANGELOG.md) that disagrees with the release records or the rules of
 * this module's documentation, one message each, saying what to write instead. Empty when the
 * changelog is right.
 *
 * @example
 * ```ts
 * import { changelogFacts, changelogProblems } from './_changelog.ts';
 * const text = await Deno.readTextFile('CHANGELOG.md');
 * for (const problem of changelogProblems(text, await changelogFacts())) console.error(problem);
 * ```
 */
export function changelogProblems(text: string, facts: ChangelogFacts): string[] {
  const problems: string[] = [];
  const sections = parse(text, problems);
  if (sections.length === 0) {
    problems.push('CHANGELOG.md has no release section ("## <version> - <YYYY-MM-DD>")');
    return problems;
  }
  const recorded = new Map(facts.releases.map((r) => [r.version, r]));
  const newestRecorded = facts.releases.at(-1)?.version ?? null;

  // Newest first, each version once, dates never going up.
  for (let i = 1; i < sections.length; i++) {
    const [newer, older] = [sections[i - 1], sections[i]];
    if (compareVersions(newer.version, older.version) <= 0) {
      problems.push(
        `CHANGELOG.md line ${older.line}: ${older.version} follows ${newer.version}: sections go ` +
          'newest first (descending versions), each version once',
      );
    } else if (isDate(newer.date) && isDate(older.date) && newer.date < older.date) {
      problems.push(
        `CHANGELOG.md line ${newer.line}: ${newer.version} is dated ${newer.date}, before ` +
          `${older.version} (${older.date})`,
      );
    }
  }

  // Every record has its section, dated by its commit.
  const byVersion = new Map(sections.map((s) => [s.version, s]));
  for (const release of facts.releases) {
    const section = byVersion.get(release.version);
    if (!section) {
      problems.push(
        `CHANGELOG.md has no section for release ${release.version} ` +
          `(releases/${release.version}/manifest.json): add "## ${release.version} - ` +
          `${release.date ?? '<YYYY-MM-DD>'}"`,
      );
    } else if (release.date !== null && section.date !== release.date) {
      problems.push(
        `CHANGELOG.md line ${section.line}: ${release.version} is dated ${section.date}, but its ` +
          `recorded commit is of ${release.date} (UTC): date it ${release.date}`,
      );
    }
  }

  // At most one section without a record: the newest, the next version after the records.
  const unrecorded = sections.filter((s) => !recorded.has(s.version));
  for (const s of unrecorded) {
    if (s !== sections[0]) {
      problems.push(
        `CHANGELOG.md line ${s.line}: ${s.version} has no release record and is not the newest ` +
          'section: only the release being prepared, the newest, may be unrecorded',
      );
    } else if (newestRecorded !== null && compareVersions(s.version, newestRecorded) <= 0) {
      problems.push(
        `CHANGELOG.md line ${s.line}: ${s.version} has no release record and is not newer than ` +
          `the newest recorded release, ${newestRecorded}`,
      );
    }
  }
  const preparing = unrecorded.length > 0 && unrecorded[0] === sections[0] ? sections[0] : null;
  const versions = [['KIT_VERSION', facts.kitVersion], [
    "deno.json's version",
    facts.packageVersion,
  ]];
  for (const [name, version] of versions) {
    if (recorded.has(version) || (name !== 'KIT_VERSION' && version === facts.kitVersion)) continue;
    if (sections[0].version !== version) {
      problems.push(
        `${name} is ${version}, which has no release record yet: CHANGELOG.md's newest section ` +
          `must be ${version} (it is ${sections[0].version})`,
      );
    }
  }
  if (
    preparing && newestRecorded !== null &&
    compareVersions(preparing.version, newestRecorded) > 0 &&
    !isSuccessor(newestRecorded, preparing.version)
  ) {
    problems.push(
      `CHANGELOG.md line ${preparing.line}: ${preparing.version}, the release being prepared, is ` +
        `not the next after ${newestRecorded} (the next patch, minor or major version)`,
    );
  }
  if (!preparing && recorded.has(facts.kitVersion) && sections[0].version !== facts.kitVersion) {
    problems.push(
      `CHANGELOG.md line ${sections[0].line}: the newest section, ${sections[0].version}, is ` +
        `neither KIT_VERSION (${facts.kitVersion}) nor the release being prepared`,
    );
  }

  // Each section: known subsections, none empty, and how to upgrade from the one before.
  sections.forEach((section, i) => {
    const before = sections[i + 1]?.version ?? null;
    let upgrading: string | null = null;
    for (const [title, body] of section.subsections) {
      const from = /^Upgrading(?: from (\S+))?$/.exec(title);
      if (from) {
        upgrading = body;
        if (from[1] !== undefined && from[1] !== before) {
          problems.push(
            `CHANGELOG.md: ${section.version}'s "### ${title}" names ${from[1]}, but the ` +
              `release before it is ${before ?? 'none'}`,
          );
        }
      } else if (!SUBSECTIONS.includes(title)) {
        problems.push(
          `CHANGELOG.md: ${section.version} has "### ${title}": use ${SUBSECTIONS.join(', ')} ` +
            'or Upgrading',
        );
      }
      if (body === '') {
        problems.push(`CHANGELOG.md: ${section.version}'s "### ${title}" is empty`);
      }
    }
    if (upgrading === null) {
      problems.push(
        `CHANGELOG.md: ${section.version} has no "### Upgrading" subsection: say what a user ` +
          `does to upgrade from ${before ?? 'nothing (the first release: how to install it)'}`,
      );
    }
    // A release that adds SQL core migrations says to push them.
    const release = recorded.get(section.version);
    const mine = release ? release.migrations : facts.migrations;
    const previous = facts.releases.filter((r) => compareVersions(r.version, section.version) < 0)
      .at(-1);
    if (upgrading !== null && previous) {
      const added = mine.filter((m) => !previous.migrations.includes(m));
      if (added.length > 0 && !/db push|db:push/.test(upgrading)) {
        problems.push(
          `CHANGELOG.md: ${section.version} adds ${added.length} SQL core migration(s) ` +
            `(${added[0]}${added.length > 1 ? ', …' : ''}), but its Upgrading does not say to ` +
            'push them (supabase db push, or deno task db:push)',
        );
      }
    }
  });
  return problems;
}

/**
 * The facts of this checkout: the release records with their commits' dates, `KIT_VERSION`,
 * deno.json's version and the SQL core migrations. Needs git for the dates (a release whose
 * commit this checkout lacks gets null; tests/unit/tools/release_test.ts names that problem).
 *
 * @example
 * ```ts
 * import { changelogFacts } from './_changelog.ts';
 * console.log((await changelogFacts()).releases.map((r) => `${r.version} ${r.date}`));
 * ```
 */
export async function changelogFacts(kitDir: string = KIT_ROOT): Promise<ChangelogFacts> {
  const records = await releases(join(kitDir, 'releases'));
  const out: ChangelogFacts['releases'] = [];
  for (const r of records) {
    let date: string | null = null;
    if (/^[0-9a-f]{40}$/.test(r.commit ?? '')) {
      const shown = await git(['show', '-s', '--format=%ct', r.commit]);
      const seconds = Number(shown.out.trim());
      if (shown.ok && Number.isFinite(seconds) && seconds > 0) {
        date = new Date(seconds * 1000).toISOString().slice(0, 10);
      }
    }
    out.push({ version: r.version, date, migrations: r.migrations.map((m) => m.file) });
  }
  const config = JSON.parse(await Deno.readTextFile(join(kitDir, 'deno.json')));
  return {
    releases: out,
    kitVersion: KIT_VERSION,
    packageVersion: String(config.version),
    migrations: await coreMigrations(kitDir),
  };
}
