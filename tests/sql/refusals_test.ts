/**
 * The records of refusals and failing wakes (issue 37,
 * docs/design/worker.md#refusals-are-seen-where-operators-look and docs/design/versions.md):
 * switchyard.record_refusal keeps one bounded row per function and kind and refuses what is not
 * a refusal, with the rule; switchyard.wake_failures joins the keep-alive's wakes with pg_net's
 * responses (a stand-in `net` schema with pg_net's documented `net._http_response` layout).
 */
import assert from 'node:assert/strict';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

/** The hostile inputs this file tries, counted as they are tried (reported at the end). */
let hostile = 0;

async function refusal(run: () => Promise<unknown>) {
  try {
    await run();
  } catch (e) {
    const err = e as { code?: string; message: string; detail?: string };
    return { code: err.code, message: err.message, detail: JSON.parse(err.detail ?? 'null') };
  }
  throw new Error('expected a refusal');
}

Deno.test('record_refusal keeps one row per function and kind: first and last time, count, the latest message', async () => {
  await sql`select switchyard.record_refusal('rec-worker', 'coverage', 'first')`;
  await sql`select switchyard.record_refusal('rec-worker', 'coverage', 'second')`;
  await sql`select switchyard.record_refusal('rec-worker', 'start_failed', 'boom')`;
  const rows = await sql<{ refusal: string; message: string; count: number; later: boolean }[]>`
    select refusal, message, count::int as count, last_at >= first_at as later
      from switchyard.refusals where function_name = 'rec-worker' order by refusal`;
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { refusal: 'coverage', message: 'second', count: 2, later: true },
    { refusal: 'start_failed', message: 'boom', count: 1, later: true },
  ]);
  // A long message is kept cut, never refused: the record must not fail for its length.
  await sql`select switchyard.record_refusal('rec-worker', 'worker_config', repeat('x', 100000))`;
  hostile++;
  const [long] = await sql<{ message: string }[]>`
    select message from switchyard.refusals
     where function_name = 'rec-worker' and refusal = 'worker_config'`;
  assert.equal(long.message, `${'x'.repeat(2000)}... (100000 characters)`);
});

Deno.test('record_refusal refuses what is not a refusal, with the rule, and writes nothing', async () => {
  const cases: [string, string, string][] = [
    [
      `select switchyard.record_refusal(null, 'coverage', 'm')`,
      'function_name_format',
      'function_name',
    ],
    [
      `select switchyard.record_refusal('Bad Name', 'coverage', 'm')`,
      'function_name_format',
      'function_name',
    ],
    [
      `select switchyard.record_refusal(repeat('a', 64), 'coverage', 'm')`,
      'function_name_format',
      'function_name',
    ],
    [
      `select switchyard.record_refusal('x-worker''; drop table switchyard.runs; --', 'coverage', 'm')`,
      'function_name_format',
      'function_name',
    ],
    [`select switchyard.record_refusal('ok-worker', null, 'm')`, 'refusal_unknown', 'refusal'],
    [
      `select switchyard.record_refusal('ok-worker', 'COVERAGE', 'm')`,
      'refusal_unknown',
      'refusal',
    ],
    [
      `select switchyard.record_refusal('ok-worker', repeat('k', 100000), 'm')`,
      'refusal_unknown',
      'refusal',
    ],
    [
      `select switchyard.record_refusal('ok-worker', 'coverage', null)`,
      'message_missing',
      'message',
    ],
    [
      `select switchyard.record_refusal('ok-worker', 'coverage', '   ')`,
      'message_missing',
      'message',
    ],
  ];
  for (const [statement, rule, argument] of cases) {
    hostile++;
    const r = await refusal(() => sql.unsafe(statement));
    assert.equal(r.code, '22023', statement);
    assert.equal(r.detail.rule, rule, statement);
    assert.equal(r.detail.argument, argument, statement);
    assert.ok(r.message.length < 400, `${statement}: ${r.message.length} characters`);
  }
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from switchyard.refusals where function_name <> 'rec-worker'`;
  assert.equal(n, 0);
});

/** pg_net's response table, as pg_net documents and creates it (sql/pg_net.sql). */
const PG_NET_RESPONSES = `
  create schema if not exists net;
  create table net._http_response (
    id bigint,
    status_code integer,
    content_type text,
    headers jsonb,
    content text,
    timed_out bool,
    error_msg text,
    created timestamptz not null default now()
  );`;

Deno.test('wake_failures: error answers, timeouts, pg_net errors and refused requests, per function, with the latest', async () => {
  for (const f of ['wf-ok', 'wf-bad', 'wf-mixed', 'wf-refused']) {
    const queue = `${f.replace('-', '_')}_q`;
    await sql`select switchyard.ensure_shared_queue(${queue})`;
    await sql`select switchyard.register_function(${f}, ${queue})`;
  }
  const wake = (fn: string, requestId: number | null, agoSeconds: number) =>
    sql`insert into switchyard.wake_requests (function_name, queue_name, url, via, request_id,
                                              requested_at)
        values (${fn}, 'q', 'https://x.supabase.co/functions/v1/' || ${fn}, 'pg_net',
                ${requestId}, now() - make_interval(secs => ${agoSeconds}))`;
  // Without pg_net's table, only requests pg_net refused (no request id) are known to fail.
  await wake('wf-refused', null, 60);
  await wake('wf-bad', 11, 120);
  const without = await sql`select function_name, failures::int as failures, last_error
                              from switchyard.wake_failures()`;
  assert.deepEqual(without.map((r) => ({ ...r })), [
    { function_name: 'wf-refused', failures: 1, last_error: 'pg_net refused the request' },
  ]);

  await sql.unsafe(PG_NET_RESPONSES);
  try {
    await wake('wf-ok', 1, 100);
    await wake('wf-bad', 12, 60);
    await wake('wf-bad', 13, 30);
    await wake('wf-mixed', 21, 90);
    await wake('wf-mixed', 22, 60);
    await wake('wf-mixed', 23, 30); // no response yet: neither failed nor answered
    await wake('wf-ok', 2, 100000); // older than the window
    await sql`insert into net._http_response (id, status_code, content, timed_out, error_msg)
              values (1, 200, '{"state":"started"}', false, null),
                     (2, 500, 'old', false, null),
                     (11, 401, '{"error":"unauthorized"}', false, null),
                     (12, null, null, true, 'Timeout was reached'),
                     (13, 409, ${'{"error":"coverage","message":"' + 'm'.repeat(1000) + '"}'},
                      false, null),
                     (21, 500, '{"error":"start_failed"}', false, null),
                     (22, 200, '{"state":"running"}', false, null)`;
    const rows = await sql<
      {
        function_name: string;
        failures: number;
        last_status: number | null;
        last_error: string;
        failed_after_ok: boolean | null;
      }[]
    >`select function_name, failures::int as failures, last_status, last_error,
             last_failed_at > last_ok_at as failed_after_ok
        from switchyard.wake_failures()`;
    assert.deepEqual(rows.map((r) => r.function_name), ['wf-bad', 'wf-mixed', 'wf-refused']);
    const bad = rows[0];
    assert.equal(bad.failures, 3);
    assert.equal(bad.last_status, 409);
    assert.equal(
      bad.last_error,
      `HTTP 409: ${('{"error":"coverage","message":"' + 'm'.repeat(1000)).slice(0, 300)}`,
    );
    assert.equal(bad.failed_after_ok, null, 'never answered without error');
    const mixed = rows[1];
    assert.equal(mixed.failures, 1);
    assert.equal(mixed.last_error, 'HTTP 500: {"error":"start_failed"}');
    assert.equal(mixed.failed_after_ok, false, 'a later wake was answered');
    const timedOut = await sql<{ last_error: string }[]>`
      select last_error from switchyard.wake_failures(75) where function_name = 'wf-bad'`;
    assert.deepEqual(timedOut.map((r) => r.last_error), [
      `HTTP 409: ${('{"error":"coverage","message":"' + 'm'.repeat(1000)).slice(0, 300)}`,
    ]);
    const [{ n }] = await sql<{ n: number }[]>`
      select failures::int as n from switchyard.wake_failures(45) where function_name = 'wf-bad'`;
    assert.equal(n, 1, 'the window bounds what counts');
    await sql`delete from net._http_response where id = 13`;
    const [timeout] = await sql<{ last_error: string }[]>`
      select last_error from switchyard.wake_failures() where function_name = 'wf-bad'`;
    assert.equal(timeout.last_error, 'timed out');
  } finally {
    await sql.unsafe('drop schema net cascade');
  }
  for (const bad of ['0', 'null', '-5']) {
    hostile++;
    const r = await refusal(() => sql.unsafe(`select * from switchyard.wake_failures(${bad})`));
    assert.equal(r.code, '22023');
    assert.equal(r.detail.rule, 'integer_min');
  }
});

Deno.test('teardown', async () => {
  console.log(`hostile inputs tried here: ${hostile}`);
  await db.close();
});
