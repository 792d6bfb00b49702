/**
 * The design's citations and the Markdown links (tools/design_citations.ts, docs/design/README.md):
 * no citation of the old docs/ARCHITECTURE.md by section number is left outside released files;
 * every `docs/design/<page>.md#<anchor>` citation, in code or docs, names a page and a heading it
 * has; every relative link of every Markdown file of the kit reaches a file, and the anchor it
 * names. Then each rule is shown failing on a small kit that breaks it, and `docs:cite --fix`'s
 * rewrite is shown on each form a citation took. No database needed.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../cli/_project.ts';
import {
  citationProblems,
  designCitation,
  headingSlug,
  linkProblems,
  markdownAnchors,
  rewriteCitations,
  SECTIONS,
} from '../../tools/design_citations.ts';

Deno.test('no citation of docs/ARCHITECTURE.md by section number is left', async () => {
  const problems = await citationProblems();
  assert.deepEqual(problems, [], `run \`deno task docs:cite --fix\`:\n${problems.join('\n')}`);
});

Deno.test('every design citation and every relative Markdown link points to something', async () => {
  const problems = await linkProblems();
  assert.deepEqual(problems, [], `\n${problems.join('\n')}`);
});

Deno.test('every old section number has its page and heading, and the pointer page lists it', async () => {
  const pointer = await Deno.readTextFile(join(KIT_ROOT, 'docs/ARCHITECTURE.md'));
  const index = await Deno.readTextFile(join(KIT_ROOT, 'docs/design/README.md'));
  for (const [section, to] of Object.entries(SECTIONS)) {
    const text = await Deno.readTextFile(join(KIT_ROOT, `docs/design/${to.page}.md`));
    const anchors = markdownAnchors(text);
    if (to.anchor === null) {
      assert.equal(text.split('\n')[0], `# ${to.heading}`, `§${section} is the page ${to.page}`);
    } else assert.ok(anchors.has(to.anchor), `docs/design/${to.page}.md has #${to.anchor}`);
    assert.ok(pointer.includes(`| §${section} `), `docs/ARCHITECTURE.md lists §${section}`);
    assert.ok(index.includes(`](${to.page}.md)`), `docs/design/README.md lists ${to.page}.md`);
  }
  // Anchors are unique within a page: a repeated heading would make GitHub number its anchor.
  for await (const entry of Deno.readDir(join(KIT_ROOT, 'docs/design'))) {
    const text = await Deno.readTextFile(join(KIT_ROOT, 'docs/design', entry.name));
    const repeated = [...markdownAnchors(text)].filter((a) =>
      /-\d+$/.test(a) && !/\d-\d+$/.test(a)
    );
    assert.deepEqual(repeated, [], `docs/design/${entry.name} repeats a heading`);
  }
});

/** A kit with one release of one migration, and `files` (kit-relative path → text). */
async function kit(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: 'docs_links_' });
  const all: Record<string, string> = {
    'releases/0.1.0/manifest.json': JSON.stringify({
      version: '0.1.0',
      commit: '0'.repeat(40),
      migrations: [{ file: '20260101000000_core.sql', sha256: '0'.repeat(64) }],
    }),
    'docs/design/claim.md': '# The claim path\n\nText.\n\n## Read\n\n## Stall recovery\n',
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    await Deno.mkdir(join(dir, path, '..'), { recursive: true });
    await Deno.writeTextFile(join(dir, path), text);
  }
  return dir;
}

Deno.test('an old citation fails the check with its file and line; released files are skipped', async () => {
  const dir = await kit({
    'lib/a.ts':
      '/** Fine (docs/design/claim.md#read). */\n// The read (docs/ARCHITECTURE.md §5.1).\n',
    'supabase/schemas/b.sql': '-- one\n-- two, as the claim does (§5.6)\n',
    'lib/c.json': '{ "description": "(docs/ARCHITECTURE.md \\u00a716.3)" }\n',
    'supabase/migrations/20260101000000_core.sql': '-- released (docs/ARCHITECTURE.md §5)\n',
    'supabase/migrations/20260102000000_core.sql': '-- unreleased (docs/ARCHITECTURE.md §5)\n',
    'supabase/upgrades/0.1.0/before/x.sql': '-- released step (§5.4)\n',
    'releases/0.1.0/notes.md': '(§5.4)\n',
    'docs/ARCHITECTURE.md': '| §5 | [The claim path](design/claim.md) |\n',
  });
  try {
    assert.deepEqual(await citationProblems(dir), [
      'lib/a.ts:2: // The read (docs/ARCHITECTURE.md §5.1).',
      'lib/c.json:1: { "description": "(docs/ARCHITECTURE.md \\u00a716.3)" }',
      'supabase/migrations/20260102000000_core.sql:1: -- unreleased (docs/ARCHITECTURE.md §5)',
      'supabase/schemas/b.sql:2: -- two, as the claim does (§5.6)',
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('a citation or a link that points nowhere fails with its file, line and target', async () => {
  const dir = await kit({
    'lib/a.ts': [
      '// Fine: docs/design/claim.md, docs/design/claim.md#stall-recovery.',
      '// No such page: docs/design/nowhere.md#read.',
      '// No such heading: docs/design/claim.md#hiding.',
    ].join('\n'),
    'README.md': [
      '# Kit',
      '',
      '## Its part',
      '',
      'Fine: [read](docs/design/claim.md#read), [here](#its-part), [ext](https://example.com/x#y),',
      '[a folder](docs/design/), `[in code](missing.md)`.',
      '',
      'Broken: [gone](docs/gone.md) and [no anchor](docs/design/claim.md#planner-settings),',
      '[not here](#elsewhere).',
      '',
      '```',
      '[in a block](missing.md)',
      '```',
      '',
      '[ref]: docs/design/missing.md',
    ].join('\n'),
    'docs/design/README.md':
      '# Design\n\n[Read](claim.md#read) [up](../../../x.md) [home](../../README.md#kit)\n',
  });
  try {
    assert.deepEqual(
      (await linkProblems(dir)).sort(),
      [
        'README.md:15: docs/design/missing.md: no file docs/design/missing.md',
        'README.md:8: docs/design/claim.md#planner-settings: docs/design/claim.md has no heading ' +
        '#planner-settings',
        'README.md:8: docs/gone.md: no file docs/gone.md',
        'README.md:9: #elsewhere: README.md has no heading #elsewhere',
        'docs/design/README.md:3: ../../../x.md: outside the kit',
        'lib/a.ts:2: docs/design/nowhere.md#read: no file docs/design/nowhere.md',
        'lib/a.ts:3: docs/design/claim.md#hiding: docs/design/claim.md has no heading #hiding',
      ].sort(),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('docs:cite --fix rewrites each form a citation took, and leaves none behind', () => {
  const cases: [string, string, string][] = [
    ['a.ts', '// (docs/ARCHITECTURE.md §5.11)', '// (docs/design/waits.md)'],
    ['a.ts', '// ARCHITECTURE.md §5.6 and', '// docs/design/claim.md#stall-recovery and'],
    ['a.ts', '// ARCHITECTURE §14, the client', '// docs/design/client.md, the client'],
    ['a.sql', '-- a bare §5', '-- a bare docs/design/claim.md'],
    [
      'a.sql',
      '-- (docs/ARCHITECTURE.md §5.12, §5.13)',
      '-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency,\n' +
      '-- docs/design/flow-control.md#start-keys)',
    ],
    ['a.sql', '-- the claim (§5.2-§5.4)', '-- the claim (docs/design/claim.md)'],
    ['a.sql', '-- runs (§5.8-5.10)', '-- runs (docs/design/runs.md)'],
    [
      'a.sql',
      '-- across (§5.11–§6)',
      '-- across (docs/design/waits.md to docs/design/versions.md)',
    ],
    [
      'a.sql',
      '-- every tick (pg_cron, docs §6)',
      '-- every tick (pg_cron, docs/design/versions.md)',
    ],
    [
      'a.sql',
      '-- the heart of the claim (docs/ARCHITECTURE.md\n-- §5.2). Identity',
      '-- the heart of the claim\n-- (docs/design/claim.md#start_tasks). Identity',
    ],
    [
      'a.ts',
      ' * skips it; docs/ARCHITECTURE.md\n * §5.5). For',
      ' * skips it;\n * docs/design/claim.md#dispatch-and-completion). For',
    ],
    [
      'a.json',
      '"(docs/ARCHITECTURE.md \\u00a716.3)"',
      '"(docs/design/observability.md#counters-histograms-and-levels)"',
    ],
    [
      'README.md',
      'See [docs/ARCHITECTURE.md](docs/ARCHITECTURE.md) §5.12.',
      'See [Rate limits and keyed concurrency]' +
      '(docs/design/flow-control.md#rate-limits-and-keyed-concurrency).',
    ],
    [
      'supabase/schemas/README.md',
      '| `waits/` | steps (§5.11) |',
      '| `waits/` | steps ([Wait steps and signals](../../docs/design/waits.md)) |',
    ],
    [
      'docs/x.md',
      '`deno task doctor` (`§8.5`)',
      '`deno task doctor` (`docs/design/local-runs.md#doctor`)',
    ],
    [
      'docs/x.md',
      '```\nlib/  x (§12.1)\n```',
      '```\nlib/  x (docs/design/code-layout.md#the-sql-source-and-its-migrations)\n```',
    ],
  ];
  for (const [path, before, after] of cases) {
    const { text, count } = rewriteCitations(before, path);
    assert.equal(text, after, `${path}: ${JSON.stringify(before)}`);
    assert.ok(count > 0, before);
    assert.doesNotMatch(text, /§|\\u00a7|ARCHITECTURE/);
    assert.equal(rewriteCitations(text, path).count, 0, 'a rewritten text has nothing left to fix');
  }
});

Deno.test('a long comment line the rewrite lengthens is wrapped under its leader', () => {
  const before = '-- stale messages, a paused run (§14.1), what flow control holds (§5.12), the ' +
    'eligible tasks';
  const { text } = rewriteCitations(before, 'a.sql');
  for (const line of text.split('\n')) {
    assert.ok(line.length <= 100, line);
    assert.match(line, /^-- /);
  }
  assert.equal(
    text.split('\n').map((l) => l.slice(3)).join(' '),
    'stale messages, a paused run (docs/design/rerun.md), what flow control holds ' +
      '(docs/design/flow-control.md#rate-limits-and-keyed-concurrency), the eligible tasks',
  );
});

Deno.test('a section number no page has is refused by name', () => {
  assert.throws(() => rewriteCitations('-- (§5.99)', 'x.sql'), /x\.sql: §5\.99 is no section/);
  assert.throws(() => designCitation('19'), /§19 is no section/);
  assert.equal(designCitation('18.1'), 'docs/design/ingestion.md#signed-webhooks');
  assert.equal(
    headingSlug("Runs from the app's own rows: row triggers"),
    'runs-from-the-apps-own-rows-row-triggers',
  );
});
