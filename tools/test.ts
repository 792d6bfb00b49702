/**
 * `deno task test [--tier unit|db|e2e] [deno test args…]`: runs the suite against real PostgreSQL.
 *
 * With `DATABASE_URL` set, that server is used; otherwise a throwaway cluster is
 * started from the local server binaries, which are installed first when they are missing
 * and this runs as root with apt-get (tools/_provision.ts), and so is Chromium when the run
 * includes the dashboard's browser test. A template database is migrated once
 * (PGMQ per `PGMQ_MODE`, then `supabase db push`), every test file clones it, and
 * the cluster and its directory are always removed — on success, on failure and
 * on SIGINT/SIGTERM. pg_cron runs its jobs from one database per server
 * (`cron.database_name`): the cluster names `switchyard_cron`, a clone of the migrated template
 * with pg_cron created in it, which the pg_cron tests take in turn (`withCronDatabase` in
 * tests/_helpers/db.ts) instead of a cluster each; on a DATABASE_URL server, an earlier run's
 * `switchyard_cron` is migrated again in place (pg_cron stops for good when it is dropped).
 *
 * `--tier` runs one tier of tests/tiers.ts (tools/_tiers.ts) after checking that every test
 * file has exactly one tier: `unit` without any database or server and with the network
 * denied, `db` and `e2e` as above. Every run ends with its slowest files.
 *
 * @module
 */
import { join, relative } from 'node:path';
import postgres from 'postgres';
import { type Cluster, DEFAULT_PG_BIN, startCluster } from './_cluster.ts';
import { cliPurgeDelay, migrate } from '../lib/sql/migrate.ts';
import { helpOption } from '../cli/_help.ts';
import { KIT_ROOT } from '../cli/_project.ts';
import {
  fileDurations,
  listTestFiles,
  parseTierArgs,
  PGMQ_DEPENDENT_FLAG,
  pgmqDependentProblems,
  selectTier,
  type Tier,
  TIER_NAMES,
  TIER_RULES,
  tierPermissions,
  tierProblems,
} from './_tiers.ts';
import { PGMQ_DEPENDENT, TIERS } from '../tests/tiers.ts';
import { CRON_LOCK } from '../tests/_helpers/db.ts';
import {
  DEFAULT_CHROMIUM,
  ensureChromium,
  ensurePostgresBinaries,
  runsBrowserTest,
} from './_provision.ts';

helpOption(`usage: deno task test [--tier unit|db|e2e] [deno test arguments…]

Runs the suites (default tests/) against a throwaway PostgreSQL 15 cluster, removed afterwards,
or against DATABASE_URL when it is set. Missing server binaries are installed with apt-get
(postgresql-15, postgresql-15-cron, postgresql-15-plpgsql-check) when run as root; otherwise it says what to install.
So is Debian's chromium when the run includes the dashboard's browser test (CHROMIUM=/path/to/binary
uses another one; it is never installed). The run ends with its five slowest files.

  deno task test                                every suite (tests/, its folders included)
  deno task test tests/e2e/install_test.ts  one file
  deno task test --tier unit                    one tier of tests/tiers.ts (see below)
  deno task test --tier db tests/sql/           the tier's files under a folder
  deno task test --tier db --pgmq-dependent     the db files that set PGMQ up or make and drop
                                                its queues (CI's extension run)
  deno task test --filter upgrade tests/        deno test options pass through
  PG_BIN=/path/to/bin deno task test            other server binaries

Tiers (each test file is in exactly one; a --tier run first checks that every file is):
${TIER_NAMES.map((t) => `  ${t.padEnd(5)} ${TIER_RULES[t]}`).join('\n')}
  The unit tier starts no database (and needs no server binaries) and runs with the network denied.`);

const log = (line: string) => console.error(`[test] ${line}`);

// Whatever this run starts that runs the Supabase CLI (the template's push, the tests' own pushes,
// the README's commands) gives it the allocator setting `migrate()` gives it (cliPurgeDelay).
Deno.env.set('MIMALLOC_PURGE_DELAY', cliPurgeDelay());

let cluster: Cluster | undefined;
let adminUrl = Deno.env.get('DATABASE_URL') ?? '';
const template = `switchyard_template_${crypto.randomUUID().slice(0, 8)}`;
let templateCreated = false;
let child: Deno.ChildProcess | undefined;
let cleaning: Promise<void> | undefined;
let junit: string | undefined = undefined; // the run's JUnit report, removed with the cluster
let npmPackageDir: string | undefined = undefined; // the run's npm package (below), removed with the cluster

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    if (templateCreated && !cluster && adminUrl) {
      const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(
          `update pg_database set datistemplate = false where datname = '${template}'`,
        );
        await sql.unsafe(`drop database if exists "${template}" with (force)`);
      } catch (e) {
        log(`could not drop ${template}: ${(e as Error).message}`);
      } finally {
        await sql.end({ timeout: 1 });
      }
    }
    if (cluster) {
      await cluster.stop();
      log(`stopped PostgreSQL and removed ${cluster.dir}`);
    }
    if (junit) await Deno.remove(junit).catch(() => {});
    if (npmPackageDir) await Deno.remove(npmPackageDir, { recursive: true }).catch(() => {});
  })();
  return cleaning;
}

// Interrupted (Ctrl-C, or a bound such as .ci/bounded's `timeout -s INT`): deno test gets
// SIGINT, on which it lists the tests still running ("The following tests were pending"),
// file and line (with --parallel it prints a test's name only with its result); then the
// cluster goes.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  Deno.addSignalListener(signal, async () => {
    log(`${signal}: stopping; deno test lists the tests still running`);
    if (child) {
      try {
        child.kill('SIGINT');
      } catch { /* exited */ }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exited = await Promise.race([
        child.status.then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 10_000))),
      ]);
      clearTimeout(timer);
      if (!exited) {
        log('deno test did not stop within 10 s of SIGINT: killing it');
        try {
          child.kill('SIGKILL');
        } catch { /* exited */ }
      }
    }
    await cleanup();
    Deno.exit(130);
  });
}

/**
 * The pg_cron tests' database (`cron.database_name` of the harness's cluster): a clone of the
 * migrated template with pg_cron in it, which they take in turn (tests/_helpers/db.ts).
 */
const CRON_DATABASE = 'switchyard_cron';

/**
 * Whether DATABASE_URL's server can give the pg_cron tests their database: `'1'` (it does not
 * exist yet), `'exists'` (an earlier run made it: {@linkcode refreshCronDatabase} migrates it
 * again in place), or why not (the tests that need it fail with this reason; they are never
 * skipped). The server must run pg_cron from {@linkcode CRON_DATABASE}: pg_cron's launcher
 * connects to it once it is created and stops for good when it is dropped, so the harness
 * creates it once and never drops it.
 */
async function pgCronOnServer(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ cron_db: string | null; exists: boolean; available: boolean }[]>`
      select current_setting('cron.database_name', true) as cron_db,
             exists (select 1 from pg_database where datname = ${CRON_DATABASE}) as exists,
             exists (select 1 from pg_available_extensions where name = 'pg_cron') as available`;
    const setUp = `preload pg_cron (shared_preload_libraries = 'pg_cron') with ` +
      `cron.database_name = '${CRON_DATABASE}'`;
    if (!row.available) return `pg_cron is not available on the server of DATABASE_URL: ${setUp}`;
    if (row.cron_db !== CRON_DATABASE) {
      return `pg_cron runs from database "${row.cron_db ?? 'none (not preloaded)'}" on the ` +
        `server of DATABASE_URL, not "${CRON_DATABASE}": ${setUp}`;
    }
    return row.exists ? 'exists' : '1';
  } finally {
    await sql.end();
  }
}

/**
 * Makes {@linkcode CRON_DATABASE}: a clone of the migrated template with pg_cron created in it.
 * Throws, naming the table, when the template holds rows in a kit table: the pg_cron tests'
 * reset empties them (tests/_helpers/db.ts), so the clone must start empty too.
 */
async function createCronDatabase(url: string, template: string): Promise<void> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${CRON_DATABASE}" template "${template}"`);
  } finally {
    await admin.end();
  }
  const cronUrl = new URL(url);
  cronUrl.pathname = `/${CRON_DATABASE}`;
  const sql = postgres(cronUrl.toString(), { max: 1, onnotice: () => {} });
  try {
    await sql`create extension pg_cron`;
    const tables = await sql<{ name: string }[]>`
      select format('%I.%I', n.nspname, c.relname) as name from pg_class c
        join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'switchyard' and c.relkind in ('r', 'p')`;
    for (const { name } of tables) {
      const [{ rows }] = await sql.unsafe(`select count(*)::int as rows from ${name}`);
      if (rows > 0) {
        throw new Error(
          `the migrated template has ${rows} row(s) in ${name}: the pg_cron tests' reset ` +
            '(withCronDatabase in tests/_helpers/db.ts) empties every table of schema ' +
            'switchyard, so it would lose them; restore them there',
        );
      }
    }
  } finally {
    await sql.end();
  }
}

/**
 * Migrates {@linkcode CRON_DATABASE} again in place, for a DATABASE_URL server where an earlier
 * run made it (pg_cron stops for good when it is dropped): every schema and extension the
 * template's migrations made goes (pg_cron and its `cron` schema stay, their jobs emptied), then
 * the same migrations as the template's run in it.
 */
async function refreshCronDatabase(url: string): Promise<void> {
  const cronUrl = new URL(url);
  cronUrl.pathname = `/${CRON_DATABASE}`;
  // The pg_cron tests' lock: a run of the suite on the same server may be using the database.
  const lock = postgres(url, { max: 1, onnotice: () => {}, prepare: false });
  const sql = postgres(cronUrl.toString(), { max: 1, onnotice: () => {} });
  try {
    await lock`select pg_advisory_lock(${CRON_LOCK})`;
    const extensions = await sql<{ name: string }[]>`
      select extname as name from pg_extension where extname not in ('plpgsql', 'pg_cron')`;
    for (const { name } of extensions) await sql.unsafe(`drop extension "${name}" cascade`);
    const schemas = await sql<{ name: string }[]>`
      select nspname as name from pg_namespace
       where nspname not in ('pg_catalog', 'information_schema', 'public', 'cron')
         and nspname not like 'pg\_toast%' and nspname not like 'pg\_temp\_%'`;
    for (const { name } of schemas) await sql.unsafe(`drop schema "${name}" cascade`);
    await sql`delete from cron.job`;
    await sql`truncate cron.job_run_details`;
    await migrate(cronUrl.toString());
  } finally {
    await sql.end();
    await lock`select pg_advisory_unlock(${CRON_LOCK})`.catch(() => {});
    await lock.end({ timeout: 5 });
  }
}

/**
 * Whether a run of `args` (deno test's paths and options) holds a test file that takes the
 * pg_cron database (`withCronDatabase`): only then is an existing one migrated again.
 */
async function runUsesCronDatabase(args: string[]): Promise<boolean> {
  const uses = async (path: string): Promise<boolean> => {
    const info = await Deno.stat(path).catch(() => undefined);
    if (!info) return false;
    if (info.isFile) return (await Deno.readTextFile(path)).includes('withCronDatabase');
    for await (const entry of Deno.readDir(path)) {
      if (await uses(join(path, entry.name))) return true;
    }
    return false;
  };
  for (const arg of args) {
    if (!arg.startsWith('-') && await uses(arg)) return true;
  }
  return false;
}

/**
 * What deno test runs: the arguments as given (default tests/), or with --tier the tier's files
 * among the named paths, after checking every file's tier. Exits 2 naming a bad --tier and 1
 * naming each file whose tier is wrong.
 */
async function plan(): Promise<{ tier?: Tier; args: string[] }> {
  let parsed: ReturnType<typeof parseTierArgs>;
  try {
    parsed = parseTierArgs(Deno.args);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const { tier, rest, pgmqDependent } = parsed;
  if (!tier) return { args: rest.length ? rest : ['tests/'] };
  const files = await listTestFiles(KIT_ROOT);
  const read = (file: string) => Deno.readTextFile(join(KIT_ROOT, file));
  const problems = [
    ...await tierProblems(files, TIERS, read),
    ...await pgmqDependentProblems(TIERS, PGMQ_DEPENDENT, read),
  ];
  if (problems.length > 0) {
    for (const problem of problems) console.error(`error: ${problem}`);
    Deno.exit(1);
  }
  try {
    const { files: chosen, options } = selectTier(tier, rest, TIERS, Deno.cwd(), KIT_ROOT);
    const selected = pgmqDependent ? chosen.filter((f) => PGMQ_DEPENDENT.includes(f)) : chosen;
    log(
      `tier ${tier}: ${selected.length} file(s)${
        pgmqDependent ? ` (the PGMQ-dependent ones, ${PGMQ_DEPENDENT_FLAG})` : ''
      }`,
    );
    const paths = selected.map((f) => relative(Deno.cwd(), join(KIT_ROOT, f)));
    return { tier, args: [...options, ...paths] };
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(2);
  }
}

/** Prints the run's five slowest files from its JUnit report (nothing when there is none). */
async function printSlowest(junitPath: string): Promise<void> {
  let report: string;
  try {
    report = await Deno.readTextFile(junitPath);
  } catch {
    return; // interrupted before deno test wrote it
  }
  const slowest = fileDurations(report).slice(0, 5);
  if (slowest.length === 0) return;
  log("slowest files (the sum of their tests' durations):");
  for (const { file, seconds } of slowest) {
    log(`  ${seconds.toFixed(1).padStart(6)} s  ${file}`);
  }
}

const { tier, args } = await plan();
// The run's JUnit report, for its slowest files (unless the caller asked for one of their own).
junit = args.some((a) => a.startsWith('--junit-path'))
  ? undefined
  : await Deno.makeTempFile({ prefix: 'switchyard-test-', suffix: '.xml' });

// The test engine's snapshot cache (lib/testing/snapshot_cache.ts) of this run alone: the suite
// never starts from a cache another run left, and leaves none behind.
const ownEngineCache = Deno.env.get('SWITCHYARD_TEST_CACHE') === undefined
  ? await Deno.makeTempDir({ prefix: 'switchyard-engine-cache-' })
  : undefined;

// The kit's npm package of this run (tests/_helpers/npm_package.ts): the first file that installs
// it builds and packs it there, the others take that tarball instead of building their own.
npmPackageDir = await Deno.makeTempDir({ prefix: 'switchyard-test-npm-' });

/** Runs deno test with the run's environment; returns its exit code. */
async function denoTest(env: Record<string, string>): Promise<number> {
  if (ownEngineCache) env = { ...env, SWITCHYARD_TEST_CACHE: ownEngineCache };
  if (npmPackageDir) env = { ...env, SWITCHYARD_TEST_NPM_PACKAGE: npmPackageDir };
  child = new Deno.Command(Deno.execPath(), {
    args: [
      'test',
      ...tierPermissions(tier, Deno.execPath()),
      '--parallel',
      ...(junit ? [`--junit-path=${junit}`] : []),
      ...args,
    ],
    env,
    stdin: 'null',
  }).spawn();
  const status = await child.status;
  if (junit) await printSlowest(junit);
  return status.code;
}

let code = 1;
try {
  if (tier === 'unit') {
    // No database: the variables a test database comes from are empty (tests/_helpers/db.ts
    // then says how to run the suite), and the network is denied (tierPermissions).
    code = await denoTest({
      SWITCHYARD_TEST_ADMIN_URL: '',
      SWITCHYARD_TEST_TEMPLATE: '',
      SWITCHYARD_TEST_PG_CRON: '',
      SWITCHYARD_TEST_CRON_DATABASE: '',
    });
  } else {
    code = await withDatabase();
  }
} catch (e) {
  console.error(`error: ${(e as Error).message}`);
  code = 1;
} finally {
  await cleanup();
  if (ownEngineCache) await Deno.remove(ownEngineCache, { recursive: true }).catch(() => {});
}
Deno.exit(code);

/** Starts (or takes) the server, migrates the template, runs deno test on it. */
async function withDatabase(): Promise<number> {
  if (!adminUrl) {
    await ensurePostgresBinaries(Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN, log);
    cluster = await startCluster({ log, cronDatabase: CRON_DATABASE });
    adminUrl = cluster.url;
    // Announce where the cluster lives so a harness test can check it is gone afterwards.
    log(`cluster dir: ${cluster.dir}`);
  } else {
    log('using DATABASE_URL');
  }
  const pgCron = cluster
    ? (cluster.pgCron ? '1' : 'pg_cron.so is missing next to the server binaries: install ' +
      'postgresql-15-cron (tools/_provision.ts does as root)')
    : await pgCronOnServer(adminUrl);
  if (pgCron !== '1' && pgCron !== 'exists') log(`the pg_cron tests will fail: ${pgCron}`);
  if (runsBrowserTest(args, Deno.cwd())) {
    const missing = await ensureChromium(Deno.env.get('CHROMIUM') ?? DEFAULT_CHROMIUM, log);
    if (missing) log(`the browser test will fail: ${missing}`);
  }
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${template}"`);
    templateCreated = true;
    // Supabase roles, so grants and revokes in migrations behave as on a real project.
    for (const role of ['anon', 'authenticated', 'service_role']) {
      await admin.unsafe(
        `do $$ begin create role ${role} nologin; exception when duplicate_object then null; end $$`,
      );
    }
  } finally {
    await admin.end();
  }
  const templateUrl = new URL(adminUrl);
  templateUrl.pathname = `/${template}`;
  const started = performance.now();
  await migrate(templateUrl.toString());
  log(`migrated template ${template} in ${Math.round(performance.now() - started)} ms`);
  {
    // Which PGMQ the run has (CI runs the db tier once each way;
    // docs/design/testing.md#both-kinds-of-pgmq).
    const t = postgres(templateUrl.toString(), { max: 1, onnotice: () => {} });
    try {
      const [row] = await t<{ version: string | null }[]>`
        select (select extversion from pg_extension where extname = 'pgmq') as version`;
      log(
        row.version
          ? `PGMQ: the pgmq extension ${row.version} (create extension)`
          : 'PGMQ: the compatible layer loaded as plain SQL (pgmq_compat/pgmq.sql)',
      );
    } finally {
      await t.end();
    }
  }
  const admin2 = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin2.unsafe(
      `update pg_database set datistemplate = true where datname = '${template}'`,
    );
  } finally {
    await admin2.end();
  }

  let cronReady = pgCron;
  if (pgCron === 'exists' && !await runUsesCronDatabase(args)) {
    cronReady = `database ${CRON_DATABASE} (an earlier run made it) was left as it is: no file ` +
      'of this run takes it';
  } else if (pgCron === 'exists') {
    try {
      const started = performance.now();
      await refreshCronDatabase(adminUrl);
      cronReady = '1';
      log(
        `pg_cron runs from database ${CRON_DATABASE}, made by an earlier run and migrated ` +
          `again in ${Math.round(performance.now() - started)} ms`,
      );
    } catch (e) {
      cronReady = `the harness could not migrate database ${CRON_DATABASE} again (an earlier ` +
        `run made it): ${(e as Error).message}`;
      log(`the pg_cron tests will fail: ${cronReady}`);
    }
  } else if (pgCron === '1') {
    try {
      await createCronDatabase(adminUrl, template);
      log(`pg_cron runs from database ${CRON_DATABASE}, a clone of the template`);
    } catch (e) {
      cronReady = `the harness could not make database ${CRON_DATABASE}: ${(e as Error).message}`;
      log(`the pg_cron tests will fail: ${cronReady}`);
    }
  }

  return await denoTest({
    SWITCHYARD_TEST_ADMIN_URL: adminUrl,
    SWITCHYARD_TEST_TEMPLATE: template,
    SWITCHYARD_TEST_PG_CRON: cronReady,
    SWITCHYARD_TEST_CRON_DATABASE: cronReady === '1' ? CRON_DATABASE : '',
  });
}
