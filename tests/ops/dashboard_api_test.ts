/**
 * The dashboard's JSON API (issue 15) over real HTTP against real PostgreSQL with real
 * workers: the bearer on actions (and on reads when required), 400s that name the
 * parameter and its rule, and data that matches the database.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createDashboard,
  type DashboardOptions,
  type DashboardOverview,
  type DashboardRunDetail,
  fenceBegin,
  fenceEnd,
  type RunOverview,
} from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { freePort } from '../../cli/_util.ts';
import { waitFor } from '../_helpers/wait.ts';
import { serveFunctions } from '../../cli/serve.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import {
  ARCHIVE_RUNS,
  BILLING_FUNCTION,
  type DashboardWork,
  FAILURE,
  PAUSE_REASON,
  PAUSED_FUNCTION,
  startDashboardWork,
  V2_RUNS,
} from '../_helpers/dashboard_work.ts';

const SECRET = 'dashboard-api-test-secret';
const db = await createTestDatabase();
const client = untypedClient(db.url);

/** Serves a dashboard on a free port (with `SECRET` unless `env` overrides it). */
function serve(env: Record<string, string> = {}, options: Partial<DashboardOptions> = {}) {
  const vars: Record<string, string> = { SWITCHYARD_WORKER_SECRET: SECRET, ...env };
  const dashboard = createDashboard({ source: client, env: (n) => vars[n], ...options });
  const port = freePort();
  const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
  return { url: `http://127.0.0.1:${port}`, close: () => server.shutdown() };
}

async function call(
  url: string,
  init: RequestInit & { bearer?: string; json?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers = new Headers(init.headers);
  if (init.bearer) headers.set('authorization', `Bearer ${init.bearer}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  const response = await fetch(url, { ...init, headers, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

const pause = (base: string, fn: string, init: Parameters<typeof call>[1] = {}) =>
  call(`${base}/api/functions/${fn}/pause`, { method: 'POST', json: {}, ...init });

const runAction = (
  base: string,
  run: string,
  action: 'cancel' | 'retry',
  init: Parameters<typeof call>[1] = {},
) => call(`${base}/api/runs/${run}/${action}`, { method: 'POST', json: {}, ...init });

/** The run's row as the database has it. */
const runRow = async (run: string) =>
  (await db.sql`select status, error, cancelled_at, failed_at from switchyard.runs
    where run_id = ${run}`)[0];

/** The run's events as the database has them: `[step or null, event]`, in order. */
const eventsInDb = async (run: string) =>
  (await db.sql`select step_slug, event from switchyard.run_events where run_id = ${run}
    order by event_id`).map((r) => [r.step_slug, r.event]);

const main = serve();
const base = main.url;
let work: DashboardWork;

Deno.test('empty database: the overview answers with nothing in it, the page loads', async () => {
  const empty = await createTestDatabase();
  const emptyClient = untypedClient(empty.url);
  const dashboard = createDashboard({ source: emptyClient, env: () => undefined });
  try {
    const response = await dashboard.fetch(new Request('http://localhost/api/overview'));
    assert.equal(response.status, 200);
    const o: DashboardOverview = await response.json();
    assert.deepEqual(o.queues, []);
    assert.deepEqual(o.runs, []);
    assert.equal(o.fence, null);
    assert.equal(o.access.mode, 'actions');
    assert.equal(o.access.authorized, false);
    assert.match(String(o.access.problem), /no secret is configured/);
    const page = await dashboard.fetch(new Request('http://localhost/'));
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /text\/html/);
    const html = await page.text();
    assert.match(html, /Switchyard/);
    assert.doesNotMatch(html, /(src|href)="https?:/, 'nothing is loaded from elsewhere');
    const csp = page.headers.get('content-security-policy')!;
    const nonce = /'nonce-([0-9a-f]+)'/.exec(csp)![1];
    assert.ok(html.includes(`<script nonce="${nonce}">`), 'the script carries the CSP nonce');
  } finally {
    await emptyClient.close();
    await empty.close();
  }
});

Deno.test('running work: queues, functions, versions, depth, runs and throughput match the database', async () => {
  work = await startDashboardWork(db.url, db.sql, client);
  const { status, body } = await call(`${base}/api/overview`);
  assert.equal(status, 200);
  const o = body as unknown as DashboardOverview;
  const q = (name: string) => {
    const found = o.queues.find((x) => x.queueName === name);
    assert.ok(found, `queue ${name} is listed`);
    return found;
  };
  assert.deepEqual(
    o.queues.map((x) => x.queueName),
    ['dash_archive', 'dash_billing', 'dash_fetch', 'dash_render'],
  );

  // Queue functions: live workers with a recent heartbeat; the paused one with its reason.
  const fetchFn = q('dash_fetch').functions[0];
  assert.equal(fetchFn.functionName, 'dash-fetch-worker');
  assert.equal(fetchFn.enabled, true);
  assert.equal(fetchFn.pausedAt, null);
  assert.equal(fetchFn.liveWorkers, 1);
  assert.equal(fetchFn.workers.length, 1);
  assert.equal(fetchFn.workers[0].live, true);
  const [w] = await db.sql`select worker_id::text, last_heartbeat_at from switchyard.workers
    where function_name = 'dash-fetch-worker' and stopped_at is null`;
  assert.equal(fetchFn.workers[0].workerId, w.worker_id);
  assert.ok(Date.now() - Date.parse(fetchFn.workers[0].lastHeartbeatAt) < 15_000);
  const paused = q('dash_archive').functions[0];
  assert.equal(paused.functionName, PAUSED_FUNCTION);
  assert.equal(paused.pauseReason, PAUSE_REASON);
  assert.ok(paused.pausedAt);
  assert.equal(paused.liveWorkers, 0);

  // Depth: the paused queue's backlog is visible; the held v1 tasks are hidden.
  assert.deepEqual(
    [q('dash_archive').depth?.visible, q('dash_archive').depth?.hidden],
    [ARCHIVE_RUNS, 0],
  );
  assert.equal(q('dash_fetch').depth?.hidden, 2);
  assert.equal(q('dash_fetch').depth?.visible, 0);
  assert.equal(q('dash_fetch').depth?.ownership, 'shared');

  // Versions: the drain_status rows of each queue.
  const fetchVersions = Object.fromEntries(q('dash_fetch').versions.map((v) => [v.flowSlug, v]));
  assert.equal(fetchVersions.reportsV2.state, 'active');
  assert.equal(fetchVersions.reportsV1.state, 'draining');
  assert.equal(fetchVersions.reportsV1.alias, 'reports');
  assert.equal(fetchVersions.reportsV1.startedRuns, 2);
  assert.equal(fetchVersions.reportsV1.startedTasks, 2);
  assert.equal(fetchVersions.reportsV1.queuedTasks, 0);
  const direct = await db.sql`select flow_slug, state from switchyard.drain_status('dash_render')`;
  assert.deepEqual(
    q('dash_render').versions.map((v) => [v.flowSlug, v.state]),
    direct.map((r) => [r.flow_slug, r.state]),
  );

  // Throughput: completed tasks of the last hour, per queue, equal the database's count.
  for (const name of ['dash_fetch', 'dash_render', 'dash_billing']) {
    const t = q(name).throughput!;
    assert.equal(t.perMinute.length, 60);
    const [{ n }] = await db.sql`select count(*)::int as n from switchyard.step_tasks
      where queue_name = ${name} and status = 'completed'`;
    assert.equal(t.total, n, `throughput of ${name}`);
    assert.equal(t.perMinute.reduce((a, b) => a + b, 0), n);
  }
  assert.equal(q('dash_fetch').throughput!.total, V2_RUNS);
  assert.equal(q('dash_billing').throughput!.total, 0, 'a failed task is not a completed one');

  // Runs: alias, concrete version, status, duration; the failed one's error and step.
  assert.equal(o.runs.length, 2 + ARCHIVE_RUNS + V2_RUNS + 1);
  const byId = new Map(o.runs.map((r) => [r.runId, r]));
  const failed = byId.get(work.failedRun)!;
  assert.equal(failed.status, 'failed');
  assert.equal(failed.startedAs, 'billing');
  assert.equal(failed.flowSlug, 'billingV1');
  assert.equal(failed.failedStep, 'charge');
  assert.match(failed.error!, new RegExp(FAILURE));
  assert.equal(failed.steps[0].error?.includes(FAILURE), true);
  assert.equal(failed.steps[0].attempts, 1);
  const held = byId.get(work.v1Runs[0])!;
  assert.deepEqual([held.status, held.startedAs, held.flowSlug], [
    'started',
    'reports',
    'reportsV1',
  ]);
  assert.deepEqual(held.steps.map((s) => [s.stepSlug, s.status, s.queueName]), [
    ['fetch', 'started', 'dash_fetch'],
    ['render', 'created', 'dash_render'],
  ]);
  assert.ok(held.steps[0].startedAt && held.steps[0].queuedAt && !held.steps[0].finishedAt);
  const done = byId.get(work.v2Runs[0])!;
  assert.deepEqual([done.status, done.flowSlug], ['completed', 'reportsV2']);
  const [times] = await db.sql`select started_at, completed_at from switchyard.runs
    where run_id = ${work.v2Runs[0]}`;
  // SQL computes the duration from microseconds; JavaScript dates keep milliseconds.
  const expected = (times.completed_at as Date).getTime() - (times.started_at as Date).getTime();
  assert.ok(
    Math.abs(done.durationMs - expected) <= 1,
    `duration ${done.durationMs} ms, timestamps say ${expected} ms`,
  );
  assert.ok(done.steps.every((s) => s.status === 'completed' && s.finishedAt));
  const starts = o.runs.map((r) => Date.parse(r.startedAt as unknown as string));
  assert.deepEqual(starts, [...starts].sort((a, b) => b - a), 'newest first');
  assert.equal(o.fence, null);
});

Deno.test('runs: filters by status and queue, one run by id', async () => {
  const failed = await call(`${base}/api/runs?status=failed`);
  assert.equal(failed.status, 200);
  const runs = failed.body.runs as RunOverview[];
  assert.deepEqual(runs.map((r) => r.runId), [work.failedRun]);
  const onQueue = (await call(`${base}/api/runs?queue=dash_archive&limit=2`)).body
    .runs as RunOverview[];
  assert.equal(onQueue.length, 2);
  assert.ok(onQueue.every((r) => r.flowSlug === 'archiveV1'));
  const one = await call(`${base}/api/runs/${work.v1Runs[1]}`);
  assert.equal(one.status, 200);
  assert.equal((one.body.run as RunOverview).runId, work.v1Runs[1]);
  const overview = (await call(`${base}/api/overview?runs=1&status=completed&minutes=5`))
    .body as unknown as DashboardOverview;
  assert.equal(overview.runs.length, 1);
  assert.equal(overview.runs[0].status, 'completed');
  assert.equal(overview.queues[0].throughput!.perMinute.length, 5);
  const missing = await call(`${base}/api/runs/${crypto.randomUUID()}`);
  assert.equal(missing.status, 404);
});

Deno.test('run actions need the bearer: cancel and retry without it are refused and change nothing', async () => {
  const targets: [string, 'cancel' | 'retry'][] = [
    [work.v1Runs[0], 'cancel'],
    [work.failedRun, 'retry'],
  ];
  for (const [run, action] of targets) {
    const missing = await runAction(base, run, action);
    assert.equal(missing.status, 401, action);
    assert.equal(missing.body.error, 'unauthorized');
    assert.match(String(missing.body.message), /missing bearer/);
    const wrong = await runAction(base, run, action, { bearer: 'not-the-secret' });
    assert.equal(wrong.status, 401, action);
    assert.match(String(wrong.body.message), /not an accepted worker secret/);
    // The same guard as pause and resume: POST only, JSON only, from the page's origin.
    const get = await call(`${base}/api/runs/${run}/${action}`, { bearer: SECRET });
    assert.deepEqual([get.status, get.body.error], [405, 'method_not_allowed'], action);
    const form = await call(`${base}/api/runs/${run}/${action}`, {
      method: 'POST',
      bearer: SECRET,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'reason=x',
    });
    assert.equal(form.status, 415, action);
    const foreign = await runAction(base, run, action, {
      bearer: SECRET,
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403, action);
  }
  assert.equal((await runRow(work.v1Runs[0])).status, 'started', 'nothing cancelled it');
  assert.equal((await runRow(work.failedRun)).status, 'failed', 'nothing retried it');
  const readOnly = (await call(`${base}/api/overview`)).body as unknown as DashboardOverview;
  assert.deepEqual(readOnly.access.actions, []);
  const authorized = (await call(`${base}/api/overview`, { bearer: SECRET }))
    .body as unknown as DashboardOverview;
  assert.deepEqual(authorized.access.actions, [
    'pause',
    'resume',
    'cancel',
    'retry',
    'signal',
    'rerun',
    'fork',
    'move',
  ]);
});

Deno.test('run actions: 400 for a bad run id or reason, 404 for an unknown run, 409 for a run in the wrong state', async () => {
  const bad: [string, 'cancel' | 'retry', unknown, string, RegExp][] = [
    ['not-a-uuid', 'cancel', {}, 'run', /run id "not-a-uuid" is invalid: use a UUID/],
    ['not-a-uuid', 'retry', {}, 'run', /run id "not-a-uuid" is invalid: use a UUID/],
    ['%zz', 'cancel', {}, 'run', /run id "%zz" is invalid: use a UUID/],
    [work.v1Runs[0], 'cancel', { reason: '' }, 'reason', /non-empty string/],
    [work.v1Runs[0], 'cancel', { reason: '   ' }, 'reason', /non-empty string/],
    [work.v1Runs[0], 'cancel', { reason: 42 }, 'reason', /non-empty string/],
    [work.v1Runs[0], 'cancel', { reason: 'x'.repeat(1001) }, 'reason', /at most 1000 characters/],
    [work.v1Runs[0], 'cancel', { why: 'x' }, 'why', /unknown: use "reason"/],
    [work.v1Runs[0], 'cancel', [1], 'body', /JSON object/],
    [work.failedRun, 'retry', { reason: 'x' }, 'reason', /field "reason" is unknown: send \{\}/],
  ];
  for (const [run, action, json, parameter, rule] of bad) {
    const { status, body } = await runAction(base, run, action, { bearer: SECRET, json });
    const what = `${action} ${run} ${JSON.stringify(json).slice(0, 40)}`;
    assert.equal(status, 400, what);
    assert.equal(body.error, 'bad_request', what);
    assert.equal(body.parameter, parameter, what);
    assert.match(String(body.message), rule, what);
  }

  const unknown = crypto.randomUUID();
  for (const action of ['cancel', 'retry'] as const) {
    const { status, body } = await runAction(base, unknown, action, { bearer: SECRET });
    assert.equal(status, 404, action);
    assert.equal(body.error, 'not_found');
    assert.match(String(body.message), new RegExp(`run ${unknown} does not exist`));
  }

  const wrongState: [string, 'cancel' | 'retry', string, string, RegExp][] = [
    [
      work.v2Runs[0],
      'cancel',
      'run_not_started',
      'completed',
      /only a started run can be cancelled/,
    ],
    [work.failedRun, 'cancel', 'run_not_started', 'failed', /only a started run can be cancelled/],
    [work.v1Runs[0], 'retry', 'run_not_failed', 'started', /only a failed run can be retried/],
    [work.v2Runs[0], 'retry', 'run_not_failed', 'completed', /only a failed run can be retried/],
  ];
  for (const [run, action, rule, runStatus, message] of wrongState) {
    const { status, body } = await runAction(base, run, action, { bearer: SECRET });
    assert.equal(status, 409, `${action} a ${runStatus} run`);
    assert.deepEqual([body.error, body.rule, body.status], ['conflict', rule, runStatus]);
    assert.match(String(body.message), message);
    assert.match(String(body.message), new RegExp(run));
  }
  assert.deepEqual(
    await Promise.all(
      [work.v1Runs[0], work.failedRun, work.v2Runs[0]].map(async (r) => (await runRow(r)).status),
    ),
    ['started', 'failed', 'completed'],
    'no refused request changed a run',
  );
});

Deno.test('cancel: a started run ends cancelled with its reason, a second cancel keeps it; the detail lists the events', async () => {
  const run = work.v1Runs[0];
  const ok = await runAction(base, run, 'cancel', {
    bearer: SECRET,
    json: { reason: '  the customer withdrew the report  ' },
  });
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body.result, { runId: run, changed: true });
  const row = await runRow(run);
  assert.equal(row.status, 'cancelled');
  assert.equal(row.error, 'cancelled: the customer withdrew the report');
  assert.ok(row.cancelled_at);
  const steps = await db.sql`select step_slug, status from switchyard.step_states
    where run_id = ${run} order by step_slug`;
  assert.deepEqual(steps.map((s) => [s.step_slug, s.status]), [
    ['fetch', 'cancelled'],
    ['render', 'cancelled'],
  ]);

  const again = await runAction(base, run, 'cancel', { bearer: SECRET, json: { reason: 'other' } });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body.result, { runId: run, changed: false });
  assert.equal((await runRow(run)).error, 'cancelled: the customer withdrew the report');
  const retried = await runAction(base, run, 'retry', { bearer: SECRET });
  assert.deepEqual([retried.status, retried.body.status], [409, 'cancelled']);

  // Without a reason the dashboard gives one; the run's queued message is archived.
  const [archived] = await db.sql`select run_id from switchyard.runs
    where flow_slug = 'archiveV1' order by started_at limit 1`;
  const visible = async () =>
    ((await call(`${base}/api/overview`)).body as unknown as DashboardOverview).queues
      .find((q) => q.queueName === 'dash_archive')!.depth!.visible;
  assert.equal(await visible(), ARCHIVE_RUNS);
  const byDefault = await runAction(base, archived.run_id, 'cancel', { bearer: SECRET });
  assert.equal(byDefault.status, 200);
  assert.equal((await runRow(archived.run_id)).error, 'cancelled: from the dashboard');
  assert.equal(await visible(), ARCHIVE_RUNS - 1);

  const detail = await call(`${base}/api/runs/${run}`);
  assert.equal(detail.status, 200);
  const d = detail.body as unknown as DashboardRunDetail;
  assert.equal(d.run.status, 'cancelled');
  assert.equal(d.run.error, 'cancelled: the customer withdrew the report');
  assert.ok(d.run.finishedAt, 'a cancelled run is finished');
  assert.equal(d.eventsTruncated, false);
  const listed = d.events.map((e) => [e.stepSlug, e.event]);
  assert.deepEqual(listed, await eventsInDb(run));
  assert.deepEqual(listed[0], [null, 'started']);
  assert.deepEqual(listed.at(-1), [null, 'cancelled']);
  assert.ok(listed.some(([s, e]) => s === 'fetch' && e === 'cancelled'));
  assert.ok(d.events.every((e) => e.runId === run && e.flowSlug === 'reportsV1'));
  const ids = d.events.map((e) => e.eventId);
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'oldest first');
  const cancelledRuns = (await call(`${base}/api/runs?status=cancelled`)).body
    .runs as RunOverview[];
  assert.deepEqual(cancelledRuns.map((r) => r.runId).sort(), [run, archived.run_id].sort());
});

Deno.test('retry: a failed run starts again and completes; retrying it again is refused', async () => {
  const run = work.failedRun;
  const ok = await runAction(base, run, 'retry', { bearer: SECRET });
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body.result, { runId: run, requeued: 1 });
  // The billing handler fails only a run's first attempt: the retried one succeeds.
  await waitFor(
    'the retried run to complete',
    async () => (await runRow(run)).status === 'completed',
  );
  assert.equal((await runRow(run)).failed_at, null);
  const d = (await call(`${base}/api/runs/${run}`)).body as unknown as DashboardRunDetail;
  assert.equal(d.run.status, 'completed');
  const listed = d.events.map((e) => [e.stepSlug, e.event]);
  assert.deepEqual(listed, await eventsInDb(run));
  const at = (step: string | null, event: string) =>
    listed.findIndex(([s, e]) => s === step && e === event);
  assert.ok(at(null, 'failed') >= 0 && at(null, 'failed') < at(null, 'retried'));
  assert.ok(at(null, 'retried') < at('charge', 'completed'));
  assert.deepEqual(listed.at(-1), [null, 'completed']);
  const again = await runAction(base, run, 'retry', { bearer: SECRET });
  assert.equal(again.status, 409);
  assert.deepEqual([again.body.rule, again.body.status], ['run_not_failed', 'completed']);
});

Deno.test('the run detail lists the latest 200 events, oldest first, and says when there are more', async () => {
  const [{ run_id: run }] = await db.sql`select run_id from switchyard.runs
    where flow_slug = 'archiveV1' and status = 'started' order by started_at limit 1`;
  const before = (await call(`${base}/api/runs/${run}`)).body as unknown as DashboardRunDetail;
  assert.equal(before.eventsTruncated, false);
  assert.deepEqual(before.events.map((e) => [e.stepSlug, e.event]), await eventsInDb(run));
  // Synthetic rows (the table takes any): more than the detail shows.
  await db.sql`insert into switchyard.run_events (run_id, flow_slug, step_slug, event)
    select ${run}::uuid, 'archiveV1', 'compact', 'started' from generate_series(1, 250)`;
  const d = (await call(`${base}/api/runs/${run}`)).body as unknown as DashboardRunDetail;
  assert.equal(d.eventsTruncated, true);
  const newest = await db.sql`select event_id::int as id from switchyard.run_events
    where run_id = ${run} order by event_id desc limit 200`;
  assert.deepEqual(d.events.map((e) => e.eventId), newest.map((r) => r.id).reverse());
});

Deno.test('bad parameters are refused with 400 naming the parameter and its rule', async () => {
  const cases: [string, string, RegExp][] = [
    ['/api/runs?limit=0', 'limit', /integer from 1 to 200/],
    ['/api/runs?limit=abc', 'limit', /integer from 1 to 200/],
    ['/api/runs?limit=201', 'limit', /integer from 1 to 200/],
    ['/api/runs?status=done', 'status', /"started", "completed", "failed"/],
    ['/api/runs?queue=Bad-Name', 'queue', /lower-case letters/],
    ['/api/runs?sort=asc', 'sort', /unknown: use "limit", "status", "queue"/],
    ['/api/runs?limit=1&limit=2', 'limit', /more than once/],
    ['/api/overview?minutes=0', 'minutes', /integer from 1 to 1440/],
    ['/api/overview?runs=-1', 'runs', /integer from 1 to 200/],
    ['/api/runs/not-a-uuid', 'run', /use a UUID/],
  ];
  for (const [path, parameter, rule] of cases) {
    const { status, body } = await call(`${base}${path}`);
    assert.equal(status, 400, path);
    assert.equal(body.error, 'bad_request', path);
    assert.equal(body.parameter, parameter, path);
    assert.match(String(body.message), rule, path);
    assert.match(String(body.message), new RegExp(`"${parameter}"|run id`), path);
  }
  const actions: [string, unknown, string, RegExp][] = [
    ['Bad_Name', {}, 'function', /\^\[a-z\]\[a-z0-9_-\]\*\$/],
    // A malformed percent-encoding is refused like any bad name (it was a 503 once).
    ['%zz', {}, 'function', /function name "%zz" is invalid/],
    [BILLING_FUNCTION, { reason: '' }, 'reason', /non-empty string/],
    [BILLING_FUNCTION, { reason: 42 }, 'reason', /non-empty string/],
    [BILLING_FUNCTION, { reason: 'x'.repeat(1001) }, 'reason', /at most 1000 characters/],
    [BILLING_FUNCTION, { why: 'x' }, 'why', /unknown: use "reason"/],
    [BILLING_FUNCTION, [1], 'body', /JSON object/],
  ];
  for (const [fn, json, parameter, rule] of actions) {
    const { status, body } = await pause(base, fn, { bearer: SECRET, json });
    assert.equal(status, 400, `${fn} ${JSON.stringify(json)}`);
    assert.equal(body.parameter, parameter);
    assert.match(String(body.message), rule);
  }
  const notJson = await call(`${base}/api/functions/${BILLING_FUNCTION}/pause`, {
    method: 'POST',
    bearer: SECRET,
    headers: { 'content-type': 'application/json' },
    body: '{nope',
  });
  assert.deepEqual([notJson.status, notJson.body.parameter], [400, 'body']);
  const [{ paused_at }] = await db.sql`select paused_at from switchyard.worker_functions
    where function_name = ${BILLING_FUNCTION}`;
  assert.equal(paused_at, null, 'no refused request paused anything');
});

Deno.test('actions need the bearer; with it, pause and resume change the database', async () => {
  const missing = await pause(base, BILLING_FUNCTION);
  assert.equal(missing.status, 401);
  assert.equal(missing.body.error, 'unauthorized');
  assert.match(String(missing.body.message), /missing bearer/);
  const wrong = await pause(base, BILLING_FUNCTION, { bearer: 'not-the-secret' });
  assert.equal(wrong.status, 401);
  assert.match(String(wrong.body.message), /not an accepted worker secret/);
  const row = async () =>
    (await db.sql`select paused_at, pause_reason from switchyard.worker_functions
      where function_name = ${BILLING_FUNCTION}`)[0];
  assert.equal((await row()).paused_at, null, 'refused requests changed nothing');

  // Actions come from the page: JSON only, same origin only, POST only.
  const form = await call(`${base}/api/functions/${BILLING_FUNCTION}/pause`, {
    method: 'POST',
    bearer: SECRET,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'reason=x',
  });
  assert.equal(form.status, 415);
  const foreign = await pause(base, BILLING_FUNCTION, {
    bearer: SECRET,
    headers: { origin: 'https://evil.example' },
  });
  assert.equal(foreign.status, 403);
  const get = await call(`${base}/api/functions/${BILLING_FUNCTION}/pause`, { bearer: SECRET });
  assert.equal(get.status, 405);
  assert.equal((await row()).paused_at, null);

  const ok = await pause(base, BILLING_FUNCTION, {
    bearer: SECRET,
    json: { reason: 'investigating declines' },
  });
  assert.equal(ok.status, 200);
  assert.deepEqual(
    { ...(ok.body.result as Record<string, unknown>), pausedAt: undefined },
    {
      functionName: BILLING_FUNCTION,
      changed: true,
      reason: 'investigating declines',
      pausedAt: undefined,
    },
  );
  assert.equal((await row()).pause_reason, 'investigating declines');
  const again = await pause(base, BILLING_FUNCTION, { bearer: SECRET, json: { reason: 'other' } });
  assert.equal((again.body.result as { changed: boolean }).changed, false);
  assert.equal((await row()).pause_reason, 'investigating declines', 'the first reason is kept');
  const overview = (await call(`${base}/api/overview`, { bearer: SECRET }))
    .body as unknown as DashboardOverview;
  assert.deepEqual(overview.access.actions, [
    'pause',
    'resume',
    'cancel',
    'retry',
    'signal',
    'rerun',
    'fork',
    'move',
  ]);
  assert.equal(
    overview.queues.find((x) => x.queueName === 'dash_billing')!.functions[0].pauseReason,
    'investigating declines',
  );

  const resumeNoBearer = await call(`${base}/api/functions/${BILLING_FUNCTION}/resume`, {
    method: 'POST',
    json: {},
  });
  assert.equal(resumeNoBearer.status, 401);
  const resumed = await call(`${base}/api/functions/${BILLING_FUNCTION}/resume`, {
    method: 'POST',
    bearer: SECRET,
    json: {},
  });
  assert.equal(resumed.status, 200);
  assert.deepEqual(resumed.body.result, {
    functionName: BILLING_FUNCTION,
    changed: true,
    previousReason: 'investigating declines',
  });
  assert.equal((await row()).paused_at, null);

  const unknown = await pause(base, 'nope-worker', { bearer: SECRET });
  assert.equal(unknown.status, 404);
  assert.match(String(unknown.body.message), /nope-worker/);
  assert.equal((await call(`${base}/api/nothing`)).status, 404);
});

Deno.test('without a configured secret actions are refused; SWITCHYARD_AUTH=disabled opens them', async () => {
  const noSecret = serve({ SWITCHYARD_WORKER_SECRET: '' });
  const open = serve({ SWITCHYARD_WORKER_SECRET: '', SWITCHYARD_AUTH: 'disabled' });
  try {
    const refused = await pause(noSecret.url, BILLING_FUNCTION, { bearer: SECRET });
    assert.equal(refused.status, 401);
    assert.match(String(refused.body.message), /no secret is configured/);
    const overview = (await call(`${open.url}/api/overview`)).body as unknown as DashboardOverview;
    assert.equal(overview.access.authorized, true);
    const resumed = await call(`${open.url}/api/functions/${BILLING_FUNCTION}/resume`, {
      method: 'POST',
      json: {},
    });
    assert.equal(resumed.status, 200);
  } finally {
    await noSecret.close();
    await open.close();
  }
});

Deno.test('SWITCHYARD_DASHBOARD_AUTH=required refuses reads without the bearer', async () => {
  const server = serve({ SWITCHYARD_DASHBOARD_AUTH: 'required' });
  const required = server.url;
  try {
    for (const path of ['/api/overview', '/api/runs', `/api/runs/${work.failedRun}`]) {
      const { status, body } = await call(`${required}${path}`);
      assert.equal(status, 401, path);
      assert.equal(body.error, 'unauthorized');
      assert.equal((await call(`${required}${path}`, { bearer: 'wrong' })).status, 401);
    }
    const bad = await call(`${required}/api/runs?limit=0`);
    assert.equal(bad.status, 401, 'nothing is answered without the bearer, not even a 400');
    const ok = await call(`${required}/api/overview`, { bearer: SECRET });
    assert.equal(ok.status, 200);
    const o = ok.body as unknown as DashboardOverview;
    assert.deepEqual([o.access.mode, o.access.authorized], ['required', true]);
    const page = await fetch(`${required}/`);
    assert.equal(page.status, 200, 'the static page loads and asks for the bearer');
    assert.doesNotMatch(await page.text(), /dash_fetch/, 'the page carries no data');
  } finally {
    await server.close();
  }
  assert.throws(
    () =>
      createDashboard({
        source: client,
        env: (n) => (n === 'SWITCHYARD_DASHBOARD_AUTH' ? 'open' : undefined),
      }),
    /SWITCHYARD_DASHBOARD_AUTH "open" is invalid: use "actions" .* or "required"/,
  );
});

Deno.test('on the hosted runtime reads need the bearer by default, and disabled auth is refused', async () => {
  const hosted = serve({ SB_REGION: 'eu-west-1' });
  try {
    const anonymous = await call(`${hosted.url}/api/overview`);
    assert.deepEqual([anonymous.status, anonymous.body.error], [401, 'unauthorized']);
    const ok = await call(`${hosted.url}/api/overview`, { bearer: SECRET });
    assert.equal(ok.status, 200);
    const o = ok.body as unknown as DashboardOverview;
    assert.deepEqual([o.access.mode, o.access.authorized], ['required', true]);
  } finally {
    await hosted.close();
  }
  // An operator who wants open reads there says so.
  const open = serve({ DENO_DEPLOYMENT_ID: 'd1', SWITCHYARD_DASHBOARD_AUTH: 'actions' });
  try {
    assert.equal((await call(`${open.url}/api/overview`)).status, 200);
  } finally {
    await open.close();
  }
  for (
    const [env, auth, how] of [
      [
        { SB_REGION: 'eu-west-1', SWITCHYARD_AUTH: 'disabled' },
        undefined,
        /SWITCHYARD_AUTH=disabled/,
      ],
      [{ DENO_DEPLOYMENT_ID: 'd1' }, 'disabled', /auth: 'disabled'/],
    ] as const
  ) {
    const vars: Record<string, string> = env;
    assert.throws(
      () => createDashboard({ source: client, env: (n) => vars[n], auth }),
      (e: Error) =>
        how.test(e.message) &&
        /is refused on Supabase's hosted runtime \((SB_REGION|DENO_DEPLOYMENT_ID) is set\)/.test(
          e.message,
        ),
    );
  }
  // Locally, disabled auth still opens the actions (deno task serve, the demo).
  const local = createDashboard({ source: client, env: () => undefined, auth: 'disabled' });
  const o = await (await local.fetch(new Request('http://localhost/api/overview'))).json();
  assert.deepEqual([o.access.mode, o.access.authorized], ['actions', true]);
});

Deno.test('an open fence shows with its progress', async () => {
  await fenceBegin(client, [PAUSED_FUNCTION, 'dash-render-worker']);
  try {
    const o = (await call(`${base}/api/overview`)).body as unknown as DashboardOverview;
    assert.ok(o.fence);
    const members = Object.fromEntries(o.fence.functions.map((f) => [f.functionName, f]));
    assert.deepEqual(Object.keys(members).sort(), ['dash-archive-worker', 'dash-render-worker']);
    assert.equal(members[PAUSED_FUNCTION].quiet, true);
    assert.equal(members[PAUSED_FUNCTION].paused, true);
    assert.equal(members['dash-render-worker'].wasEnabled, true);
    assert.equal(members['dash-render-worker'].enabled, false);
    const render = o.queues.find((x) => x.queueName === 'dash_render')!.functions[0];
    assert.equal(render.enabled, false, 'the fenced function shows disabled');
  } finally {
    await fenceEnd(client);
  }
});

Deno.test("a function's recorded refusals show with it, the latest first", async () => {
  await db.sql`select switchyard.record_refusal('dash-render-worker', 'worker_config', 'old')`;
  await db.sql`select switchyard.record_refusal('dash-render-worker', 'coverage',
                                                'the registry lacks dashRenderV9/render')`;
  await db.sql`select switchyard.record_refusal('dash-render-worker', 'coverage',
                                                'the registry lacks dashRenderV9/render')`;
  try {
    const o = (await call(`${base}/api/overview`)).body as unknown as DashboardOverview;
    const render = o.queues.find((x) => x.queueName === 'dash_render')!.functions[0];
    assert.deepEqual(
      render.refusals.map((r) => [r.functionName, r.refusal, r.count, r.message]),
      [
        ['dash-render-worker', 'coverage', 2, 'the registry lacks dashRenderV9/render'],
        ['dash-render-worker', 'worker_config', 1, 'old'],
      ],
    );
    const [latest] = render.refusals;
    assert.ok(Date.parse(String(latest.lastAt)) >= Date.parse(String(latest.firstAt)));
    const billing = o.queues.flatMap((q) => q.functions).find((f) =>
      f.functionName === BILLING_FUNCTION
    )!;
    assert.deepEqual(billing.refusals, []);
    // The page shows the latest one in the function's row.
    const page = await (await fetch(`${base}/`)).text();
    assert.match(page, /data-refusal="/);
  } finally {
    await db.sql`delete from switchyard.refusals where function_name = 'dash-render-worker'`;
  }
});

Deno.test('deno task serve: the gateway serves the dashboard at /dashboard/', async () => {
  const project = await mkdtemp(join(tmpdir(), 'switchyard-dash-'));
  const served = await serveFunctions({
    projectDir: project,
    env: { DATABASE_URL: db.url, SWITCHYARD_WORKER_SECRET: SECRET },
    log: () => {},
  });
  try {
    assert.equal(served.dashboardUrl, `${served.url}/dashboard/`);
    const page = await fetch(served.dashboardUrl!);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /const BASE = "\/dashboard"/);
    const o = await call(`${served.url}/dashboard/api/overview`);
    assert.equal(o.status, 200);
    assert.equal((o.body as unknown as DashboardOverview).queues.length, 4);
    const refused = await pause(`${served.url}/dashboard`, BILLING_FUNCTION);
    assert.equal(refused.status, 401);
    const redirect = await fetch(`${served.url}/dashboard`, { redirect: 'manual' });
    await redirect.body?.cancel();
    assert.equal(redirect.status, 302);
  } finally {
    await served.close();
    await rm(project, { recursive: true, force: true });
  }
});

Deno.test('privileges: the service role may call the dashboard functions, anon and authenticated not', async () => {
  const rows = await db.sql`
    select p.proname, has_function_privilege('service_role', p.oid, 'execute') as service,
           has_function_privilege('anon', p.oid, 'execute') as anon,
           has_function_privilege('authenticated', p.oid, 'execute') as authenticated, p.provolatile
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'switchyard' and p.proname like 'dashboard\\_%' order by 1`;
  assert.deepEqual(
    rows.map((r) => [r.proname, r.service, r.anon, r.authenticated, r.provolatile]),
    [
      ['dashboard_batches', true, false, false, 's'],
      ['dashboard_functions', true, false, false, 's'],
      ['dashboard_metrics_history', true, false, false, 's'],
      ['dashboard_queues', true, false, false, 's'],
      ['dashboard_row_triggers', true, false, false, 's'],
      ['dashboard_run_lineage', true, false, false, 's'],
      ['dashboard_run_origins', true, false, false, 's'],
      ['dashboard_run_retries', true, false, false, 's'],
      ['dashboard_runs', true, false, false, 's'],
      ['dashboard_throughput', true, false, false, 's'],
    ],
  );
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await work?.stop();
  await main.close();
  await client.close();
  await db.close();
});
