/**
 * The test tiers (docs/design/testing.md#test-tiers): every test file belongs to exactly one of
 * `unit` (no database, no network), `db` (a database, in process) and `e2e` (commands, projects,
 * browsers, upgrades, chaos), as `tests/tiers.ts` declares it file by file. This module finds the
 * test files, checks the declaration against them (a file in no tier, in two, a listed file that is
 * gone, a unit test outside `tests/unit/`, a browser test outside e2e), picks a tier's files for
 * `deno task test --tier …`, and reads the durations per file from a run's JUnit report.
 *
 * @module
 */
import { join, relative, resolve } from 'node:path';

/** The tiers, cheapest first: the order `.ci/run` runs them in. */
export const TIER_NAMES = ['unit', 'db', 'e2e'] as const;

/**
 * One tier's name.
 *
 * @example
 * ```ts
 * import type { Tier } from './_tiers.ts';
 * const tier: Tier = 'db';
 * ```
 */
export type Tier = typeof TIER_NAMES[number];

/**
 * What each tier holds, in the words the errors and `--help` use.
 *
 * @example
 * ```ts
 * import { TIER_RULES } from './_tiers.ts';
 * console.log(TIER_RULES.unit);
 * ```
 */
export const TIER_RULES: Readonly<Record<Tier, string>> = {
  unit: 'no database, no network, no server; the only processes it may start are the deno binary ' +
    "itself (deno info, fmt, eval) and git (reading the kit's history)",
  db: 'a database, in process (a file may start a worker or an operator command for one case)',
  e2e:
    'commands and projects end to end, the README, the npm package, browsers, upgrades, chaos, ' +
    'the demo, serve',
};

/** Where the declaration lives, as the errors name it. */
export const TIERS_FILE = 'tests/tiers.ts';

/** The folder every unit test lives in (and only unit tests). */
export const UNIT_FOLDER = 'tests/unit/';

/**
 * Whether a file name is one `deno test` collects from a folder (`*_test.ts`, `*.test.ts`,
 * `test.ts`, and the same for tsx, mts, js, mjs, jsx).
 *
 * @example
 * ```ts
 * import { isTestFile } from './_tiers.ts';
 * console.assert(isTestFile('tests/sql/prune_test.ts'));
 * console.assert(!isTestFile('tests/fixtures/slow_worker.ts'));
 * ```
 */
export function isTestFile(path: string): boolean {
  const name = path.split('/').pop() ?? '';
  return /^(?:.*[._])?test\.(?:ts|tsx|mts|js|mjs|jsx)$/.test(name);
}

/**
 * Every test file under `root/tests/`, as paths relative to `root` (`tests/sql/prune_test.ts`),
 * sorted.
 *
 * @example
 * ```ts
 * import { listTestFiles } from './_tiers.ts';
 * const files = await listTestFiles('.');
 * console.log(files.length);
 * ```
 */
export async function listTestFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(join(root, dir))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && isTestFile(path)) found.push(path);
    }
  };
  await walk('tests');
  return found.sort();
}

/**
 * What a test file imports that decides its tier on its own: a browser (playwright-core or
 * tests/_helpers/chromium.ts) is e2e, a test database (tests/_helpers/db.ts) is not unit.
 */
function contentProblems(file: string, tier: Tier, text: string): string[] {
  const problems: string[] = [];
  // Import statements only (top-level, at a line's start), not the words in a string.
  const imports = (what: RegExp) =>
    new RegExp(`^import\\b[^;]*?\\bfrom\\s+['"](?:${what.source})['"]`, 'm').test(text);
  if (tier !== 'e2e' && imports(/(?:npm:)?playwright-core|[./]*\/_helpers\/chromium\.ts/)) {
    problems.push(
      `${file} drives a browser but ${TIERS_FILE} puts it in tier ${tier}: move it to e2e`,
    );
  }
  if (tier === 'unit' && imports(/[./]*\/_helpers\/db\.ts/)) {
    problems.push(
      `${file} opens a test database (tests/_helpers/db.ts) but ${TIERS_FILE} puts it in tier ` +
        `unit: move it to db (and out of tests/unit/)`,
    );
  }
  return problems;
}

/**
 * Checks a tier declaration against the test files: each file in exactly one tier, no listed
 * file missing or listed twice, unit tests exactly the files under `tests/unit/`, and (with
 * `read`) no browser test outside e2e and no test database in unit. Returns the problems, each
 * naming the file and what to do; none means every file has its tier.
 *
 * @example
 * ```ts
 * import { tierProblems } from './_tiers.ts';
 * const problems = await tierProblems(
 *   ['tests/unit/a_test.ts', 'tests/sql/b_test.ts'],
 *   { unit: ['tests/unit/a_test.ts'], db: [], e2e: [] },
 * );
 * console.assert(problems[0].startsWith('tests/sql/b_test.ts is in no test tier'));
 * ```
 */
export async function tierProblems(
  files: readonly string[],
  tiers: Readonly<Record<Tier, readonly string[]>>,
  read?: (file: string) => Promise<string>,
): Promise<string[]> {
  const problems: string[] = [];
  const tierOf = new Map<string, Tier[]>();
  for (const tier of TIER_NAMES) {
    const seen = new Set<string>();
    for (const file of tiers[tier]) {
      if (seen.has(file)) problems.push(`${TIERS_FILE} lists ${file} twice in tier ${tier}`);
      seen.add(file);
      tierOf.set(file, [...(tierOf.get(file) ?? []), tier]);
    }
  }
  const present = new Set(files);
  for (const [file, list] of tierOf) {
    if (!present.has(file)) {
      problems.push(
        `${TIERS_FILE} lists ${file} (tier ${list[0]}), which is not a test file under tests/: ` +
          'remove it or correct the path',
      );
    }
  }
  for (const file of files) {
    const list = [...new Set(tierOf.get(file) ?? [])];
    if (list.length === 0) {
      problems.push(
        `${file} is in no test tier: add it to one of the lists in ${TIERS_FILE} — ` +
          TIER_NAMES.map((t) => `${t} (${TIER_RULES[t]})`).join('; '),
      );
      continue;
    }
    if (list.length > 1) {
      problems.push(
        `${file} is in ${list.length} tiers (${list.join(', ')}) in ${TIERS_FILE}: keep it in one`,
      );
      continue;
    }
    const tier = list[0];
    const inUnitFolder = file.startsWith(UNIT_FOLDER);
    if (tier === 'unit' && !inUnitFolder) {
      problems.push(
        `${file} is in tier unit but outside ${UNIT_FOLDER}: move it there, or to the tier it needs`,
      );
    } else if (tier !== 'unit' && inUnitFolder) {
      problems.push(
        `${file} is under ${UNIT_FOLDER} but in tier ${tier}: ${UNIT_FOLDER} holds the unit tier only`,
      );
    }
    if (read) problems.push(...contentProblems(file, tier, await read(file)));
  }
  return problems;
}

/**
 * The tier's files among what a `deno task test` command line names: the arguments that are
 * paths (with a `/` or ending in `.ts`, relative to `cwd`; the rest are `deno test` options and
 * pass through) select the tier's files at or under them, none selects the whole tier. The files
 * come back relative to `root`, the kit (the declaration's paths are), in the declaration's order,
 * which is the order `deno test --parallel` starts them in. A named file of another tier,
 * or a path holding none of the tier's files, is an error naming it.
 *
 * @example
 * ```ts
 * import { selectTier } from './_tiers.ts';
 * const tiers = { unit: ['tests/unit/a_test.ts'], db: ['tests/sql/b_test.ts'], e2e: [] };
 * const { files } = selectTier('db', ['--fail-fast'], tiers, '/kit');
 * console.assert(files[0] === 'tests/sql/b_test.ts');
 * ```
 */
export function selectTier(
  tier: Tier,
  args: readonly string[],
  tiers: Readonly<Record<Tier, readonly string[]>>,
  cwd: string,
  root: string = cwd,
): { files: string[]; options: string[] } {
  const isPath = (a: string) => !a.startsWith('-') && (a.includes('/') || a.endsWith('.ts'));
  const options = args.filter((a) => !isPath(a));
  const paths = args.filter(isPath);
  const mine = tiers[tier];
  if (paths.length === 0) return { files: [...mine], options };
  const files = new Set<string>();
  for (const p of paths) {
    const target = relative(root, resolve(cwd, p)).replace(/\/$/, '');
    const under = mine.filter((f) => f === target || f.startsWith(`${target}/`) || target === '');
    if (under.length === 0) {
      const other = TIER_NAMES.find((t) => tiers[t].includes(target));
      throw new Error(
        other
          ? `${p} is in tier ${other}, not ${tier} (${TIERS_FILE}): run it with --tier ${other}`
          : `${p} holds no test file of tier ${tier} (${TIERS_FILE})`,
      );
    }
    under.forEach((f) => files.add(f));
  }
  return { files: mine.filter((f) => files.has(f)), options };
}

/**
 * Splits `--tier NAME` (or `--tier=NAME`) off a `deno task test` command line. An unknown tier
 * or a missing name is an error naming it and the tiers.
 *
 * @example
 * ```ts
 * import { parseTierArgs } from './_tiers.ts';
 * const { tier, rest } = parseTierArgs(['--tier', 'unit', 'tests/unit/dsl/']);
 * console.assert(tier === 'unit' && rest[0] === 'tests/unit/dsl/');
 * ```
 */
export function parseTierArgs(
  args: readonly string[],
): { tier?: Tier; pgmqDependent: boolean; rest: string[] } {
  const rest: string[] = [];
  let tier: string | undefined;
  let pgmqDependent = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--tier' || a.startsWith('--tier=')) {
      const value = a === '--tier' ? args[++i] : a.slice('--tier='.length);
      if (tier !== undefined) throw new Error(`--tier is given twice: run one tier at a time`);
      tier = value ?? '';
    } else if (a === PGMQ_DEPENDENT_FLAG) {
      pgmqDependent = true;
    } else {
      rest.push(a);
    }
  }
  if (tier !== undefined && !(TIER_NAMES as readonly string[]).includes(tier)) {
    throw new Error(`--tier "${tier}" is not a tier: use one of ${TIER_NAMES.join(', ')}`);
  }
  if (pgmqDependent && tier !== 'db') {
    throw new Error(
      `${PGMQ_DEPENDENT_FLAG} selects among the db tier's files: use it with --tier db` +
        (tier ? ` (not --tier ${tier})` : ''),
    );
  }
  return { tier: tier as Tier | undefined, pgmqDependent, rest };
}

/** The `deno task test` flag that keeps only the PGMQ-dependent files of the db tier. */
export const PGMQ_DEPENDENT_FLAG = '--pgmq-dependent';

/**
 * What makes a db file PGMQ-dependent on its own: it names the kit's PGMQ setup (`ensurePgmq`,
 * `pgmqProvider`, `pgmqModeFromEnv`, `PGMQ_MODE`) or PGMQ's queue management (`pgmq.create…(`,
 * `pgmq.drop_queue(`, `pgmq.purge_queue(`). CI's two kinds are the same PGMQ-compatible layer,
 * loaded as plain SQL or packaged as the extension `pgmq` (docs/design/testing.md#both-kinds-of-pgmq),
 * so only how PGMQ is provided and what happens to its own objects can differ between them: a file
 * that sends, reads, archives or counts messages runs the same statements on either.
 */
const NAMES_PGMQ =
  /\bpgmq\.(?:create[a-z_]*|drop_queue|purge_queue)\b|\bensurePgmq\b|\bpgmqProvider\b|\bpgmqModeFromEnv\b|\bPGMQ_MODE\b/;

/** Whether a test file opens a database of the test server (not only the test engine's PGlite). */
const OPENS_SERVER_DATABASE = /^import\b[^;]*?\bfrom\s+['"][./]*\/_helpers\/db\.ts['"]/m;

/**
 * Checks the declaration of the PGMQ-dependent db files (`PGMQ_DEPENDENT` of tests/tiers.ts, the
 * files CI runs on the PGMQ extension beside the whole db tier on the compatible layer): each
 * listed once, each in the db tier, and every db file that opens a server database and names the
 * kit's PGMQ setup or PGMQ's queue management listed. Returns the problems, each naming the file
 * and what to do.
 *
 * @example
 * ```ts
 * import { pgmqDependentProblems } from './_tiers.ts';
 * const tiers = { unit: [], db: ['tests/sql/a_test.ts'], e2e: [] };
 * const problems = await pgmqDependentProblems(tiers, [], async () =>
 *   "import { createTestDatabase } from '../_helpers/db.ts';\nawait sql`select pgmq.create('q')`;"
 * );
 * console.assert(problems[0].startsWith('tests/sql/a_test.ts names PGMQ'));
 * ```
 */
export async function pgmqDependentProblems(
  tiers: Readonly<Record<Tier, readonly string[]>>,
  dependent: readonly string[],
  read: (file: string) => Promise<string>,
): Promise<string[]> {
  const problems: string[] = [];
  const listed = new Set<string>();
  for (const file of dependent) {
    if (listed.has(file)) problems.push(`${TIERS_FILE} lists ${file} twice in PGMQ_DEPENDENT`);
    listed.add(file);
    if (!tiers.db.includes(file)) {
      problems.push(
        `${TIERS_FILE} lists ${file} in PGMQ_DEPENDENT but it is not in the db tier: ` +
          'PGMQ_DEPENDENT selects among the db files (e2e runs on the extension anyway)',
      );
    }
  }
  for (const file of tiers.db) {
    if (listed.has(file)) continue;
    const text = await read(file);
    const named = text.match(NAMES_PGMQ);
    if (named && OPENS_SERVER_DATABASE.test(text)) {
      const line = text.slice(0, named.index).split('\n').length;
      problems.push(
        `${file} names PGMQ (${named[0]} at line ${line}) and opens a test server database, ` +
          `but is not in PGMQ_DEPENDENT of ${TIERS_FILE}: add it there (CI runs those files on ` +
          'the PGMQ extension too)',
      );
    }
  }
  return problems;
}

/**
 * Seconds per test file from a `deno test --junit-path` report: the sum of the file's test
 * durations (its steps are inside their test's time and not added again), slowest first.
 *
 * @example
 * ```ts
 * import { fileDurations } from './_tiers.ts';
 * const xml = '<testsuite name="./tests/a_test.ts">' +
 *   '<testcase name="t" classname="./tests/a_test.ts" time="1.5"></testcase>' +
 *   '<testcase name="t &gt; s" classname="./tests/a_test.ts" time="1.0"></testcase></testsuite>';
 * console.assert(fileDurations(xml)[0].seconds === 1.5);
 * ```
 */
export function fileDurations(junit: string): { file: string; seconds: number }[] {
  const byFile = new Map<string, { name: string; seconds: number }[]>();
  for (const m of junit.matchAll(/<testcase\s([^>]*)>/g)) {
    const attr = (key: string) => m[1].match(new RegExp(`\\b${key}="([^"]*)"`))?.[1];
    const file = attr('classname');
    const seconds = Number(attr('time'));
    if (!file || !Number.isFinite(seconds)) continue;
    const name = (attr('name') ?? '').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
    byFile.set(file, [...(byFile.get(file) ?? []), { name, seconds }]);
  }
  const out: { file: string; seconds: number }[] = [];
  for (const [file, cases] of byFile) {
    const names = new Set(cases.map((c) => c.name));
    // A step is named "<its test> > <step>": counted in its test's time already.
    const isStep = (name: string) =>
      [...names].some((other) => other !== name && name.startsWith(`${other} > `));
    const seconds = cases.filter((c) => !isStep(c.name)).reduce((s, c) => s + c.seconds, 0);
    out.push({ file: file.replace(/^\.\//, ''), seconds });
  }
  return out.sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file));
}

/**
 * The permissions a tier's `deno test` runs with: everything for db and e2e; for unit, files,
 * environment and system information, the deno binary itself and git as the only processes, and
 * the network denied (a unit test that reaches for a database or a server fails at once).
 *
 * @example
 * ```ts
 * import { tierPermissions } from './_tiers.ts';
 * console.assert(tierPermissions('unit', Deno.execPath()).includes('--deny-net'));
 * ```
 */
export function tierPermissions(tier: Tier | undefined, deno: string): string[] {
  if (tier !== 'unit') return ['-A'];
  return [
    '--allow-read',
    '--allow-write',
    '--allow-env',
    '--allow-sys',
    `--allow-run=${deno},git`,
    '--deny-net',
  ];
}
