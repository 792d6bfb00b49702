/**
 * Conditional steps (issue 12): `if` / `ifNot` JSON containment evaluated in SQL over the
 * step's input, `whenUnmet` ('skip' | 'skip-cascade' | 'fail') and `whenExhausted`
 * ('fail' | 'skip' | 'skip-cascade'), with real workers on real PostgreSQL. Handlers count their calls, so a
 * skipped step is shown never to run: the decision is SQL's alone.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { OperationError } from '../../lib/errors.ts';
import { defineDeployedFlow, Flow, routeFlow, startWorker } from '../../lib/mod.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST } from '../_helpers/wait.ts';

const db = await createTestDatabase();
const client = untypedClient(db.url);
const base = { connectionString: db.url, ...FAST };

type Row = Record<string, unknown>;

async function steps(runId: string): Promise<Row[]> {
  return (await db.sql`
    -- The reason's first line: a handler's error is followed by its stack on the next lines.
    select ss.step_slug, ss.status, split_part(ss.skip_reason, E'\n', 1) as skip_reason,
           (select count(*)::int from switchyard.step_tasks t
             where t.run_id = ss.run_id and t.step_slug = ss.step_slug) as tasks
      from switchyard.step_states ss
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
     where ss.run_id = ${runId} order by st.step_index`).map((r) => ({ ...r }));
}

Deno.test('whenUnmet skip: an unmet if skips the step; dependents run without its output', async () => {
  const calls: string[] = [];
  const flow = new Flow<{ plan: 'free' | 'pro'; name: string }>({ slug: 'condSkip' })
    .step({ slug: 'greet' }, (input) => {
      calls.push('greet');
      return `hi ${input.name}`;
    })
    .step({ slug: 'upsell', if: { plan: 'free' } }, (input) => {
      calls.push('upsell');
      return `upgrade, ${input.name}`;
    })
    .step({ slug: 'vip', ifNot: { plan: 'free' } }, () => {
      calls.push('vip');
      return 'welcome to pro';
    })
    .step({ slug: 'send', dependsOn: ['greet', 'upsell', 'vip'] }, (input) => {
      calls.push('send');
      return {
        keys: Object.keys(input).sort(),
        upsell: input.upsell ?? null,
        vip: input.vip ?? null,
      };
    });
  const worker = await startWorker(flow, base);
  try {
    const pro = await client.startFlow('condSkip', { plan: 'pro', name: 'ada' });
    const proStatus = await client.waitForRun(pro);
    assert.equal(proStatus.status, 'completed');
    assert.deepEqual(proStatus.output, {
      send: { keys: ['greet', 'vip'], upsell: null, vip: 'welcome to pro' },
    });
    assert.deepEqual(await steps(pro), [
      { step_slug: 'greet', status: 'completed', skip_reason: null, tasks: 1 },
      {
        step_slug: 'upsell',
        status: 'skipped',
        skip_reason: 'condition not met (if {"plan": "free"}, ifNot none)',
        tasks: 0,
      },
      { step_slug: 'vip', status: 'completed', skip_reason: null, tasks: 1 },
      { step_slug: 'send', status: 'completed', skip_reason: null, tasks: 1 },
    ]);
    assert.ok(!calls.includes('upsell'), 'a skipped step never runs its handler');

    calls.length = 0;
    const free = await client.startFlow('condSkip', { plan: 'free', name: 'bob' });
    const freeStatus = await client.waitForRun(free);
    assert.deepEqual(freeStatus.output, {
      send: { keys: ['greet', 'upsell'], upsell: 'upgrade, bob', vip: null },
    });
    assert.deepEqual(calls.sort(), ['greet', 'send', 'upsell']);
    const status = await client.runStatus(free);
    assert.equal(status?.steps.find((s) => s.stepSlug === 'vip')?.status, 'skipped');
  } finally {
    await worker.stop();
  }
});

Deno.test('a condition reads the outputs of the dependencies (nested containment)', async () => {
  const notified: string[] = [];
  const flow = new Flow<{ text: string }>({ slug: 'condDeps' })
    .step({ slug: 'classify' }, (input) => ({
      label: /down|outage/.test(input.text) ? 'urgent' as const : 'routine' as const,
      tags: input.text.split(' '),
    }))
    .step(
      {
        slug: 'page',
        dependsOn: ['classify'],
        if: { classify: { label: 'urgent', tags: ['prod'] } },
      },
      (input) => {
        notified.push(input.classify.tags.join(' '));
        return true;
      },
    );
  const worker = await startWorker(flow, base);
  try {
    const urgentProd = await client.startFlow('condDeps', { text: 'prod is down' });
    const urgentStaging = await client.startFlow('condDeps', { text: 'staging is down' });
    const routine = await client.startFlow('condDeps', { text: 'prod docs typo' });
    assert.deepEqual((await client.waitForRun(urgentProd)).output, { page: true });
    // A skipped leaf is absent from the run output; the run still completes.
    assert.deepEqual((await client.waitForRun(urgentStaging)).output, {});
    assert.deepEqual((await client.waitForRun(routine)).output, {});
    assert.deepEqual(notified, ['prod is down']);
  } finally {
    await worker.stop();
  }
});

Deno.test('whenUnmet skip-cascade skips every step that depends on it; the rest completes', async () => {
  const ran: string[] = [];
  const flow = new Flow<{ region: string }>({ slug: 'condCascade' })
    .step({ slug: 'eu', if: { region: 'eu' }, whenUnmet: 'skip-cascade' }, () => {
      ran.push('eu');
      return 'gdpr';
    })
    .step({ slug: 'base' }, () => {
      ran.push('base');
      return 1;
    })
    .step({ slug: 'euReport', dependsOn: ['eu', 'base'] }, (input) => {
      ran.push('euReport');
      return `${input.eu}:${input.base}`;
    })
    .step({ slug: 'euMail', dependsOn: ['euReport'] }, (input) => {
      ran.push('euMail');
      return input.euReport;
    })
    .step({ slug: 'total', dependsOn: ['base'] }, (input) => {
      ran.push('total');
      return input.base + 1;
    });
  const worker = await startWorker(flow, base);
  try {
    const us = await client.startFlow('condCascade', { region: 'us' });
    const status = await client.waitForRun(us);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { total: 2 });
    assert.deepEqual(await steps(us), [
      {
        step_slug: 'eu',
        status: 'skipped',
        skip_reason: 'condition not met (if {"region": "eu"}, ifNot none)',
        tasks: 0,
      },
      { step_slug: 'base', status: 'completed', skip_reason: null, tasks: 1 },
      {
        step_slug: 'euReport',
        status: 'skipped',
        skip_reason: 'skip-cascade: step "eu" was skipped',
        tasks: 0,
      },
      {
        step_slug: 'euMail',
        status: 'skipped',
        skip_reason: 'skip-cascade: step "eu" was skipped',
        tasks: 0,
      },
      { step_slug: 'total', status: 'completed', skip_reason: null, tasks: 1 },
    ]);
    assert.deepEqual(ran.sort(), ['base', 'total']);
    const eu = await client.startFlow('condCascade', { region: 'eu' });
    assert.deepEqual((await client.waitForRun(eu)).output, { euMail: 'gdpr:1', total: 2 });
  } finally {
    await worker.stop();
  }
});

Deno.test('every step skipped: the run completes at start_flow with output {}', async () => {
  const flow = new Flow<{ on: boolean }>({ slug: 'condNone' })
    .step({ slug: 'a', if: { on: true }, whenUnmet: 'skip-cascade' }, () => 1)
    .step({ slug: 'b', dependsOn: ['a'] }, (input) => input.a + 1);
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
  const run = await client.startFlow('condNone', { on: false });
  // No worker runs: the decision is made inside start_flow.
  const status = await client.runStatus(run);
  assert.equal(status?.status, 'completed');
  assert.deepEqual(status?.output, {});
  const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from pgmq.q_condnone`;
  assert.equal(n, 0, 'no message was sent');
});

Deno.test('whenUnmet fail: an unmet condition fails the run naming the step; queued work is archived', async () => {
  const flow = new Flow<{ approved: boolean }>({ slug: 'condFail' })
    .step({ slug: 'audit' }, () => 'logged')
    .step({ slug: 'gate', if: { approved: true }, whenUnmet: 'fail' }, () => 'open')
    .step({ slug: 'ship', dependsOn: ['gate'] }, (input) => input.gate);
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
  const run = await client.startFlow('condFail', { approved: false });
  const status = await client.runStatus(run);
  assert.equal(status?.status, 'failed');
  assert.equal(
    status?.error,
    'step "gate" condition is not met (if {"approved": true}, ifNot none) and whenUnmet is fail',
  );
  assert.deepEqual((await steps(run)).map((s) => [s.step_slug, s.status, s.tasks]), [
    ['audit', 'started', 1],
    ['gate', 'failed', 0],
    ['ship', 'created', 0],
  ]);
  const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from pgmq.q_condfail`;
  assert.equal(n, 0, "the run's queued message (audit) was archived");
  // A met condition runs normally.
  const worker = await startWorker(flow, base);
  try {
    const ok = await client.startFlow('condFail', { approved: true });
    assert.deepEqual((await client.waitForRun(ok)).output, { ship: 'open', audit: 'logged' });
  } finally {
    await worker.stop();
  }
});

Deno.test('whenExhausted skip: after its last attempt the step is skipped and the run goes on', async () => {
  let attempts = 0;
  const flow = new Flow<{ id: string }>({ slug: 'condExhaust', maxAttempts: 2, baseDelay: 0 })
    .step({ slug: 'enrich', whenExhausted: 'skip' }, () => {
      attempts++;
      throw new Error('enrichment service down');
    })
    .step(
      { slug: 'store', dependsOn: ['enrich'] },
      (input) => ({ enriched: input.enrich ?? 'none' }),
    );
  const worker = await startWorker(flow, base);
  try {
    const run = await client.startFlow('condExhaust', { id: 'x' });
    const status = await client.waitForRun(run);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, { store: { enriched: 'none' } });
    assert.equal(attempts, 2);
    const [enrich] = await steps(run);
    assert.deepEqual(enrich, {
      step_slug: 'enrich',
      status: 'skipped',
      skip_reason: 'whenExhausted skip: failed after 2 attempt(s): Error: enrichment service down',
      tasks: 1,
    });
    const [task] = await db.sql`
      select status, attempts_count from switchyard.step_tasks
       where run_id = ${run} and step_slug = 'enrich'`;
    assert.deepEqual({ ...task }, { status: 'failed', attempts_count: 2 });
    const [{ n }] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from pgmq.q_condexhaust`;
    assert.equal(n, 0, 'every message was archived');
  } finally {
    await worker.stop();
  }
});

Deno.test('whenExhausted skip-cascade: its dependents are skipped too, never called; the run completes', async () => {
  const calls: string[] = [];
  const flow = new Flow<{ id: string }>({
    slug: 'condExhaustCascade',
    maxAttempts: 2,
    baseDelay: 0,
  })
    .step({ slug: 'enrich', whenExhausted: 'skip-cascade' }, (): { score: number } => {
      calls.push('enrich');
      throw new Error('enrichment service down');
    })
    .step({ slug: 'audit' }, (input) => {
      calls.push('audit');
      return `audited ${input.id}`;
    })
    // Typed as always present: with skip-cascade this step never runs without it.
    .step({ slug: 'store', dependsOn: ['enrich'] }, (input) => {
      calls.push('store');
      return input.enrich.score;
    })
    .step({ slug: 'notify', dependsOn: ['store', 'audit'] }, (input) => {
      calls.push('notify');
      return input.store;
    });
  const worker = await startWorker(flow, base);
  try {
    const run = await client.startFlow('condExhaustCascade', { id: 'x' });
    const status = await client.waitForRun(run);
    assert.equal(status.status, 'completed');
    assert.deepEqual(status.output, {}, 'every leaf was skipped');
    assert.deepEqual(calls.sort(), ['audit', 'enrich', 'enrich']);
    assert.deepEqual(await steps(run), [
      {
        step_slug: 'enrich',
        status: 'skipped',
        skip_reason:
          'whenExhausted skip-cascade: failed after 2 attempt(s): Error: enrichment service down',
        tasks: 1,
      },
      { step_slug: 'audit', status: 'completed', skip_reason: null, tasks: 1 },
      {
        step_slug: 'store',
        status: 'skipped',
        skip_reason: 'skip-cascade: step "enrich" was skipped',
        tasks: 0,
      },
      {
        step_slug: 'notify',
        status: 'skipped',
        skip_reason: 'skip-cascade: step "enrich" was skipped',
        tasks: 0,
      },
    ]);
    const [{ n }] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pgmq.q_condexhaustcascade`;
    assert.equal(n, 0, 'every message was archived');
  } finally {
    await worker.stop();
  }
});

Deno.test('whenExhausted skip also applies when stall recovery finds the last attempt dead', async () => {
  const flow = new Flow({ slug: 'condStall', maxAttempts: 1 })
    .step({ slug: 'hang', whenExhausted: 'skip' }, () => 1)
    .step({ slug: 'after', dependsOn: ['hang'] }, (input) => input.hang ?? 'skipped');
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(flow).shape as never)
  }::jsonb)`;
  const run = await client.startFlow('condStall', {});
  // A worker row that claims the task and then goes silent (stopped).
  const workerId = crypto.randomUUID();
  await db.sql`select switchyard.register_worker(${workerId}::uuid, 'condstall', 'condstall-worker',
    array['condStall/hang', 'condStall/after'])`;
  const [msg] = await db.sql`select msg_id from pgmq.read('condstall', 30, 1)`;
  await db
    .sql`select * from switchyard.start_tasks('condstall', array[${msg.msg_id}]::bigint[], ${workerId}::uuid)`;
  await db.sql`select switchyard.worker_stopped(${workerId}::uuid, 'gone')`;
  const [{ n }] = await db.sql<
    { n: number }[]
  >`select switchyard.recover_stalled('condstall') as n`;
  assert.equal(n, 1);
  const [hang] = await steps(run);
  assert.equal(hang.status, 'skipped');
  assert.match(
    String(hang.skip_reason),
    /^whenExhausted skip: failed after 1 attempt\(s\): stalled on attempt 1/,
  );
  const worker = await startWorker(flow, base);
  try {
    assert.deepEqual((await client.waitForRun(run)).output, { after: 'skipped' });
  } finally {
    await worker.stop();
  }
});

Deno.test('conditions are part of the shape: the same slug with another condition is refused', async () => {
  const v1 = new Flow<{ plan: string }>({ slug: 'condShape' })
    .step({ slug: 'a', if: { plan: 'pro' } }, () => 1);
  const changed = new Flow<{ plan: string }>({ slug: 'condShape' })
    .step({ slug: 'a', if: { plan: 'free' }, whenUnmet: 'fail', whenExhausted: 'skip' }, () => 1);
  const routed = routeFlow(v1, { queues: { a: 'cond_shape' } });
  await db.sql`select switchyard.ensure_flow(${
    db.sql.json(toPlacement(defineDeployedFlow(routed, { alias: 'condShapeAlias' })).shape as never)
  }::jsonb)`;
  const [row] = await db.sql`select cond_if, cond_if_not, when_unmet, when_exhausted
    from switchyard.steps where flow_slug = 'condShape'`;
  assert.deepEqual({ ...row }, {
    cond_if: { plan: 'pro' },
    cond_if_not: null,
    when_unmet: 'skip',
    when_exhausted: 'fail',
  });
  const refused = await startWorker([routeFlow(changed, { queues: { a: 'cond_shape' } })], {
    ...base,
    queueName: 'cond_shape',
  }).then(() => assert.fail('a changed condition was accepted'), (e) => e);
  assert.ok(refused instanceof OperationError);
  assert.equal(refused.code, 'SY004');
  assert.deepEqual(refused.detail?.differences, [
    'step "a" option if {"plan": "pro"} -> {"plan": "free"}',
    'step "a" option whenUnmet "skip" -> "fail"',
    'step "a" option whenExhausted "fail" -> "skip"',
  ]);
  // SQL checks the modes too, with a code and a detail.
  const shape = JSON.parse(JSON.stringify(
    toPlacement(new Flow({ slug: 'condBad' }).step({ slug: 'a' }, () => 1)).shape,
  ));
  shape.steps[0].options.whenUnmet = 'maybe';
  const bad = await db.sql`select switchyard.ensure_flow(${db.sql.json(shape as never)}::jsonb)`
    .then(
      () => assert.fail('accepted whenUnmet maybe'),
      (e) => e,
    );
  assert.equal(bad.code, '22023');
  assert.deepEqual(JSON.parse(bad.detail), {
    rule: 'option_choice',
    argument: 'whenUnmet',
    value: '"maybe"',
    choices: ['skip', 'skip-cascade', 'fail'],
    context: 'step "a" option',
  });
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await client.close();
  await db.close();
});
