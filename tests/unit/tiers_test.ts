/**
 * The test tiers (tests/tiers.ts, tools/_tiers.ts, docs/design/testing.md#test-tiers): every test
 * file
 * of the tree is in exactly one tier, and the checks name the file and where to declare it when
 * one is not; `--tier` picks a tier's files and refuses another tier's; a JUnit report gives the
 * slowest files without counting steps twice.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../cli/_project.ts';
import {
  fileDurations,
  isTestFile,
  listTestFiles,
  parseTierArgs,
  pgmqDependentProblems,
  selectTier,
  tierPermissions,
  tierProblems,
} from '../../tools/_tiers.ts';
import { PGMQ_DEPENDENT, TIERS } from '../tiers.ts';

Deno.test('every test file of the tree is in exactly one tier, as its folder and imports allow', async () => {
  const files = await listTestFiles(KIT_ROOT);
  assert.ok(files.includes('tests/unit/tiers_test.ts'), 'this file is found');
  assert.ok(files.length > 90, `${files.length} test files found`);
  const problems = await tierProblems(
    files,
    TIERS,
    (file) => Deno.readTextFile(join(KIT_ROOT, file)),
  );
  assert.deepEqual(problems, []);
});

Deno.test('a file in no tier, in two, listed twice or gone is named with what to do', async () => {
  const files = ['tests/unit/a_test.ts', 'tests/sql/b_test.ts', 'tests/sql/c_test.ts'];
  const problems = await tierProblems(files, {
    unit: ['tests/unit/a_test.ts'],
    db: ['tests/sql/c_test.ts', 'tests/sql/gone_test.ts', 'tests/sql/gone_test.ts'],
    e2e: ['tests/sql/c_test.ts'],
  });
  assert.equal(problems.length, 4, problems.join('\n'));
  assert.match(problems[0], /^tests\/tiers\.ts lists tests\/sql\/gone_test\.ts twice in tier db$/);
  assert.match(
    problems[1],
    /^tests\/tiers\.ts lists tests\/sql\/gone_test\.ts \(tier db\), which is not a test file under tests\/: remove it or correct the path$/,
  );
  assert.match(
    problems[2],
    /^tests\/sql\/b_test\.ts is in no test tier: add it to one of the lists in tests\/tiers\.ts — unit \(no database.*; db \(a database, in process.*; e2e \(/,
  );
  assert.match(
    problems[3],
    /^tests\/sql\/c_test\.ts is in 2 tiers \(db, e2e\) in tests\/tiers\.ts: keep it in one$/,
  );
});

Deno.test('tests/unit/ holds the unit tier and only it; browsers are e2e; unit opens no database', async () => {
  const texts: Record<string, string> = {
    'tests/unit/ok_test.ts': "import { flow } from '../../lib/mod.ts';",
    'tests/unit/db_in_unit_test.ts': "import { createTestDatabase } from '../_helpers/db.ts';",
    'tests/unit/listed_db_test.ts': '',
    'tests/sql/listed_unit_test.ts': '',
    'tests/ops/page_browser_test.ts': "import { chromium } from 'playwright-core';",
    'tests/ops/helper_browser_test.ts': "import { startChromium } from '../_helpers/chromium.ts';",
    'tests/ops/browser_e2e_test.ts': "import { chromium } from 'playwright-core';",
  };
  const problems = await tierProblems(
    Object.keys(texts).sort(),
    {
      unit: [
        'tests/unit/ok_test.ts',
        'tests/unit/db_in_unit_test.ts',
        'tests/sql/listed_unit_test.ts',
      ],
      db: [
        'tests/unit/listed_db_test.ts',
        'tests/ops/page_browser_test.ts',
        'tests/ops/helper_browser_test.ts',
      ],
      e2e: ['tests/ops/browser_e2e_test.ts'],
    },
    (file) => Promise.resolve(texts[file]),
  );
  assert.deepEqual(problems, [
    'tests/ops/helper_browser_test.ts drives a browser but tests/tiers.ts puts it in tier db: move it to e2e',
    'tests/ops/page_browser_test.ts drives a browser but tests/tiers.ts puts it in tier db: move it to e2e',
    'tests/sql/listed_unit_test.ts is in tier unit but outside tests/unit/: move it there, or to the tier it needs',
    'tests/unit/db_in_unit_test.ts opens a test database (tests/_helpers/db.ts) but tests/tiers.ts puts it in tier unit: move it to db (and out of tests/unit/)',
    'tests/unit/listed_db_test.ts is under tests/unit/ but in tier db: tests/unit/ holds the unit tier only',
  ]);
});

Deno.test('deno test collects the names the tiers check', () => {
  for (const name of ['a_test.ts', 'a.test.ts', 'test.ts', 'x/a_test.mjs', 'a_test.tsx']) {
    assert.ok(isTestFile(name), name);
  }
  for (const name of ['a.ts', 'atest.ts', 'a_test.ts.bak', 'fixtures/slow_worker.ts']) {
    assert.ok(!isTestFile(name), name);
  }
});

Deno.test('--tier picks its files under the named paths, in its order; another tier or an empty path is refused', () => {
  const tiers = {
    unit: ['tests/unit/a_test.ts'],
    // Slowest first: the order a run starts them in.
    db: ['tests/worker/d_test.ts', 'tests/sql/b_test.ts', 'tests/sql/c_test.ts'],
    e2e: ['tests/e2e/e_test.ts'],
  };
  assert.deepEqual(selectTier('db', ['--fail-fast'], tiers, '/kit'), {
    files: ['tests/worker/d_test.ts', 'tests/sql/b_test.ts', 'tests/sql/c_test.ts'],
    options: ['--fail-fast'],
  });
  assert.deepEqual(
    selectTier('db', ['--filter', 'x', 'tests/sql/', '/kit/tests/worker/d_test.ts'], tiers, '/kit'),
    {
      files: ['tests/worker/d_test.ts', 'tests/sql/b_test.ts', 'tests/sql/c_test.ts'],
      options: ['--filter', 'x'],
    },
    'in the declaration order, whatever the order of the paths',
  );
  assert.deepEqual(selectTier('db', ['tests/sql/c_test.ts'], tiers, '/kit').files, [
    'tests/sql/c_test.ts',
  ]);
  assert.deepEqual(selectTier('db', ['tests/'], tiers, '/kit').files.length, 3);
  assert.deepEqual(
    selectTier('e2e', ['../e2e/e_test.ts'], tiers, '/kit/tests/sql', '/kit'),
    { files: ['tests/e2e/e_test.ts'], options: [] },
    'paths are relative to where the command runs, files to the kit',
  );
  assert.throws(
    () => selectTier('unit', ['tests/sql/b_test.ts'], tiers, '/kit'),
    /^Error: tests\/sql\/b_test\.ts is in tier db, not unit \(tests\/tiers\.ts\): run it with --tier db$/,
  );
  assert.throws(
    () => selectTier('e2e', ['tests/sql/'], tiers, '/kit'),
    /^Error: tests\/sql\/ holds no test file of tier e2e \(tests\/tiers\.ts\)$/,
  );
  assert.throws(
    () => selectTier('db', ['tests/sq'], tiers, '/kit'),
    /tests\/sq holds no test file of tier db/,
    'a prefix of a folder name is not the folder',
  );
});

Deno.test("every db file that names PGMQ's setup or queue management and opens a server database is PGMQ-dependent", async () => {
  const read = (file: string) => Deno.readTextFile(join(KIT_ROOT, file));
  assert.deepEqual(await pgmqDependentProblems(TIERS, PGMQ_DEPENDENT, read), []);
  // The PGMQ contract, the kit's PGMQ setup (hardening: the layer's own loading path), queue churn.
  for (
    const core of [
      'tests/sql/pgmq_contract_test.ts',
      'tests/sql/hardening_test.ts',
      'tests/sql/source_test.ts',
      'tests/sql/queue_churn_test.ts',
    ]
  ) {
    assert.ok(PGMQ_DEPENDENT.includes(core), `${core} runs on the extension`);
  }
  // Kept in the db tier's order, the order runs start files in.
  const order = PGMQ_DEPENDENT.map((f) => TIERS.db.indexOf(f));
  assert.deepEqual(order, [...order].sort((a, b) => a - b), 'PGMQ_DEPENDENT in the db order');
});

Deno.test('a PGMQ-dependent file missing, listed twice or outside db is named with what to do', async () => {
  const tiers = {
    unit: [],
    db: [
      'tests/sql/reads_test.ts',
      'tests/sql/queues_test.ts',
      'tests/sql/setup_test.ts',
      'tests/sql/engine_only_test.ts',
      'tests/sql/plain_test.ts',
    ],
    e2e: ['tests/e2e/x_test.ts'],
  };
  const db = "import { createTestDatabase } from '../_helpers/db.ts';\n\n";
  const texts: Record<string, string> = {
    // Messages only: the same statements on either kind.
    'tests/sql/reads_test.ts': db + "await sql`select msg_id from pgmq.read('q', 30, 1)`;\n" +
      'await sql`select count(*) from pgmq.q_q`;',
    'tests/sql/queues_test.ts': db + "await sql`select pgmq.drop_queue('q')`;",
    'tests/sql/setup_test.ts': db + "await ensurePgmq(url, 'auto');",
    // PGlite only (the test engine): which PGMQ the server has does not matter.
    'tests/sql/engine_only_test.ts': "await engine.sql`select pgmq.create('q')`;",
    'tests/sql/plain_test.ts': "import { createTestDatabase } from '../_helpers/db.ts';",
  };
  const read = (file: string) => Promise.resolve(texts[file] ?? '');
  assert.deepEqual(await pgmqDependentProblems(tiers, [], read), [
    'tests/sql/queues_test.ts names PGMQ (pgmq.drop_queue at line 3) and opens a test server ' +
    'database, but is not in PGMQ_DEPENDENT of tests/tiers.ts: add it there (CI runs those files ' +
    'on the PGMQ extension too)',
    'tests/sql/setup_test.ts names PGMQ (ensurePgmq at line 3) and opens a test server database, ' +
    'but is not in PGMQ_DEPENDENT of tests/tiers.ts: add it there (CI runs those files on the ' +
    'PGMQ extension too)',
  ]);
  assert.deepEqual(
    await pgmqDependentProblems(
      tiers,
      [
        'tests/sql/queues_test.ts',
        'tests/sql/setup_test.ts',
        'tests/sql/reads_test.ts',
        'tests/sql/reads_test.ts',
        'tests/e2e/x_test.ts',
      ],
      read,
    ),
    [
      'tests/tiers.ts lists tests/sql/reads_test.ts twice in PGMQ_DEPENDENT',
      'tests/tiers.ts lists tests/e2e/x_test.ts in PGMQ_DEPENDENT but it is not in the db tier: ' +
      'PGMQ_DEPENDENT selects among the db files (e2e runs on the extension anyway)',
    ],
  );
});

Deno.test('--tier NAME and --tier=NAME; an unknown, missing or second tier is refused', () => {
  assert.deepEqual(parseTierArgs(['--tier', 'unit', 'tests/unit/']), {
    tier: 'unit',
    pgmqDependent: false,
    rest: ['tests/unit/'],
  });
  assert.deepEqual(parseTierArgs(['--fail-fast', '--tier=e2e']), {
    tier: 'e2e',
    pgmqDependent: false,
    rest: ['--fail-fast'],
  });
  assert.deepEqual(parseTierArgs(['tests/']), {
    tier: undefined,
    pgmqDependent: false,
    rest: ['tests/'],
  });
  assert.deepEqual(parseTierArgs(['--pgmq-dependent', '--tier', 'db']), {
    tier: 'db',
    pgmqDependent: true,
    rest: [],
  });
  assert.throws(
    () => parseTierArgs(['--tier', 'e2e', '--pgmq-dependent']),
    /^Error: --pgmq-dependent selects among the db tier's files: use it with --tier db \(not --tier e2e\)$/,
  );
  assert.throws(() => parseTierArgs(['--pgmq-dependent']), /use it with --tier db$/);
  assert.throws(
    () => parseTierArgs(['--tier', 'integration']),
    /^Error: --tier "integration" is not a tier: use one of unit, db, e2e$/,
  );
  assert.throws(() => parseTierArgs(['--tier']), /--tier "" is not a tier/);
  assert.throws(
    () => parseTierArgs(['--tier', 'unit', '--tier', 'db']),
    /--tier is given twice: run one tier at a time/,
  );
});

Deno.test('the unit tier runs with the network denied and only deno and git as processes', () => {
  assert.deepEqual(tierPermissions('unit', '/bin/deno'), [
    '--allow-read',
    '--allow-write',
    '--allow-env',
    '--allow-sys',
    '--allow-run=/bin/deno,git',
    '--deny-net',
  ]);
  assert.deepEqual(tierPermissions('db', '/bin/deno'), ['-A']);
  assert.deepEqual(tierPermissions(undefined, '/bin/deno'), ['-A']);
});

Deno.test('the slowest files from a JUnit report: tests summed, steps not counted twice', () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="deno test" tests="5" failures="0" errors="0" time="9.000">
    <testsuite name="./tests/a_test.ts" tests="3" disabled="0" errors="0" failures="0">
        <testcase name="first" classname="./tests/a_test.ts" time="1.250" line="1" col="6">
        </testcase>
        <testcase name="with steps" classname="./tests/a_test.ts" time="2.000" line="2" col="6">
        </testcase>
        <testcase name="with steps &gt; one" classname="./tests/a_test.ts" time="1.500" line="3" col="6">
        </testcase>
        <testcase name="a &gt; b" classname="./tests/a_test.ts" time="0.500" line="9" col="6">
        </testcase>
    </testsuite>
    <testsuite name="./tests/b_test.ts" tests="1" disabled="0" errors="0" failures="1">
        <testcase name="slow" classname="./tests/b_test.ts" time="4.000" line="2" col="6">
            <failure message="Uncaught Error">boom</failure>
        </testcase>
    </testsuite>
</testsuites>`;
  assert.deepEqual(fileDurations(xml), [
    { file: 'tests/b_test.ts', seconds: 4 },
    { file: 'tests/a_test.ts', seconds: 3.75 },
  ]);
  assert.deepEqual(fileDurations(''), []);
});
