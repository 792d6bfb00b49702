/**
 * The tests' subprocess helper (tests/_helpers/process.ts) ends whole process trees: a command
 * past its time limit and a stopped long-lived process take the processes they started with them
 * (`deno task` starts a second Deno, serve its functions, chromium its renderers). Finding them
 * reads /proc, which Deno allows only with every permission: not in the unit tier.
 */
import assert from 'node:assert/strict';
import { deno, descendants, spawnDeno } from '../_helpers/process.ts';

/** A script that starts a second Deno sleeping for a minute, prints `child <pid>`, and waits. */
const PARENT = `
const child = new Deno.Command(Deno.execPath(), {
  args: ['eval', 'await new Promise((r) => setTimeout(r, 60_000))'],
  stdout: 'null', stderr: 'null',
}).spawn();
console.log('child ' + child.pid);
await child.status;`;

/** Whether `pid` still runs (a zombie waiting for its reaper counts as ended). */
async function running(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Waits up to 5 s for `pid` to end. */
async function ended(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (!(await running(pid))) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

Deno.test('a command past its time limit is killed with its children, and the run fails', async () => {
  const started = Date.now();
  let message = '';
  await assert.rejects(deno(['eval', PARENT], { timeoutMs: 3_000 }), (e) => {
    message = (e as Error).message;
    return true;
  });
  assert.ok(Date.now() - started < 20_000, 'it did not wait for the sleeping child');
  assert.match(message, /^deno eval .* did not end within 3000 ms: killed it and its children/s);
  const pid = Number(message.match(/child (\d+)/)?.[1]);
  assert.ok(pid > 0, `the output so far is shown: ${message}`);
  assert.ok(await ended(pid), `the child ${pid} was killed too`);
});

Deno.test('Spawned: waits for a printed line, and stop() ends the process and its children', async () => {
  const parent = spawnDeno(['eval', PARENT]);
  const [, pid] = await parent.waitFor(/child (\d+)/);
  assert.deepEqual(await descendants(parent.pid), [Number(pid)]);
  const out = await parent.stop('SIGTERM');
  assert.equal(out.signal, 'SIGTERM');
  assert.match(out.stdout, /^child \d+\n$/);
  assert.ok(parent.exited);
  assert.ok(await ended(Number(pid)), `the child ${pid} was killed too`);
});
