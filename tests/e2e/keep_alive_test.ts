/**
 * `deno task keep-alive`: the keep-alive in one command, against real PostgreSQL. In a test
 * database (a clone: no pg_cron, no pg_net) it names both and how to enable them, writing
 * nothing; in the server's pg_cron database with the kit migrated in it (where pg_cron lives, as
 * on Supabase; tests/_helpers/db.ts) it sets the base URL and the bearer, creates the real pg_cron job through
 * switchyard.schedule_keep_alive, and a rerun changes nothing. This server has no pg_net: that
 * is named, and `--without-pg-net` sets up a job that records its wakes. `deno task install
 * --keep-alive` runs the same set-up after installing.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { keepAliveCommand } from '../../lib/ops.ts';
import {
  adminUrl,
  createTestDatabase,
  cronDatabaseName,
  urlFor,
  withCronDatabase,
} from '../_helpers/db.ts';
import { deno, envWithout } from '../_helpers/process.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const SECRET = 'keep-alive-test-secret-7f3a';

function keepAlive(args: string[], env: Record<string, string>, task: string[] = ['keep-alive']) {
  return deno(['task', '-q', ...task, ...args], {
    cwd: ROOT,
    clearEnv: true,
    env: {
      ...envWithout('DATABASE_URL', 'SUPABASE_DB_URL', 'SWITCHYARD_DB_URL'),
      NO_COLOR: '1',
      ...env,
    },
  });
}

const URL_ = 'https://abcdefghijklmnopqrst.supabase.co';

Deno.test('keep-alive in a database without pg_cron and pg_net names both, and how, writing nothing', async () => {
  const db = await createTestDatabase();
  try {
    const r = await keepAlive(['--url', URL_, '--bearer-from-env', 'KA_SECRET'], {
      DATABASE_URL: db.url,
      KA_SECRET: SECRET,
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /the keep-alive cannot be set up; nothing was written/);
    assert.match(r.stderr, /pg_net is not available on this server .*--without-pg-net/);
    // pg_cron runs in the server's pg_cron database, not in this clone.
    assert.match(
      r.stderr,
      new RegExp(
        `pg_cron runs in database "${cronDatabaseName()}" \\(cron\\.database_name\\), not "`,
      ),
    );
    assert.doesNotMatch(r.stderr + r.stdout, new RegExp(SECRET));
    const settings = await db.sql`select name from switchyard.settings`;
    assert.deepEqual(settings.map((s) => s.name), []);
    // Bad usage: exit 2 with the rule.
    const bad = await keepAlive(['--url', URL_, '--debounce', 'soon'], { DATABASE_URL: db.url });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--debounce "soon" is invalid: use whole seconds of at least 0/);
    const noUrl = await keepAlive([], { DATABASE_URL: db.url });
    assert.equal(noUrl.code, 2);
    assert.match(noUrl.stderr, /--url is required/);
    const noEnv = await keepAlive(['--url', URL_, '--bearer-from-env', 'KA_UNSET'], {
      DATABASE_URL: db.url,
    });
    assert.equal(noEnv.code, 2);
    assert.match(noEnv.stderr, /the environment variable KA_UNSET is not set/);

    // The installer's option runs the same checks after installing, with the same words.
    const project = await Deno.makeTempDir({ prefix: 'switchyard-install-keep-alive-' });
    try {
      await Deno.mkdir(`${project}/supabase`);
      await Deno.writeTextFile(`${project}/supabase/config.toml`, 'project_id = "ka"\n');
      const bareUrl = await keepAlive(['--url', URL_], { DATABASE_URL: db.url }, [
        'install',
        '--project',
        project,
      ]);
      assert.equal(bareUrl.code, 2, bareUrl.stderr);
      assert.match(bareUrl.stderr, /--url is an option of --keep-alive/);
      const installed = await keepAlive(
        ['--keep-alive', '--url', URL_, '--bearer-from-env', 'KA_SECRET'],
        { DATABASE_URL: db.url, KA_SECRET: SECRET },
        ['install', '--project', project],
      );
      assert.equal(installed.code, 1, installed.stderr);
      assert.match(installed.stdout, /^created\s+supabase\/functions\/_shared\/registry\.ts$/m);
      assert.match(installed.stdout, /^keep-alive:$/m);
      assert.match(installed.stderr, /the keep-alive cannot be set up; nothing was written/);
      assert.match(installed.stderr, /pg_net is not available on this server/);
      assert.doesNotMatch(installed.stderr + installed.stdout, new RegExp(SECRET));
    } finally {
      await Deno.remove(project, { recursive: true });
    }
  } finally {
    await db.close();
  }
});

Deno.test('keep-alive where pg_cron lives: settings, bearer and the real pg_cron job, idempotent', async () => {
  // Before the migrations: the SQL core is named first (a database of its own, without the kit).
  const bare = `sy_bare_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {}, prepare: false });
  try {
    await admin.unsafe(`create database "${bare}"`);
    const early = await keepAlive(['--url', URL_, '--without-pg-net'], {
      DATABASE_URL: urlFor(bare),
    });
    assert.equal(early.code, 1);
    assert.match(
      early.stderr,
      new RegExp(`the Switchyard SQL core is not in database "${bare}": apply`),
    );
  } finally {
    await admin.unsafe(`drop database if exists "${bare}" with (force)`);
    await admin.end();
  }
  // The server's pg_cron database, with the kit migrated in it (tests/_helpers/db.ts), in turn.
  await withCronDatabase(async ({ name, url, sql }) => {
    const env = { DATABASE_URL: url, KA_SECRET: SECRET };

    // This server has no pg_net, and without --bearer-from-env no bearer is stored.
    const noNet = await keepAlive(['--url', URL_], env);
    assert.equal(noNet.code, 1);
    assert.match(noNet.stderr, /pg_net is not available on this server/);
    assert.match(noNet.stderr, /no bearer is stored for the wake requests: pass --bearer-from-env/);
    assert.doesNotMatch(noNet.stderr, /pg_cron/, 'pg_cron is there');
    assert.equal((await sql`select count(*)::int as n from cron.job`)[0].n, 0);

    // A URL the SQL core refuses: its own message, nothing scheduled.
    const badUrl = await keepAlive(['--url', 'ftp://example.com', '--without-pg-net'], env);
    assert.equal(badUrl.code, 1);
    assert.match(badUrl.stderr, /setting functions_base_url .*ftp:\/\/example\.com.* is invalid/);
    assert.equal((await sql`select count(*)::int as n from cron.job`)[0].n, 0);

    const args = ['--url', URL_, '--bearer-from-env', 'KA_SECRET', '--without-pg-net'];
    const first = await keepAlive(args, env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`^set {7}functions_base_url ${URL_}$`, 'm'));
    assert.match(
      first.stdout,
      /^set {7}bearer in setting functions_bearer \(from environment variable KA_SECRET; not shown\)$/m,
    );
    assert.match(first.stdout, /^created {3}pg_cron job switchyard_keep_alive \(id \d+\)/m);
    assert.match(first.stdout, /keep-alive set up: check its runs with/);
    assert.doesNotMatch(first.stdout + first.stderr, new RegExp(SECRET));
    const settings = await sql`select name, value from switchyard.settings order by name`;
    assert.deepEqual(settings.map((s) => [s.name, s.value]), [
      ['functions_base_url', URL_],
      ['functions_bearer', SECRET],
    ]);
    const job = async () =>
      (await sql`select jobid::int as id, jobname, schedule, command, database from cron.job`)
        .map((j) => ({ ...j }));
    const [created] = await job();
    assert.deepEqual(created, {
      id: created.id,
      jobname: 'switchyard_keep_alive',
      schedule: '* * * * *',
      command: await keepAliveCommand(sql, { debounceSeconds: 30 }),
      database: name,
    });
    // The job's command runs here (what pg_cron will run), recording wakes without pg_net.
    await sql`select switchyard.ensure_shared_queue('ka_idle'::text)`;
    await sql`select switchyard.register_function('ka-idle'::text, 'ka_idle'::text)`;
    await sql.unsafe(created.command as string);
    const wakes = await sql`select function_name, via, url from switchyard.wake_requests`;
    assert.deepEqual(wakes.map((w) => ({ ...w })), [
      { function_name: 'ka-idle', via: 'recorded', url: `${URL_}/functions/v1/ka-idle` },
    ]);

    // Again: nothing to do, the same job.
    const again = await keepAlive(args, env);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^unchanged functions_base_url/m);
    assert.match(again.stdout, /^unchanged bearer in setting functions_bearer/m);
    assert.match(
      again.stdout,
      new RegExp(`^unchanged pg_cron job switchyard_keep_alive \\(id ${created.id}\\)`, 'm'),
    );
    assert.match(again.stdout, /nothing to do: the keep-alive is set up as asked/);
    assert.deepEqual(await job(), [created]);

    // Other options update the one job; without --bearer-from-env the stored bearer stays.
    const changed = await keepAlive(
      ['--url', URL_, '--debounce', '90', '--schedule', '*/2 * * * *', '--without-pg-net'],
      { DATABASE_URL: url },
    );
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(changed.stdout, /^updated {3}pg_cron job switchyard_keep_alive/m);
    assert.deepEqual(await job(), [{
      ...created,
      schedule: '*/2 * * * *',
      command: await keepAliveCommand(sql, { debounceSeconds: 90 }),
    }]);
    assert.equal(
      (await sql`select value from switchyard.settings where name = 'functions_bearer'`)[0].value,
      SECRET,
    );
  });
});
