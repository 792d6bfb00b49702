/**
 * The pg_cron tests' one database (withCronDatabase, tests/_helpers/db.ts): pg_cron runs from
 * it, the kit is migrated in it, one test holds it at a time (across files and processes: an
 * advisory lock on a session of its own), and each turn starts from what the template had — no
 * job, run, queue or row of the turn before.
 */
import assert from 'node:assert/strict';
import { withCronDatabase } from '../_helpers/db.ts';

Deno.test('the pg_cron database: pg_cron and the kit in it, and nothing of the turn before', async () => {
  const first = await withCronDatabase(async ({ name, sql }) => {
    const [where] = await sql`select current_database() as db,
      current_setting('cron.database_name') as cron_db,
      (select extversion from pg_extension where extname = 'pg_cron') as pg_cron,
      to_regprocedure('switchyard.schedule_keep_alive(text, text, integer)') is not null as core`;
    assert.deepEqual({ ...where }, { db: name, cron_db: name, pg_cron: where.pg_cron, core: true });
    assert.ok(where.pg_cron, 'pg_cron is created there');
    // What a test leaves behind: a job and its run, a queue, kit rows.
    const [{ id }] = await sql`select cron.schedule('left_behind', '0 3 * * *', 'select 1') as id`;
    await sql`insert into cron.job_run_details (jobid, runid, database, username, command, status)
              values (${id}, nextval('cron.runid_seq'), ${name}, 'postgres', 'select 1',
                      'succeeded')`;
    await sql`select switchyard.ensure_shared_queue('cron_db_left')`;
    await sql`select switchyard.register_function('cron-db-left', 'cron_db_left')`;
    await sql`insert into switchyard.settings (name, value) values ('functions_base_url',
              'https://left.example.com')`;
    return Number(id);
  });
  assert.equal(first, 1, 'the reset restarts the job ids');

  await withCronDatabase(async ({ sql }) => {
    const [left] = await sql`select
      (select count(*)::int from cron.job) as jobs,
      (select count(*)::int from cron.job_run_details) as runs,
      (select count(*)::int from pgmq.list_queues()) as queues,
      (select count(*)::int from switchyard.worker_functions) as functions,
      (select count(*)::int from switchyard.settings) as settings`;
    assert.deepEqual({ ...left }, { jobs: 0, runs: 0, queues: 0, functions: 0, settings: 0 });
    // The ids start again, and the kit works as after a migration.
    const [{ id }] = await sql`select cron.schedule('next', '0 4 * * *', 'select 1') as id`;
    assert.equal(Number(id), 1);
    await sql`select switchyard.ensure_shared_queue('cron_db_left')`;
    await sql`select switchyard.register_function('cron-db-left', 'cron_db_left')`;
  });
});

Deno.test('the pg_cron database: concurrent users take it in turn', async () => {
  const turns: { who: number; from: number; to: number }[] = [];
  await Promise.all([0, 1, 2].map((who) =>
    withCronDatabase(async ({ sql }) => {
      const from = performance.now();
      // Each user finds the database as the reset left it, whatever the others did.
      const [{ jobs }] = await sql`select count(*)::int as jobs from cron.job`;
      assert.equal(jobs, 0, `user ${who} sees no job of another`);
      await sql`select cron.schedule(${`user_${who}`}, '0 5 * * *', 'select 1')`;
      await new Promise((r) => setTimeout(r, 300));
      turns.push({ who, from, to: performance.now() });
    })
  ));
  turns.sort((a, b) => a.from - b.from);
  assert.equal(turns.length, 3);
  for (let i = 1; i < turns.length; i++) {
    assert.ok(
      turns[i].from >= turns[i - 1].to,
      `user ${turns[i].who} started before user ${turns[i - 1].who} ended`,
    );
  }
});
