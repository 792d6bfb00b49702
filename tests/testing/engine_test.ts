/**
 * The test engine (`switchyard/testing`, docs/design/clock.md#the-test-engine) on its embedded
 * database: a
 * flow end to end under the virtual clock, mocks, signals, cancel and retry, determinism, the
 * story a failed expectation tells, and the refusals of bad input. The first test of the file
 * builds the SQL core's snapshot; the others start from it.
 */
import assert from 'node:assert/strict';
import { NonRetriable, RetryAfter } from '../../lib/mod.ts';
import { RunStateError, SwitchyardError } from '../../lib/errors.ts';
import { createTestEngine } from '../../lib/testing.ts';
import { registry } from './_flows.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { deno } from '../_helpers/process.ts';

const T0 = '2030-01-01T09:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const timings: string[] = [];

Deno.test('a three-step flow with a week-long wait and a retry runs end to end in well under a second', async () => {
  let started = performance.now();
  const engine = await createTestEngine({ registry, now: T0 });
  timings.push(`engine start (first of the file) ${Math.round(performance.now() - started)} ms`);
  try {
    started = performance.now();
    const charge = engine.mock('order', 'charge', () => {
      throw new Error('card declined');
    }, { times: 1 });
    const run = await engine.start('order', { order: 'o-1', cents: 500 });
    assert.equal(run.runId, '00000000-0000-4000-8000-000000000001');
    await engine.runUntilIdle();
    const state = async () =>
      Object.fromEntries((await engine.steps(run)).map((s) => [s.stepSlug, s.status]));
    assert.deepEqual(await state(), {
      reserve: 'completed',
      approve: 'started',
      charge: 'created',
    });

    // A day short of the approval window: still waiting.
    await engine.advance('6d 23h');
    assert.deepEqual(await state(), {
      reserve: 'completed',
      approve: 'started',
      charge: 'created',
    });
    await engine.signal(run, 'approve', { by: 'ana' });
    await engine.runUntilIdle();
    // The charge's first attempt failed: retried after the base delay, 30 s.
    const chargeStep = (await engine.steps(run)).find((s) => s.stepSlug === 'charge')!;
    assert.equal(chargeStep.status, 'started');
    assert.equal(chargeStep.attempts, 1);
    assert.match(chargeStep.error ?? '', /card declined/);
    await engine.advance('29s');
    assert.equal(engine.calls('order', 'charge').length, 1);
    await engine.advance('1s');
    assert.deepEqual(await engine.output(run), { charge: { receipt: 'hold-o-1 by ana' } });
    timings.push(`the flow, its week and its retry ${Math.round(performance.now() - started)} ms`);

    assert.equal(charge.calls.length, 1);
    const calls = engine.calls('order', 'charge');
    assert.deepEqual(calls.map((c) => [c.attempt, c.mocked, c.at.toISOString()]), [
      [1, true, at(6 * 86400_000 + 23 * 3600_000)],
      [2, false, at(6 * 86400_000 + 23 * 3600_000 + 30_000)],
    ]);
    assert.deepEqual(calls[0].input, { reserve: { hold: 'hold-o-1' }, approve: { by: 'ana' } });
    assert.equal(engine.now.toISOString(), at(6 * 86400_000 + 23 * 3600_000 + 30_000));
    const events = await engine.events(run);
    assert.deepEqual(events.map((e) => `${e.stepSlug ?? 'run'} ${e.event}`), [
      'run started',
      'reserve started',
      'reserve completed',
      'approve started',
      'approve waiting',
      'approve signalled',
      'approve completed',
      'charge started',
      'charge completed',
      'run completed',
    ]);
    // Every recorded time is the engine's: the run completed 6 d 23 h 30 s after it started.
    const status = await engine.status(run);
    assert.equal(new Date(status.startedAt).toISOString(), T0);
    assert.equal(
      new Date(status.completedAt!).toISOString(),
      at(6 * 86400_000 + 23 * 3600_000 + 30_000),
    );
  } finally {
    await engine.close();
  }
});

Deno.test("later engines start on the previous one's database, reset: the same flow again", async () => {
  let started = performance.now();
  const engine = await createTestEngine({ registry, now: T0 });
  timings.push(`engine start (after the first) ${Math.round(performance.now() - started)} ms`);
  try {
    started = performance.now();
    engine.mock('order', 'charge', () => {
      throw new Error('card declined');
    }, { times: 1 });
    const run = await engine.start('order', { order: 'o-2', cents: 1 });
    await engine.runUntilIdle();
    await engine.advance('6d');
    await engine.signal(run, 'approve', { by: 'bo' });
    await engine.runUntilIdle();
    await engine.advance('30s');
    assert.deepEqual(await engine.output(run), { charge: { receipt: 'hold-o-2 by bo' } });
    const ms = performance.now() - started;
    // Printed, not asserted: the engine's speed is bench figure 17's, measured side by side.
    timings.push(`the flow again ${Math.round(ms)} ms`);
  } finally {
    await engine.close();
  }
});

Deno.test('a run that did not complete is told as a story: run, step, attempts, error, events', async () => {
  const engine = await createTestEngine({ registry, now: T0 });
  try {
    engine.mock('order', 'charge', () => {
      throw new Error('card declined');
    });
    const run = await engine.start('order', { order: 'o-3', cents: 9 });
    await engine.runUntilIdle();
    await engine.signal(run, 'approve', { by: 'cy' });
    await engine.advance('90s'); // attempts 1 (now), 2 (30 s later), 3 (60 s after that)
    await assert.rejects(engine.output(run), (e: unknown) => {
      assert.ok(e instanceof RunStateError);
      assert.equal(e.runId, run.runId);
      assert.equal(e.status, 'failed');
      const text = e.message;
      assert.match(
        text,
        /^run 00000000-0000-4000-8000-000000000001 of orderV1 \(started as order\) is failed, not completed/,
      );
      assert.match(text, /step "charge": failed, 3 attempt\(s\), error: Error: card declined/);
      assert.match(text, /step "reserve": completed, 1 attempt\(s\)/);
      assert.match(text, /events: .*#\d+ charge failed · #\d+ run failed/);
      assert.match(text, /engine time: 2030-01-01T09:01:30\.000Z/);
      return true;
    });
    const failure = await engine.failure(run);
    assert.equal(failure.status, 'failed');
    assert.equal(failure.step, 'charge');
    assert.match(failure.error ?? '', /card declined/);

    // A run still waiting: its story says which step it waits on.
    const waiting = await engine.start('order', { order: 'o-4', cents: 9 });
    await engine.runUntilIdle();
    await assert.rejects(
      engine.output(waiting),
      /is started, not completed[^]*step "approve": started/,
    );
    await assert.rejects(engine.failure(waiting), /is started, not failed or cancelled/);
    await assert.rejects(
      engine.output('00000000-0000-4000-8000-0000000000ff'),
      /run 00000000-0000-4000-8000-0000000000ff does not exist in this test engine/,
    );
  } finally {
    await engine.close();
  }
});

Deno.test('mocks: the latest answers, times hands back, restore, RetryAfter and NonRetriable', async () => {
  const engine = await createTestEngine({ registry, now: T0 });
  try {
    const outer = engine.mock('flaky', 'work', (input) => input.n * 100);
    const once = engine.mock('flaky', 'work', () => {
      throw new RetryAfter(120, 'busy');
    }, { times: 1 });
    const run = await engine.start('flaky', { n: 2 });
    await engine.runUntilIdle();
    assert.equal(once.calls.length, 1);
    await engine.advance('119s');
    assert.equal(outer.calls.length, 0, 'RetryAfter(120) holds the retry for 120 s');
    await engine.advance('1s');
    assert.deepEqual(await engine.output(run), { work: 200 });
    assert.equal(outer.calls.length, 1);

    outer.restore();
    const own = await engine.start('flaky', { n: 3 });
    await engine.runUntilIdle();
    assert.deepEqual(await engine.output(own), { work: 6 }, 'its own handler again');

    engine.mock('flaky', 'work', () => {
      throw new NonRetriable('bad input');
    });
    const fatal = await engine.start('flaky', { n: 4 });
    await engine.runUntilIdle();
    const failure = await engine.failure(fatal);
    assert.equal(failure.step, 'work');
    assert.match(failure.error ?? '', /bad input/);
    assert.equal((await engine.steps(fatal))[0].attempts, 1, 'NonRetriable uses no more attempts');
    assert.deepEqual(
      engine.calls('flaky', 'work').map((c) => [c.runId.slice(-2), c.attempt, c.mocked]),
      [['01', 1, true], ['01', 2, true], ['02', 1, false], ['03', 1, true]],
    );
    assert.match(engine.log.join('\n'), /flakyV1\/work attempt 1 of run \S+ failed \(retrying\)/);

    // Mocks of what is not a step with a handler are refused, naming what is.
    const loose = engine as unknown as {
      mock(alias: string, step: string, handler: unknown, options?: unknown): unknown;
    };
    assert.throws(
      () => loose.mock('nope', 'work', () => 1),
      /mock\("nope", "work"\): no deployment of the registry has alias "nope" \(aliases: "order", /,
    );
    assert.throws(
      () => loose.mock('order', 'approve', () => 1),
      /no version of "order" \(orderV1\) has a step "approve" with a handler \(steps with handlers: "reserve", "charge"\)/,
    );
    assert.throws(
      () => loose.mock('order', 'charge', 'x'),
      /the handler is string: pass a function/,
    );
    assert.throws(
      () => loose.mock('order', 'charge', () => 1, { times: 0 }),
      /times 0 is invalid: use a whole number of at least 1/,
    );
  } finally {
    await engine.close();
  }
});

Deno.test('cancel, retry, a map step, and a wait timeout that fails the run', async () => {
  const engine = await createTestEngine({ registry, now: T0 });
  try {
    const waiting = await engine.start('order', { order: 'o-5', cents: 1 });
    await engine.runUntilIdle();
    assert.equal((await engine.cancel(waiting, 'customer left')).changed, true);
    assert.equal((await engine.failure(waiting)).error, 'cancelled: customer left');

    const squares = await engine.start('squares', [1, 2, 3]);
    const report = await engine.runUntilIdle();
    assert.equal(report.tasks, 4, 'three elements and the sum');
    assert.deepEqual(await engine.output(squares), { sum: 14 });
    assert.deepEqual(await engine.stepOutputs(squares), { square: [1, 4, 9], sum: 14 });

    const strict = await engine.start('strict', { doc: 'd' });
    await engine.advance('10m');
    assert.equal((await engine.failure(strict)).status, 'failed');
    assert.match((await engine.failure(strict)).error ?? '', /sign/);

    engine.mock('flaky', 'work', () => {
      throw new Error('down');
    }, { times: 3 });
    const flaky = await engine.start('flaky', { n: 5 });
    await engine.advance('30s'); // attempts at 0, 10 s, 30 s
    assert.equal((await engine.failure(flaky)).step, 'work');
    await engine.retry(flaky);
    await engine.runUntilIdle();
    assert.deepEqual(await engine.output(flaky), { work: 10 });
  } finally {
    await engine.close();
  }
});

Deno.test("an engine's database keeps nothing of the engine before it", async () => {
  const first = await createTestEngine({ registry, now: T0 });
  try {
    await first.sql`create table public.notes (id int)`;
    await first.sql`select switchyard.set_rate_limit('calls', 1, 60, 1)`;
    await first.sql`select set_config('application_name', 'first engine', false)`;
    await first.start('flaky', { n: 1 });
    await first.runUntilIdle();
  } finally {
    await first.close();
  }
  const next = await createTestEngine({ registry, now: T0 });
  try {
    const [row] = await next.sql<
      { runs: number; events: number; limits: number; notes: string | null; app: string }[]
    >`
      select (select count(*)::int from switchyard.runs) as runs,
             (select count(*)::int from switchyard.run_events) as events,
             (select count(*)::int from switchyard.rate_limits) as limits,
             to_regclass('public.notes')::text as notes,
             current_setting('application_name') as app`;
    const { app, ...rest } = row;
    assert.deepEqual(rest, { runs: 0, events: 0, limits: 0, notes: null });
    assert.notEqual(app, 'first engine', "the session's settings are reset too");
    const run = await next.start('flaky', { n: 2 });
    assert.equal(run.runId, '00000000-0000-4000-8000-000000000001');
    await next.runUntilIdle();
    assert.equal((await next.events(run))[0].eventId, 1, 'identities start again');
    const [m] = await next.sql<
      { id: string }[]
    >`select max(msg_id)::text as id from pgmq.a_flakyv1`;
    assert.equal(m.id, '1', "PGMQ's message ids start again");
  } finally {
    await next.close();
  }
});

/** One scenario, as a list of what happened when, for comparing two engines. */
async function scenario(): Promise<string[]> {
  const engine = await createTestEngine({ registry, now: T0 });
  try {
    engine.mock('flaky', 'work', () => {
      throw new Error('once');
    }, { times: 1 });
    const a = await engine.start('flaky', { n: 1 });
    const b = await engine.start('order', { order: 'o', cents: 1 });
    await engine.runUntilIdle();
    await engine.advance('1h');
    await engine.signal(b, 'approve', { by: 'x' });
    await engine.advance('1s');
    const lines = [];
    for (const run of [a, b]) {
      for (const e of await engine.events(run)) {
        lines.push(
          `${run.runId} #${e.eventId} ${e.stepSlug ?? 'run'} ${e.event} ${e.at.toISOString()}`,
        );
      }
    }
    return lines;
  } finally {
    await engine.close();
  }
}

Deno.test('deterministic: the same test twice gives the same run ids, events and times', async () => {
  const first = await scenario();
  const second = await scenario();
  assert.ok(first.length > 10);
  assert.deepEqual(second, first);
});

Deno.test('bad input is refused with the value and the rule; a closed engine refuses work', async () => {
  await assert.rejects(
    createTestEngine({ registry, now: 'next tuesday' }),
    /now "next tuesday" is invalid: pass a Date or an ISO 8601 time/,
  );
  await assert.rejects(
    createTestEngine({
      registry,
      databaseUrl: 'postgresql://postgres@db.abcd.supabase.co:5432/postgres',
    }),
    /databaseUrl names host "db\.abcd\.supabase\.co", which is not local: a test engine replaces the database's clock/,
  );
  await assert.rejects(
    createTestEngine({ registry, clock: 'real', now: T0 }),
    /now is for the virtual clock/,
  );
  await assert.rejects(
    createTestEngine({ registry: [] as const }),
    /the worker registry is empty/,
  );
  const engine = await createTestEngine({ registry, now: T0 });
  try {
    for (const bad of ['7 days', '-1s', '1m1h', '', 'd', -5, Number.NaN]) {
      await assert.rejects(
        engine.advance(bad),
        (e: unknown) =>
          e instanceof SwitchyardError &&
          /^duration .* is invalid: use milliseconds/.test(e.message),
        String(bad),
      );
    }
    await assert.rejects(engine.runUntilIdle({ maxRounds: 0 }), /maxRounds 0 is invalid/);
    assert.equal(engine.now.toISOString(), T0, 'a refused advance moved nothing');
  } finally {
    await engine.close();
  }
  await assert.rejects(engine.start('flaky', { n: 1 }), /start: the test engine is closed/);
  await engine.close(); // twice is fine
});

Deno.test('a deno run script ends by itself once its engine is closed', async () => {
  // The idle database a closed engine keeps for the next one closes unused after 250 ms
  // (docs/design/clock.md#the-test-engine): PGlite's own timer must not keep a script, or
  // `deno bench`, alive for ever. Twice: the first may build the snapshot cache, the second
  // starts from it (the path that once never ended).
  for (const which of ['first', 'second']) {
    const out = await deno(['run', '-A', 'tests/fixtures/engine_script.ts'], {
      cwd: KIT_ROOT,
      timeoutMs: 90_000,
    });
    assert.equal(out.code, 0, `the ${which} script:\n${out.stdout}\n${out.stderr}`);
    assert.match(out.stdout, /^output \{"twice":42\}\nclosed\n$/);
  }
});

Deno.test.afterAll(() => {
  // The run times the report quotes (docs/design/clock.md#the-test-engine).
  console.log(`test engine timings:\n  ${timings.join('\n  ')}`);
});
