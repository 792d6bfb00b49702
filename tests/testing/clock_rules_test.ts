/**
 * Every time rule of the SQL core under a test engine's virtual clock gives the outcome the real
 * clock gives (docs/design/clock.md). One timeline of runs, each built for one rule (a wait's
 * timeout that skips and one that fails, a sleep, a sleep until a time, a delayed start, a
 * deadline, a retry's backoff, a rate limit's refill, a debounce, a dedupe's TTL), is looked at
 * after the same steps of time four ways: the real clock on PostgreSQL (the sample, 3 s a unit),
 * the virtual clock on PostgreSQL and on PGlite with the same unit, and the virtual clock on
 * PGlite with six hours a unit. All four tell the same story.
 *
 * The rules a real clock cannot show in seconds (schedules and their catch-up, priority ageing,
 * stall recovery, the lost-message grace's neighbour: a claim's visibility) are checked here on
 * the virtual clock against the outcome their own real-clock suites establish.
 */
import assert from 'node:assert/strict';
import { defineDeployedFlow, Flow, signalPayload } from '../../lib/mod.ts';
import { createSchedule, listSchedules } from '../../lib/ops.ts';
import { createTestEngine, type TestEngine } from '../../lib/testing.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { registry as sharedRegistry } from './_flows.ts';

/** The flows of the timeline, each rule's times in units of `u` seconds. */
function timedRegistry(u: number) {
  const waitSkipV1 = new Flow<{ n: number }>({ slug: 'waitSkipV1' })
    .wait({ slug: 'w', payload: signalPayload<{ n: number }>(), timeout: 2 * u, onTimeout: 'skip' })
    .step({ slug: 'after', dependsOn: ['w'] }, (input) => input.w?.n ?? 0);
  const waitFailV1 = new Flow<{ n: number }>({ slug: 'waitFailV1' })
    .wait({ slug: 'w', payload: signalPayload<{ n: number }>(), timeout: 2 * u })
    .step({ slug: 'after', dependsOn: ['w'] }, (input) => input.w.n);
  const sleepV1 = new Flow<{ n: number }>({ slug: 'sleepV1' })
    .sleep({ slug: 's', seconds: 2 * u })
    .step({ slug: 'after', dependsOn: ['s'] }, () => 'woke');
  const untilV1 = new Flow<{ at: string }>({ slug: 'untilV1' })
    .sleep({ slug: 's', until: { key: 'at' } })
    .step({ slug: 'after', dependsOn: ['s'] }, () => 'woke');
  const plainV1 = new Flow<{ n: number }>({ slug: 'plainV1' })
    .step({ slug: 'work' }, (input) => input.n);
  const openV1 = new Flow<{ n: number }>({ slug: 'openV1' })
    .wait({ slug: 'w' })
    .step({ slug: 'after', dependsOn: ['w'] }, () => 'never');
  const retryV1 = new Flow<{ n: number }>({ slug: 'retryV1', maxAttempts: 3, baseDelay: u })
    .step({ slug: 'work' }, (input) => input.n);
  const ratedV1 = new Flow<{ n: number }>({ slug: 'ratedV1' })
    .step({ slug: 'work', rateLimit: { name: 'rated' } }, (input) => input.n);
  return [
    defineDeployedFlow(waitSkipV1, { alias: 'waitSkip' }),
    defineDeployedFlow(waitFailV1, { alias: 'waitFail' }),
    defineDeployedFlow(sleepV1, { alias: 'sleep' }),
    defineDeployedFlow(untilV1, { alias: 'until' }),
    defineDeployedFlow(plainV1, { alias: 'plain' }),
    defineDeployedFlow(openV1, { alias: 'open' }),
    defineDeployedFlow(retryV1, { alias: 'retry' }),
    defineDeployedFlow(ratedV1, { alias: 'rated' }),
  ] as const;
}

type Timed = ReturnType<typeof timedRegistry>;

/**
 * The timeline: starts at 0, then looks at every run after 1, 2.5 and 3.5 units (acting at 1: a
 * second debounced start, a second dedupe start; at 3.5: a third). Returns what it saw.
 */
async function timeline(engine: TestEngine<Timed>, u: number): Promise<string[]> {
  const ms = u * 1000;
  const t0 = engine.now.getTime();
  await engine.sql`select switchyard.set_rate_limit('rated', 1, ${2 * u}::int, 1)`;
  engine.mock('retry', 'work', () => {
    throw new Error('not yet');
  }, { times: 2 });
  const runs: Record<string, string> = {
    waitSkip: (await engine.start('waitSkip', { n: 1 })).runId,
    waitFail: (await engine.start('waitFail', { n: 1 })).runId,
    sleep: (await engine.start('sleep', { n: 1 })).runId,
    until: (await engine.start('until', { at: new Date(t0 + 2 * ms).toISOString() })).runId,
    startAt: (await engine.start('plain', { n: 1 }, { startAt: new Date(t0 + 2 * ms) })).runId,
    deadline: (await engine.start('open', { n: 1 }, { deadlineAt: new Date(t0 + 2 * ms) }))
      .runId,
    retry: (await engine.start('retry', { n: 1 })).runId,
    rated1: (await engine.start('rated', { n: 1 })).runId,
    rated2: (await engine.start('rated', { n: 2 })).runId,
    debounce:
      (await engine.start('plain', { n: 1 }, { key: 'deb', mode: 'debounce', delay: 2 * u }))
        .runId,
    dedupe: (await engine.start('plain', { n: 1 }, { key: 'ded', mode: 'dedupe', ttl: 2 * u }))
      .runId,
  };
  const seen: string[] = [];
  const look = async (label: string) => {
    for (const [name, runId] of Object.entries(runs)) {
      const s = await engine.status(runId);
      const steps = s.steps.map((x) => `${x.stepSlug}:${x.status}:${x.attempts}`).join(' ');
      seen.push(`${label} ${name}: ${s.status} ${steps} ${JSON.stringify(s.output)}`);
    }
    seen.push(`${label} retry calls: ${engine.calls('retry', 'work').length}`);
  };
  await engine.runUntilIdle();
  await look('0u');
  await engine.advance(ms);
  const again = await engine.start('plain', { n: 2 }, {
    key: 'deb',
    mode: 'debounce',
    delay: 2 * u,
  });
  seen.push(`1u debounce again: ${again.runId === runs.debounce ? 'same run' : 'a new run'}`);
  const dedupe = await engine.start('plain', { n: 2 }, { key: 'ded', mode: 'dedupe', ttl: 2 * u });
  seen.push(`1u dedupe again: ${dedupe.runId === runs.dedupe ? 'same run' : 'a new run'}`);
  await engine.runUntilIdle();
  await look('1u');
  await engine.advance(1.5 * ms);
  await look('2.5u');
  await engine.advance(ms);
  const late = await engine.start('plain', { n: 3 }, { key: 'ded', mode: 'dedupe', ttl: 2 * u });
  seen.push(`3.5u dedupe again: ${late.runId === runs.dedupe ? 'same run' : 'a new run'}`);
  await look('3.5u');
  return seen;
}

async function onPglite(u: number): Promise<string[]> {
  const engine = await createTestEngine({
    registry: timedRegistry(u),
    now: '2030-03-01T12:00:00Z',
  });
  try {
    return await timeline(engine, u);
  } finally {
    await engine.close();
  }
}

async function onPostgres(u: number, clock: 'virtual' | 'real'): Promise<string[]> {
  const db = await createTestDatabase();
  try {
    const engine = await createTestEngine({
      registry: timedRegistry(u),
      databaseUrl: db.url,
      clock,
    });
    try {
      return await timeline(engine, u);
    } finally {
      await engine.close();
    }
  } finally {
    await db.close();
  }
}

Deno.test('every time rule of the timeline: the virtual clock tells what the real clock tells', async () => {
  const u = 3;
  const started = performance.now();
  const real = await onPostgres(u, 'real');
  const realMs = performance.now() - started;
  // The story the rules tell (spelled out once, so a wrong story fails too).
  const at = (label: string, name: string) => real.find((l) => l.startsWith(`${label} ${name}:`));
  assert.match(at('0u', 'waitSkip')!, /started w:started:0 after:created/);
  assert.match(at('2.5u', 'waitSkip')!, /completed w:skipped:0 after:completed:1 \{"after":0\}/);
  assert.match(at('1u', 'waitFail')!, /: started /);
  assert.match(at('2.5u', 'waitFail')!, /: failed /);
  assert.match(at('1u', 'sleep')!, /: started s:started/);
  assert.match(at('2.5u', 'sleep')!, /completed .*"woke"/);
  assert.match(at('1u', 'until')!, /: started s:started/);
  assert.match(at('2.5u', 'until')!, /completed .*"woke"/);
  assert.match(at('1u', 'startAt')!, /: started work:created:0/);
  assert.match(at('2.5u', 'startAt')!, /completed work:completed:1/);
  assert.match(at('1u', 'deadline')!, /: started /);
  assert.match(at('2.5u', 'deadline')!, /: cancelled /);
  assert.ok(real.includes('0u retry calls: 1'), real.join('\n'));
  assert.ok(real.includes('1u retry calls: 1') || real.includes('1u retry calls: 2'));
  assert.ok(real.includes('2.5u retry calls: 2'), real.join('\n'));
  assert.match(at('3.5u', 'retry')!, /completed work:completed:3/);
  assert.match(at('1u', 'rated2')!, /: started work:started:0/);
  assert.match(at('2.5u', 'rated2')!, /completed work:completed:1/);
  assert.ok(real.includes('1u debounce again: same run'));
  assert.match(at('2.5u', 'debounce')!, /: started work:created:0/, 'the second start pushed it');
  assert.match(at('3.5u', 'debounce')!, /completed work:completed:1 \{"work":2\}/);
  assert.ok(real.includes('1u dedupe again: same run'));
  assert.ok(real.includes('3.5u dedupe again: a new run'), 'after its TTL');

  const virtualPg = await onPostgres(u, 'virtual');
  const virtualLite = await onPglite(u);
  const longUnits = await onPglite(21600); // 6 h a unit: a rate limit's period is at most a day
  // At 1u the retry's backoff (1u) ends exactly: the real clock may or may not have run it yet.
  const settled = (lines: string[]) =>
    lines.filter((l) => !/^1u retry/.test(l)).map((l) => l.replace(/"n":\d+/, ''));
  assert.deepEqual(settled(virtualPg), settled(real));
  assert.deepEqual(settled(virtualLite), settled(real));
  assert.deepEqual(settled(longUnits), settled(real));
  console.log(`the timeline: real clock ${Math.round(realMs)} ms, virtual ones in the rest`);
});

Deno.test('schedules tick at their times on the way, catch-up fires what a stopped scheduler missed', async () => {
  const engine = await createTestEngine({ registry: sharedRegistry, now: '2030-01-01T02:30:00Z' });
  try {
    await createSchedule(engine.sql, 'nightly', { alias: 'report', cron: '0 3 * * *' });
    await engine.advance('29m');
    assert.equal((await listSchedules(engine.sql))[0].lastTick, null, 'not 03:00 yet');
    // Three nights pass with the scheduler running: three runs, each at its 03:00.
    const report = await engine.advance('3d');
    assert.equal(report.now.toISOString(), '2030-01-04T02:59:00.000Z');
    const runs = await engine.sql<{ started_at: Date; status: string }[]>`
      select started_at, status from switchyard.runs where flow_slug = 'reportV1' order by 1`;
    assert.deepEqual(runs.map((r) => [r.started_at.toISOString(), r.status]), [
      ['2030-01-01T03:00:00.000Z', 'completed'],
      ['2030-01-02T03:00:00.000Z', 'completed'],
      ['2030-01-03T03:00:00.000Z', 'completed'],
    ]);
    assert.equal((await listSchedules(engine.sql))[0].missedTicks, 0);
    // The scheduler down for three nights (the clock moved without running anything): its
    // catch-up ('latest') fires the newest tick once, the others count as missed.
    await engine.advance('3d', { run: false });
    await engine.tickSchedules();
    await engine.runUntilIdle();
    const after = await engine.sql<{ n: number }[]>`
      select count(*)::int as n from switchyard.runs where flow_slug = 'reportV1'`;
    assert.equal(after[0].n, 4);
    assert.equal((await listSchedules(engine.sql))[0].missedTicks, 2);
  } finally {
    await engine.close();
  }
});

Deno.test("priority ageing: a run's priority overtakes work queued less than its levels' worth before it, never older work", async () => {
  const engine = await createTestEngine({ registry: sharedRegistry, now: '2030-01-01T00:00:00Z' });
  try {
    // priority_ageing_seconds is 60: priority 4 is worth four minutes of waiting.
    const order = async (gap: string) => {
      const low = await engine.start('prio', { n: 0 });
      await engine.advance(gap, { run: false });
      const high = await engine.start('prio', { n: 4 }, { priority: 4 });
      const before = engine.calls('prio', 'work').length;
      await engine.runUntilIdle();
      const ran = engine.calls('prio', 'work').slice(before).map((c) => c.runId);
      return ran[0] === high.runId && ran[1] === low.runId ? 'high first' : 'low first';
    };
    assert.equal(await order('3m'), 'high first', 'queued 3 minutes before: overtaken');
    assert.equal(await order('5m'), 'low first', 'queued 5 minutes before: not overtaken');
  } finally {
    await engine.close();
  }
});

Deno.test("stall recovery: a dead worker's task is queued again after its heartbeat window, a live one's after its timeout", async () => {
  const engine = await createTestEngine({ registry: sharedRegistry, now: '2030-01-01T00:00:00Z' });
  try {
    // Another worker claims the task and then dies (no heartbeat, no completion).
    const claimAsOther = async (runId: string) => {
      const other = crypto.randomUUID();
      await engine.sql`select switchyard.register_worker(${other}::uuid, 'slowv1',
        'other-worker', '{slowV1/work}'::text[], 15)`;
      const [m] = await engine.sql<{ msg_id: string }[]>`
        select msg_id::text from pgmq.read('slowv1', 30, 1)`;
      const [c] = await engine.sql<{ disposition: string; run_id: string }[]>`
        select disposition, run_id::text from switchyard.start_tasks('slowv1',
          array[${m.msg_id}::bigint], ${other}::uuid, null)`;
      assert.deepEqual([c.disposition, c.run_id], ['claimed', runId]);
      return other;
    };
    const dead = await engine.start('slow', { n: 1 });
    await claimAsOther(dead.runId);
    await engine.advance('15s');
    assert.equal((await engine.steps(dead))[0].status, 'started', 'within the heartbeat window');
    await engine.advance('1s');
    assert.deepEqual(await engine.output(dead), { work: 2 });
    assert.deepEqual(engine.calls('slow', 'work').map((c) => [c.attempt, c.at.toISOString()]), [
      [2, '2030-01-01T00:00:16.000Z'],
    ]);

    // A worker that keeps beating but never finishes: recovered after timeout (20 s) + margin.
    const hung = await engine.start('slow', { n: 5 });
    const other = await claimAsOther(hung.runId);
    const started = engine.now.getTime();
    for (let s = 0; s < 24; s += 6) {
      await engine.sql`select switchyard.heartbeat(${other}::uuid)`;
      await engine.advance('6s');
    }
    assert.equal((await engine.steps(hung))[0].status, 'started', 'within timeout and margin');
    await engine.sql`select switchyard.heartbeat(${other}::uuid)`;
    await engine.advance('2s');
    assert.deepEqual(await engine.output(hung), { work: 6 });
    const recovered = engine.calls('slow', 'work').at(-1)!;
    assert.equal(recovered.attempt, 2);
    assert.equal(recovered.at.getTime() - started, 26_000, 'the first second after 20 s + 5 s');
  } finally {
    await engine.close();
  }
});
