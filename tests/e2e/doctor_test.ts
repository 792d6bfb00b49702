/**
 * `deno task doctor` (issue 37): a project and its database checked, each problem printed with
 * the command that fixes it. A healthy project (the kit's project, compiled and applied as `db
 * push` does) prints no problem and exits 0; a broken one — every problem planted on a real
 * database — prints each line and exits 1, in text and in `--json`. The keep-alive's parts run
 * against stand-ins of pg_net (`net.http_post`, and `net._http_response` with pg_net's
 * documented columns) and pg_cron (`cron.job`, `cron.job_run_details`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { compileFlows } from '../../cli/compile.ts';
import { copyProject, KIT_ROOT } from '../../cli/_project.ts';
import { diagnose, type Diagnosis } from '../../cli/doctor.ts';
import { createTestDatabase, cronDatabaseName, type TestDatabase } from '../_helpers/db.ts';
import { migrationTimestamp } from '../../cli/_util.ts';
import { deno, envWithout } from '../_helpers/process.ts';

/** Runs `deno task doctor` against `url` for `project`. */
function doctor(url: string, project: string, args: string[] = []) {
  return deno(['task', '-q', 'doctor', '--project', project, ...args], {
    cwd: KIT_ROOT,
    clearEnv: true,
    env: {
      ...envWithout('DATABASE_URL', 'SUPABASE_DB_URL', 'SWITCHYARD_DB_URL'),
      NO_COLOR: '1',
      DATABASE_URL: url,
    },
  });
}

/** A copy of the kit's project whose registry is compiled and applied, as `db push` would. */
async function healthyProject(db: TestDatabase): Promise<string> {
  const project = await copyProject('switchyard-doctor-');
  const compiled = await compileFlows({ projectDir: project });
  assert.ok(compiled.path);
  await db.sql.unsafe(await Deno.readTextFile(join(project, compiled.path)));
  const file = compiled.path.split('/').pop()!;
  await db.sql`insert into supabase_migrations.schema_migrations (version, name)
               values (${file.slice(0, 14)}, ${file.slice(15, -4)})`;
  return project;
}

/** pg_net's net.http_post and its response table (sql/pg_net.sql's columns). */
const PG_NET = `
  create schema if not exists net;
  create table net._http_response (
    id bigint, status_code integer, content_type text, headers jsonb, content text,
    timed_out bool, error_msg text, created timestamptz not null default now());
  create function net.http_post(url text, body jsonb default '{}', params jsonb default '{}',
                                headers jsonb default '{}', timeout_milliseconds int default 1000)
  returns bigint language sql as $$ select 1::bigint $$;`;

/** pg_cron's job tables, with the keep-alive job. */
const PG_CRON = `
  create schema if not exists cron;
  create table cron.job (jobid bigint primary key, schedule text, command text, nodename text,
                         nodeport int, database text, username text, active boolean,
                         jobname text);
  create table cron.job_run_details (runid bigint primary key, jobid bigint, status text,
                                     return_message text, start_time timestamptz);
  insert into cron.job values (1, '* * * * *', 'select switchyard.keep_alive()', 'localhost',
                               5432, current_database(), current_user, true,
                               'switchyard_keep_alive');
  insert into cron.job_run_details values (1, 1, 'succeeded', '1 row', now());`;

Deno.test('a healthy project prints no problem and exits 0, with and without the keep-alive checks', async () => {
  const db = await createTestDatabase();
  const project = await healthyProject(db);
  try {
    const plain = await doctor(db.url, project);
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    assert.doesNotMatch(plain.stdout, /^problem/m);
    assert.match(plain.stdout, /^not checked \[keep-alive\]: a local database/m);
    assert.match(plain.stdout, /^no problem found in .* and database "sy_test_/m);

    // With a queue function that ran, woken by a keep-alive whose job runs and whose wakes
    // are answered: still nothing.
    await db.sql.unsafe(PG_NET + PG_CRON);
    await db
      .sql`select switchyard.register_function('classify-threads-worker', 'classify_threads')`;
    // A refusal the function's later start resolved is history, not a problem.
    await db.sql`select switchyard.record_refusal('classify-threads-worker', 'coverage', 'old')`;
    await db.sql`update switchyard.refusals set last_at = now() - interval '1 minute'`;
    await db.sql`select switchyard.register_worker(gen_random_uuid(), 'classify_threads',
                   'classify-threads-worker', array['communityThreadsV1/classify'], 15)`;
    await db.sql`update switchyard.worker_functions set last_woken_at = now(),
                   created_at = now() - interval '1 hour'`;
    await db.sql`insert into switchyard.wake_requests (function_name, queue_name, url, via,
                                                        request_id)
                 values ('classify-threads-worker', 'classify_threads', 'https://x', 'pg_net', 7)`;
    await db.sql`insert into net._http_response (id, status_code, content)
                 values (7, 200, '{"state":"started"}')`;
    const all = await doctor(db.url, project, ['--keep-alive']);
    assert.equal(all.code, 0, all.stdout + all.stderr);
    assert.equal(all.stdout.trim().split('\n').length, 1, all.stdout);
    assert.match(all.stdout, /^no problem found in /);
    const json = await doctor(db.url, project, ['--keep-alive', '--json']);
    assert.equal(json.code, 0);
    const d = JSON.parse(json.stdout) as Diagnosis;
    assert.deepEqual(d.problems, []);
    assert.deepEqual(d.skipped, []);
  } finally {
    await db.close();
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test('a broken project: every planted problem is printed with its fix, exit 1, and in --json', async () => {
  const db = await createTestDatabase();
  const project = await healthyProject(db);
  const sql = db.sql;
  try {
    // migrations: one the project has and the database lacks, one the other way round.
    const added = `${migrationTimestamp(new Date())}_add_index.sql`;
    await Deno.writeTextFile(join(project, 'supabase/migrations', added), 'select 1;\n');
    await sql`insert into supabase_migrations.schema_migrations (version, name)
              values ('20200101000000', 'lost_migration')`;
    // the SQL core older than the runtime needs.
    await sql.unsafe(`create or replace function switchyard.core_version() returns text
                      language sql immutable set search_path = '' as $$ select '0.3.9'::text $$`);
    // the registry changed and was not compiled: a new flow.
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/flows/greet.ts'),
      `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';
export const greetV1 = defineDeployedFlow(
  routeFlow(new Flow({ slug: 'greetV1' }).step({ slug: 'hi' }, () => 1), { queues: { hi: 'greetings' } }),
  { alias: 'greet' },
);
`,
    );
    const registry = join(project, 'supabase/functions/_shared/registry.ts');
    await Deno.writeTextFile(
      registry,
      (await Deno.readTextFile(registry))
        .replace(
          "import { supportTicketsV1 } from './flows/support_tickets.ts';",
          "import { supportTicketsV1 } from './flows/support_tickets.ts';\nimport { greetV1 } from './flows/greet.ts';",
        )
        .replace('supportTicketsV1] as const', 'supportTicketsV1, greetV1] as const'),
    );
    // an alias pointing at a version the registry lacks (a fresh database's old alias).
    await sql`select switchyard.ensure_flow(jsonb_set(
                (select shape from switchyard.flows where flow_slug = 'communityThreadsV1'),
                '{slug}', '"communityThreadsV0"'))`;
    await sql`select switchyard.activate_alias('communityThreads', 'communityThreadsV0')`;
    // functions: one enabled that never ran, one paused, one disabled.
    await sql`select switchyard.register_function('classify-threads-worker', 'classify_threads')`;
    await sql`select switchyard.register_function('deliver-slack-alerts-worker',
                                                  'deliver_slack_alerts')`;
    await sql`select switchyard.pause_function('deliver-slack-alerts-worker',
                                               'operator: Slack token rotated')`;
    await sql`select switchyard.ensure_shared_queue('spare_q')`;
    await sql`select switchyard.register_function('spare-worker', 'spare_q')`;
    await sql`select switchyard.set_function_enabled('spare-worker', false)`;
    await sql`update switchyard.worker_functions set created_at = now() - interval '1 hour'`;
    // a refused start since (never started).
    await sql`select switchyard.record_refusal('classify-threads-worker', 'coverage',
      'queue "classify_threads": the registry lacks communityThreadsV0/classify')`;
    // a run queued for 10 minutes with no live worker; work on a queue with no function.
    await sql`select switchyard.start_flow('supportTicketsV1', '{"subject": "x"}')`;
    await sql`update switchyard.step_tasks set queued_at = now() - interval '10 minutes'`;
    await sql`select switchyard.ensure_flow(jsonb_set(jsonb_set(
                (select shape from switchyard.flows where flow_slug = 'communityThreadsV1'),
                '{slug}', '"orphanV1"'), '{steps,0,queue}', '"orphan_q"'))`;
    await sql`select switchyard.start_flow('orphanV1', '{"text": "x"}')`;
    // the keep-alive: pg_net's responses (no http_post: pg_net missing) with a refused wake.
    await sql.unsafe(`create schema net;
      create table net._http_response (
        id bigint, status_code integer, content_type text, headers jsonb, content text,
        timed_out bool, error_msg text, created timestamptz not null default now());
      insert into net._http_response (id, status_code, content)
        values (41, 401, '{"error":"unauthorized"}');`);
    await sql`insert into switchyard.wake_requests (function_name, queue_name, url, via, request_id)
              values ('spare-worker', 'spare_q', 'https://x/functions/v1/spare-worker', 'pg_net',
                      41)`;

    const out = await doctor(db.url, project, ['--keep-alive', '--stuck-after', '60']);
    assert.equal(out.code, 1, out.stdout + out.stderr);
    const text = out.stdout;
    const expect = (line: RegExp, fix: RegExp) => {
      const at = text.split('\n').findIndex((l) => line.test(l));
      assert.ok(at >= 0, `no line ${line} in:\n${text}`);
      const next = text.split('\n')[at + 1];
      assert.match(next, /^ {2}fix: /, `the line after ${line} is its fix`);
      assert.match(next, fix);
    };
    expect(
      /^problem \[migrations\] 1 migration\(s\) of supabase\/migrations are not applied to database "sy_test_\w+": \d{14}_add_index\.sql$/,
      /supabase db push --(linked|remote) .*a local database: DATABASE_URL=… npx -y deno@2 task db:push --project /,
    );
    expect(
      /^problem \[migrations\] database "\w+" applied 1 migration\(s\) that supabase\/migrations lacks: 20200101000000_lost_migration\.sql$/,
      /supabase migration repair --(linked|remote) --status reverted 20200101000000/,
    );
    expect(
      /^problem \[sql core\] the SQL core of database "\w+" is 0\.3\.9; the project's runtime needs 0\.4\.0 or later/,
      /supabase db push .*then redeploy the functions/,
    );
    expect(
      /^problem \[registry\] supabase\/functions\/_shared\/registry\.ts changed since it was compiled: flow greetV1 \(new\), alias greet -> greetV1$/,
      /^ {2}fix: npx -y deno@2 task compile --project .*, then supabase db push/,
    );
    expect(
      /^problem \[aliases\] alias communityThreads points at communityThreadsV0, which .* does not list/,
      /select switchyard\.activate_alias\('communityThreads', 'communityThreadsV2'\)/,
    );
    expect(
      /^problem \[functions\] function deliver-slack-alerts-worker is paused since .*: operator: Slack token rotated$/,
      /^ {2}fix: fix the cause, then npx -y deno@2 task resume deliver-slack-alerts-worker$/,
    );
    expect(
      /^problem \[functions\] function spare-worker is disabled/,
      /^ {2}fix: npx -y deno@2 task fence end \(or select switchyard\.set_function_enabled\('spare-worker', true\)\)$/,
    );
    expect(
      /^problem \[refusals\] function classify-threads-worker refused to start once since .* \(coverage\): queue "classify_threads": the registry lacks communityThreadsV0\/classify$/,
      /add the versions it names to .*registry\.ts.*supabase functions deploy classify-threads-worker/,
    );
    expect(
      /^problem \[queues\] queue orphan_q has 1 queued and 0 started task\(s\) of 1 run\(s\) and no queue function: nothing will run them$/,
      /npx -y deno@2 task scaffold-queue orphan_q --project /,
    );
    expect(
      /^problem \[queues\] queue classify_threads: 1 run\(s\) have a task queued for more than 1m 0s \(the oldest for 10m \d+s\) and no worker is live \(classify-threads-worker\)$/,
      /wake classify-threads-worker: curl -X POST/,
    );
    expect(/^problem \[keep-alive\] pg_net is not enabled in database/, /enable pg_net/);
    expect(
      new RegExp(
        `^problem \\[keep-alive\\] pg_cron runs in database "${cronDatabaseName()}" ` +
          '\\(cron\\.database_name\\), not in database',
      ),
      /cron\.schedule_in_database/,
    );
    expect(
      /^problem \[keep-alive\] function classify-threads-worker has never run: no worker ever started and the keep-alive never woke it/,
      /supabase functions deploy classify-threads-worker.*npx -y deno@2 task keep-alive --url/,
    );
    expect(
      /^problem \[keep-alive\] the keep-alive's wakes of spare-worker fail: 1 in the last 6h, the latest at .*: HTTP 401: \{"error":"unauthorized"\}$/,
      /store the bearer the function accepts: .*--bearer-from-env SWITCHYARD_WORKER_SECRET/,
    );
    assert.match(text, /^14 problem\(s\) in .* and database "sy_test_\w+"$/m);

    const json = await doctor(db.url, project, ['--keep-alive', '--stuck-after', '60', '--json']);
    assert.equal(json.code, 1);
    const d = JSON.parse(json.stdout) as Diagnosis;
    assert.deepEqual(
      d.problems.map((p) => p.check),
      [
        'migrations',
        'migrations',
        'sql core',
        'registry',
        'aliases',
        'functions',
        'functions',
        'refusals',
        'queues',
        'queues',
        'keep-alive',
        'keep-alive',
        'keep-alive',
        'keep-alive',
      ],
    );
    assert.ok(d.problems.every((p) => p.fix.length > 0));
  } finally {
    await db.close();
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test('doctor: a newer SQL core, a core without migration records, and a keep-alive job that is missing, inactive or failing', async () => {
  const db = await createTestDatabase();
  const project = await healthyProject(db);
  const sql = db.sql;
  const check = (keepAlive = true) =>
    diagnose(sql, { projectDir: project, projectArg: 'app', stuckAfterSeconds: 300, keepAlive });
  const lines = (d: Diagnosis) => d.problems.map((p) => `[${p.check}] ${p.problem} => ${p.fix}`);
  try {
    await sql.unsafe(`create or replace function switchyard.core_version() returns text
                      language sql immutable set search_path = '' as $$ select '9.0.0'::text $$`);
    assert.deepEqual(lines(await check(false)), [
      `[sql core] the SQL core of database "${
        (await sql`select current_database() as d`)[0].d
      }" is 9.0.0, newer than the 0.4.0 the project's migrations and runtime ship: another ` +
      'checkout of a newer kit applied its migrations => update the project from that kit ' +
      '(npx -y deno@2 task install --project app), then redeploy the functions (supabase ' +
      'functions deploy)',
    ]);
    await sql.unsafe(`create or replace function switchyard.core_version() returns text
                      language sql immutable set search_path = '' as $$ select '0.4.0'::text $$`);

    await sql`alter table supabase_migrations.schema_migrations rename to moved_away`;
    const [unrecorded] = (await check(false)).problems;
    assert.match(
      unrecorded.problem,
      /has the SQL core, but the Supabase CLI recorded no migration/,
    );
    assert.match(
      unrecorded.fix,
      /^supabase migration repair --(linked|remote) --status applied \d{14}, /,
    );
    await sql`alter table supabase_migrations.moved_away rename to schema_migrations`;

    await sql.unsafe(PG_NET);
    await sql`select switchyard.register_function('classify-threads-worker', 'classify_threads')`;
    await sql`update switchyard.worker_functions set last_woken_at = now()`;
    await sql.unsafe(`create schema cron;
      create table cron.job (jobid bigint, jobname text, active boolean);
      create table cron.job_run_details (runid bigint, jobid bigint, status text,
                                         return_message text, start_time timestamptz);`);
    assert.deepEqual((await check()).problems.map((p) => p.problem), [
      `no keep-alive job (switchyard_keep_alive) in database "${
        (await sql`select current_database() as d`)[0].d
      }"`,
    ]);
    await sql`insert into cron.job values (3, 'switchyard_keep_alive', false)`;
    assert.match((await check()).problems[0].fix, /cron\.alter_job\(jobid, active := true\)/);
    await sql`update cron.job set active = true`;
    await sql`insert into cron.job_run_details values
                (1, 3, 'succeeded', '1 row', now() - interval '2 minutes'),
                (2, 3, 'failed', 'keep_alive: pg_net is installed but no base URL is configured',
                 now())`;
    const failed = (await check()).problems;
    assert.equal(failed.length, 1);
    assert.match(
      failed[0].problem,
      /^the keep-alive job's latest run failed at .*: keep_alive: pg_net is installed but no base URL/,
    );
    assert.match(
      failed[0].fix,
      /npx -y deno@2 task keep-alive --url https:\/\/<project-ref>\.supabase\.co/,
    );
  } finally {
    await db.close();
    await Deno.remove(project, { recursive: true });
  }
});
