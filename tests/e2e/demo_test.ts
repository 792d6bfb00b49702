/**
 * `deno task demo` on the embedded default: with `DATABASE_URL` unset it must start PGlite,
 * run both phases of the alias switch through served queue functions, print the final tables
 * and exit 0 by itself, in about two minutes at most.
 */
import assert from 'node:assert/strict';
import { KIT_ROOT } from '../../cli/_project.ts';
import { deno } from '../_helpers/process.ts';

const LIMIT_MS = 180_000;

Deno.test('deno task demo on embedded PGlite finishes by itself with every run completed', async () => {
  const started = performance.now();
  // Past the limit the demo and every process it started are killed, and the test fails.
  const { code, stdout, stderr } = await deno(['task', '-q', 'demo'], {
    cwd: KIT_ROOT,
    env: { DATABASE_URL: '', NO_COLOR: '1' },
    timeoutMs: LIMIT_MS,
  });
  const seconds = (performance.now() - started) / 1000;
  assert.equal(code, 0, `demo failed after ${seconds.toFixed(0)} s:\n${stdout}\n${stderr}`);

  assert.match(stdout, /database: PostgreSQL [\d.]+ \(PGlite [\d.]+\) on 127\.0\.0\.1:\d+/);
  assert.match(stdout, /functions\.invoke\('classify-threads-worker'\) → started/);
  // Never silent while the workers start up: it says what it waits for.
  assert.match(stdout, /starting \d+ communityThreads and \d+ supportTickets runs/);
  assert.match(stdout, /waiting for the first two communityThreadsV1 runs to complete/);
  assert.match(stdout, /phase 2: deploying registry/);
  assert.match(stdout, /alias communityThreads → communityThreadsV2/);
  // One v2 run's live events, in order, then its typed output.
  const live = [...stdout.matchAll(/run ([0-9a-f]{8}): (\w+ \w+)$/gm)].map((m) => m[2]);
  assert.deepEqual(live, [
    'run started',
    'classify started',
    'classify completed',
    'score started',
    'score completed',
    'deliverSlack started',
    'deliverSlack completed',
    'run completed',
  ]);
  assert.match(stdout, /run [0-9a-f]{8}: output deliverSlack\.posted = false/);
  // The final tables: runs per concrete version, drain states, the alias history.
  assert.match(stdout, /communityThreadsV1 +communityThreads +8 +0 +0/);
  assert.match(stdout, /communityThreadsV2 +communityThreads +8 +0 +0/);
  assert.match(stdout, /supportTicketsV1 +supportTickets +6 +0 +0/);
  for (const queue of ['classify_threads', 'deliver_slack_alerts']) {
    assert.match(stdout, new RegExp(`${queue} +communityThreadsV1 +communityThreads +drained`));
    assert.match(stdout, new RegExp(`${queue} +communityThreadsV2 +communityThreads +active`));
    assert.match(stdout, new RegExp(`${queue} +shared +0 +\\d+`));
  }
  assert.match(stdout, /communityThreads +communityThreadsV2 +communityThreadsV1 +worker/);
  // supportTicketsV1: sev3 tickets skip the escalation and (skip-cascade) its map; sev1
  // tickets fan out to three channels, sev2 to one.
  assert.match(stdout, /ticket-0 +sev1 +completed +completed +3/);
  assert.match(stdout, /ticket-1 +sev3 +skipped +skipped +0/);
  assert.match(stdout, /ticket-2 +sev2 +completed +completed +1/);
  assert.match(
    stdout,
    /done: all 22 runs completed; communityThreadsV1 drained, communityThreadsV2 active/,
  );
  const project = /project copy: (\S+)/.exec(stdout)?.[1];
  assert.ok(project, 'the demo names its project copy');
  await assert.rejects(Deno.stat(project), Deno.errors.NotFound, 'the project copy is removed');
  console.log(`demo finished in ${seconds.toFixed(1)} s`);
});
