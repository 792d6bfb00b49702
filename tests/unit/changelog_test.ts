/**
 * CHANGELOG.md against the release records (tools/_changelog.ts, docs/design/local-runs.md):
 * a dated section per recorded release, newest first, each saying how to upgrade from the one
 * before; at most one newer section, the release being prepared, which must be the kit's version
 * once that is raised. Then each rule is shown failing on a changelog that breaks it. No
 * database needed (git for the records' commit dates).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type ChangelogFacts, changelogFacts, changelogProblems } from '../../tools/_changelog.ts';
import { KIT_ROOT } from '../../cli/_project.ts';

Deno.test('CHANGELOG.md has a dated section per release, newest first, each saying how to upgrade', async () => {
  const text = await Deno.readTextFile(join(KIT_ROOT, 'CHANGELOG.md'));
  const facts = await changelogFacts();
  assert.ok(facts.releases.length > 0, 'the kit has release records');
  for (const release of facts.releases) {
    assert.ok(release.date, `release ${release.version}'s commit is in this checkout (its date)`);
  }
  const problems = changelogProblems(text, facts);
  assert.deepEqual(problems, [], `\n${problems.join('\n')}`);
});

/** Two releases on record, the kit at the second; the checkout has one more migration. */
const FACTS: ChangelogFacts = {
  releases: [
    { version: '0.1.0', date: '2026-12-01', migrations: ['1_a.sql'] },
    { version: '0.2.0', date: '2026-12-03', migrations: ['1_a.sql', '2_b.sql'] },
  ],
  kitVersion: '0.2.0',
  packageVersion: '0.2.0',
  migrations: ['1_a.sql', '2_b.sql', '3_c.sql'],
};

/** A section; `upgrading` null leaves the subsection out. */
function section(
  version: string,
  date: string,
  upgrading: string | null = 'Push the migrations with supabase db push.',
  title = 'Upgrading',
): string {
  return `## ${version} - ${date}\n\n### Added\n\n- Something.\n\n` +
    (upgrading === null ? '' : `### ${title}\n\n${upgrading}\n\n`);
}

const GOOD = '# Changelog\n\n' + section('0.3.0', '2026-12-05', 'Run supabase db push.') +
  section('0.2.0', '2026-12-03') + section('0.1.0', '2026-12-01', 'Install it.');

function problemsOf(text: string, facts: ChangelogFacts = FACTS): string[] {
  return changelogProblems(text, facts);
}

function assertOne(problems: string[], pattern: RegExp): void {
  assert.equal(problems.length, 1, `one problem expected:\n${problems.join('\n')}`);
  assert.match(problems[0], pattern);
}

Deno.test('a well-formed changelog with the release being prepared on top has no problem', () => {
  assert.deepEqual(problemsOf(GOOD), []);
  // The same without the release being prepared: the newest section is the kit's version.
  const released = '# Changelog\n\n' + section('0.2.0', '2026-12-03') +
    section('0.1.0', '2026-12-01', 'Install it.');
  assert.deepEqual(problemsOf(released), []);
  // "Upgrading from <the release before>" is accepted.
  const from = GOOD.replace('### Upgrading\n\nRun', '### Upgrading from 0.2.0\n\nRun');
  assert.deepEqual(problemsOf(from), []);
});

Deno.test('a recorded release without its section, or dated otherwise than its commit, fails', () => {
  const missing = '# Changelog\n\n' + section('0.3.0', '2026-12-05') +
    section('0.1.0', '2026-12-01', 'Install it.');
  assertOne(problemsOf(missing), /no section for release 0\.2\.0 .*add "## 0\.2\.0 - 2026-12-03"/);
  const misdated = GOOD.replace('## 0.2.0 - 2026-12-03', '## 0.2.0 - 2026-12-02');
  assertOne(
    problemsOf(misdated),
    /0\.2\.0 is dated 2026-12-02, but its recorded commit is of 2026-12-03/,
  );
  // A record whose commit is not known yet is only held to a real date.
  const undated = {
    ...FACTS,
    releases: FACTS.releases.map((r) => r.version === '0.2.0' ? { ...r, date: null } : r),
  };
  assert.deepEqual(problemsOf(misdated, undated), []);
  const notADay = GOOD.replace('## 0.2.0 - 2026-12-03', '## 0.2.0 - 2026-02-30');
  assert.ok(problemsOf(notADay, undated).some((p) => /"2026-02-30" is not a day/.test(p)));
});

Deno.test('sections out of order, or dated backwards, fail', () => {
  const swapped = '# Changelog\n\n' + section('0.3.0', '2026-12-05') +
    section('0.1.0', '2026-12-01', 'Install it.') + section('0.2.0', '2026-12-01');
  assert.ok(
    problemsOf(swapped).some((p) => /0\.2\.0 follows 0\.1\.0: sections go newest first/.test(p)),
  );
  const backwards = GOOD.replace('## 0.3.0 - 2026-12-05', '## 0.3.0 - 2026-12-02');
  assertOne(problemsOf(backwards), /0\.3\.0 is dated 2026-12-02, before 0\.2\.0 \(2026-12-03\)/);
  const malformed = GOOD.replace('## 0.1.0 - 2026-12-01', '## Version 0.1.0');
  assert.deepEqual(problemsOf(malformed).map((p) => p.replace(/:.*/, '')), [
    'CHANGELOG.md line 23',
    'CHANGELOG.md has no section for release 0.1.0 (releases/0.1.0/manifest.json)',
  ]);
  assert.match(problemsOf(malformed)[0], /"## Version 0\.1\.0" is not a release heading/);
});

Deno.test('a section without Upgrading, an empty or unknown subsection, or a wrong "from" fails', () => {
  const noUpgrading = GOOD.replace(
    section('0.2.0', '2026-12-03'),
    section('0.2.0', '2026-12-03', null),
  );
  assertOne(problemsOf(noUpgrading), /0\.2\.0 has no "### Upgrading" subsection: .* from 0\.1\.0/);
  const empty = GOOD.replace('Install it.', '');
  assertOne(problemsOf(empty), /0\.1\.0's "### Upgrading" is empty/);
  const unknown = GOOD.replace('### Added', '### Misc');
  assertOne(problemsOf(unknown), /0\.3\.0 has "### Misc"/);
  const wrongFrom = GOOD.replace('### Upgrading\n\nRun', '### Upgrading from 0.1.0\n\nRun');
  assertOne(problemsOf(wrongFrom), /names 0\.1\.0, but the release before it is 0\.2\.0/);
});

Deno.test('a release that adds migrations must say to push them', () => {
  const silent = GOOD.replace('Run supabase db push.', 'Reinstall the runtime.');
  assertOne(problemsOf(silent), /0\.3\.0 adds 1 SQL core migration\(s\) \(3_c\.sql\).*push them/);
  const recordedSilent = GOOD.replace(
    section('0.2.0', '2026-12-03'),
    section('0.2.0', '2026-12-03', 'Redeploy.'),
  );
  assertOne(problemsOf(recordedSilent), /0\.2\.0 adds 1 SQL core migration\(s\) \(2_b\.sql\)/);
  // The first release has nothing to upgrade from; a release adding no migration need not push.
  const noNewMigration = { ...FACTS, migrations: ['1_a.sql', '2_b.sql'] };
  assert.deepEqual(problemsOf(silent, noNewMigration), []);
});

Deno.test('only one unrecorded section, the newest, the next version, the kit version once raised', () => {
  const twoNew = '# Changelog\n\n' + section('0.4.0', '2026-12-06') + GOOD.slice(13);
  assert.ok(
    problemsOf(twoNew).some((p) => /0\.3\.0 has no release record and is not the newest/.test(p)),
  );
  const skipped = GOOD.replace('## 0.3.0', '## 0.5.0');
  assertOne(
    problemsOf(skipped),
    /0\.5\.0, the release being prepared, is not the next after 0\.2\.0/,
  );
  assert.deepEqual(problemsOf(GOOD.replace('## 0.3.0', '## 1.0.0')), [], 'a major is next too');
  assert.deepEqual(problemsOf(GOOD.replace('## 0.3.0', '## 0.2.1')), [], 'a patch is next too');
  const between = '# Changelog\n\n' + section('0.2.0', '2026-12-03') +
    section('0.1.5', '2026-12-02') + section('0.1.0', '2026-12-01', 'Install it.');
  assertOne(problemsOf(between), /0\.1\.5 has no release record and is not the newest/);

  // The kit's version raised to 0.3.0 (no record yet): the newest section must be 0.3.0.
  const raised = { ...FACTS, kitVersion: '0.3.0', packageVersion: '0.3.0' };
  assert.deepEqual(problemsOf(GOOD, raised), []);
  const released = '# Changelog\n\n' + section('0.2.0', '2026-12-03') +
    section('0.1.0', '2026-12-01', 'Install it.');
  assertOne(
    problemsOf(released, raised),
    /KIT_VERSION is 0\.3\.0, which has no release record yet: .*must be 0\.3\.0 \(it is 0\.2\.0\)/,
  );
  assertOne(
    problemsOf(GOOD.replace('## 0.3.0', '## 0.2.1'), raised),
    /must be 0\.3\.0 \(it is 0\.2\.1\)/,
  );
  // deno.json raised alone is held to the same.
  const packageOnly = { ...FACTS, packageVersion: '0.3.0' };
  assertOne(problemsOf(released, packageOnly), /deno\.json's version is 0\.3\.0/);
  // Nothing being prepared: the newest section is KIT_VERSION.
  const behind = { ...FACTS, kitVersion: '0.1.0', packageVersion: '0.1.0' };
  assertOne(
    problemsOf(released, behind),
    /the newest section, 0\.2\.0, is neither KIT_VERSION \(0\.1\.0\) nor the release being prepared/,
  );
});
